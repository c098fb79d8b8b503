// "Your own model" benchmark in headless Chromium: from a reader's files to the temperature and
// conformal labs drawn on them, for logits of growing size. Prints a Markdown table; asserts
// nothing about speed. Run through scripts/bench, after the page's benchmark.
//
// For each file set: read (File -> bytes), parse (in a worker, OwnLogitsFiles: the parsers of
// `calibra report` and the checks) and build the lab (Page.load_own_logits: the split), the temperature lab's first frame (the
// fit, every metric, the charts on screen) once "Go to the temperature lab" brings it on
// screen, then the conformal lab's first frame once scrolled into view; and, apart, when the
// rivals' fits come back from the bootstrap worker (counted from the files' reading). The
// peer, in the same page: the same bytes decoded by plain JavaScript (a Float32Array over the
// .npy data; split and Number for text), which checks nothing and only reads the numbers.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";

import { launchBrowser, nextFrames, openSite, waitForInference } from "./helpers.mjs";

const ONLY = process.argv.includes("--case") ? process.argv[process.argv.indexOf("--case") + 1] : null;
const ALL_CASES = [
  { rows: 10_000, classes: 10, format: "npy" },
  { rows: 200_000, classes: 10, format: "npy" },
  { rows: 200_000, classes: 100, format: "npy" },
  { rows: 200_000, classes: 10, format: "csv" },
];
// `--case 100000x50.npy` runs that case alone.
const CASES = ONLY
  ? [{ rows: Number(ONLY.split("x")[0]), classes: Number(ONLY.split("x")[1].split(".")[0]), format: ONLY.split(".")[1] }]
  : ALL_CASES;

// Overconfident logits: the true class usually on top by a varying margin.
function synthetic(rows, classes) {
  let seed = 7;
  const random = () => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed / 2147483648;
  };
  const logits = new Float32Array(rows * classes);
  const labels = new Int32Array(rows);
  for (let i = 0; i < rows; i++) {
    const label = Math.floor(random() * classes);
    const favoured = random() < 0.2 ? Math.floor(random() * classes) : label;
    for (let k = 0; k < classes; k++) logits[i * classes + k] = random() * 2 - 1;
    logits[i * classes + favoured] += 2 + random() * 6;
    labels[i] = label;
  }
  return { logits, labels };
}

// A version 1.0 .npy file.
function npy(descr, shape, data) {
  const dictionary = `{'descr': '${descr}', 'fortran_order': False, 'shape': (${shape.join(", ")}${shape.length === 1 ? "," : ""}), }`;
  const header = `${dictionary}${" ".repeat((64 - ((11 + dictionary.length) % 64)) % 64)}\n`;
  const preamble = Buffer.alloc(10);
  Buffer.from([0x93, ...Buffer.from("NUMPY"), 1, 0]).copy(preamble);
  preamble.writeUInt16LE(header.length, 8);
  return Buffer.concat([preamble, Buffer.from(header, "latin1"), Buffer.from(data.buffer)]);
}

// The files of one case, as np.save or np.savetxt ("%.18e") writes them.
function writeCase(dir, { rows, classes, format }) {
  const { logits, labels } = synthetic(rows, classes);
  const stem = path.join(dir, `${rows}x${classes}`);
  if (format === "npy") {
    writeFileSync(`${stem}.npy`, npy("<f4", [rows, classes], logits));
    writeFileSync(`${stem}-labels.npy`, npy("<i4", [rows], labels));
    return { logits: `${stem}.npy`, labels: `${stem}-labels.npy` };
  }
  const lines = [];
  for (let i = 0; i < rows; i++) lines.push(Array.from(logits.subarray(i * classes, (i + 1) * classes), (v) => v.toExponential(18)).join(","));
  writeFileSync(`${stem}.csv`, `${lines.join("\n")}\n`);
  writeFileSync(`${stem}-labels.txt`, `${Array.from(labels).join("\n")}\n`);
  return { logits: `${stem}.csv`, labels: `${stem}-labels.txt` };
}

const ms = (value) => `${Math.round(value).toLocaleString("en")} ms`;

async function main() {
  const dir = mkdtempSync(path.join(os.tmpdir(), "calibra-own-logits-bench-"));
  const site = await openSite();
  const browser = await launchBrowser();
  const rows = [];
  try {
    const page = await browser.context.newPage();
    page.on("crash", () => console.error("own-logits bench: the page crashed"));
    page.on("console", (message) => { if (message.type() === "error") console.error(`own-logits bench: console: ${message.text()}`); });
    page.on("pageerror", (error) => console.error(`own-logits bench: page error: ${error.message}`));
    await page.goto(site.url);
    await waitForInference(page);
    for (const testCase of CASES) {
      console.error(`own-logits bench: ${testCase.rows} × ${testCase.classes} .${testCase.format}`);
      const files = writeCase(dir, testCase);
      await page.locator("#own-logits").scrollIntoViewIfNeeded();
      const before = await page.evaluate(() => window.calibra.timings.ownLogits?.parsed ?? null);
      await page.setInputFiles("#own-labels-file", [files.labels]);
      await page.setInputFiles("#own-logits-file", [files.logits]);
      await page.waitForFunction((previous) => (window.calibra.timings.ownLogits?.parsed ?? null) !== previous, before, { timeout: 600_000, polling: 50 });
      const status = await page.textContent("#own-logits-status");
      if (!status.startsWith("Showing")) throw new Error(`the page refused the ${testCase.rows}x${testCase.classes} case: ${status}`);
      const draws = await page.evaluate(() => window.calibra.timings.draws.length);
      // Counted before the temperature lab is shown: where that lab is short (many classes),
      // the conformal lab enters the screen and is drawn in the same frame.
      const conformalBefore = await page.evaluate(() => window.calibra.timings.conformalDraws.length);
      await page.locator("#own-logits-show").click();
      await page.waitForFunction((count) => window.calibra.timings.draws.length > count, draws, { timeout: 600_000, polling: 50 });
      const own = await page.evaluate(() => window.calibra.timings.ownLogits);
      const temperature = await page.evaluate(() => window.calibra.timings.draws.at(-1));
      await page.locator("#conformal-lab table").first().scrollIntoViewIfNeeded();
      await page.waitForFunction((count) => window.calibra.timings.conformalDraws.length > count, conformalBefore, { timeout: 600_000, polling: 50 });
      const conformal = await page.evaluate(() => window.calibra.timings.conformalDraws.at(-1));
      // The rivals, fitted by the bootstrap worker while the labs are drawn and read.
      await page.waitForFunction(() => window.calibra.timings.ownLogits.rivals !== null, null, { timeout: 600_000, polling: 50 });
      const rivals = await page.evaluate(() => window.calibra.timings.ownLogits.rivals - window.calibra.timings.ownLogits.started);
      // The peer: plain JavaScript reads the same numbers from the same File.
      const peer = await page.evaluate(async (format) => {
        const file = document.getElementById("own-logits-file").files[0];
        const started = performance.now();
        const buffer = await file.arrayBuffer();
        let sum = 0;
        if (format === "npy") {
          const bytes = new Uint8Array(buffer);
          const headerLength = bytes[8] | (bytes[9] << 8);
          const values = new Float32Array(buffer.slice(10 + headerLength));
          for (const value of values) sum += value;
        } else {
          for (const line of new TextDecoder().decode(buffer).split("\n")) for (const field of line.split(",")) if (field) sum += Number(field);
        }
        return { ms: performance.now() - started, sum };
      }, testCase.format);
      rows.push({
        ...testCase,
        read: own.read - own.started,
        parse: own.parsed - own.read,
        temperature,
        conformal,
        total: own.parsed - own.started + temperature + conformal,
        rivals,
        peer: peer.ms,
      });
      await nextFrames(page, 2);
    }
  } finally {
    await browser.close();
    await site.close();
    rmSync(dir, { recursive: true, force: true });
  }
  console.log("\n### Your own model: from the files to both labs drawn\n");
  console.log("| logits | read | parse, check, split | temperature lab's first frame | conformal lab's first frame | total | rivals in from the worker | plain JS reads the same numbers | parse / JS |");
  console.log("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
  for (const r of rows) {
    console.log(`| ${r.rows.toLocaleString("en")} × ${r.classes} .${r.format} | ${ms(r.read)} | ${ms(r.parse)} | ${ms(r.temperature)} | ${ms(r.conformal)} | ${ms(r.total)} | ${ms(r.rivals)} | ${ms(r.peer)} | ${(r.parse / r.peer).toFixed(2)}× |`);
  }
}

await main();
