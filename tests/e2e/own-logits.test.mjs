// "Your own model": a reader's logits and labels (K = 4), as np.save and np.savetxt write them,
// give in the temperature and conformal labs the numbers `calibra report` prints for the same
// files on the same split (1e-9); each bad file shows the command-line tool's one-line message
// and keeps the data shown; "Back to Fashion-MNIST" brings back the test images' numbers; the
// link never holds the files. UPDATE_SCREENSHOT=1 also copies the screenshot of the labs on the
// reader's logits to docs/own-logits.png.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { promisify } from "node:util";

import { buildCalibra, collectProblems, hashParams, launchBrowser, nextFrames, openSite, readMetrics, REPO_ROOT, waitForInference } from "./helpers.mjs";

const run = promisify(execFile);

const ROWS = 3000;
const K = 4;
const NAMES = ["cat", "dog", "bird", "fish"];
// The page's state: the split, the slider's T and the conformal settings `calibra report` gets.
const SPLIT = 3;
const T = 1.5;
const HASH = `split=${SPLIT}&t=${T}&score=lac&alpha=0.1`;
// The page and the CLI run the same f64 code on the same f32 logits.
const TOLERANCE = 1e-9;
const TEMPERATURE_METRICS = ["accuracy", "ece", "nll", "brier"];
// The estimators table, at the slider's T (`calibra report`'s keys).
const ESTIMATOR_METRICS = ["ece_debiased", "top_label_ece", "ks_error", "spiegelhalter_z", "spiegelhalter_p", "kuiper", "kuiper_p", "ks_statistic", "ks_p"];
const CONFORMAL_METRICS = ["qhat", "coverage", "average_set_size", "singleton_rate", "empty_rate", "covgap"];

let site;
let browser;
let page;
let problems;
let scratch;
let testSetMetrics;
const requests = [];

// A deterministic overconfident classifier: the true class usually gets the largest logit,
// by a margin that varies, and about one row in five favours another class.
function syntheticData() {
  let seed = 12345;
  const random = () => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed / 2147483648;
  };
  const logits = [];
  const labels = [];
  for (let i = 0; i < ROWS; i++) {
    const label = Math.floor(random() * K);
    const favoured = random() < 0.2 ? Math.floor(random() * K) : label;
    const row = Array.from({ length: K }, () => random() * 2 - 1);
    row[favoured] += 2 + random() * 6;
    logits.push(row);
    labels.push(label);
  }
  return { logits, labels };
}

// A version 1.0 .npy file of `descr` values with `shape`.
function npy(descr, shape, data) {
  const dictionary = `{'descr': '${descr}', 'fortran_order': False, 'shape': (${shape.join(", ")}${shape.length === 1 ? "," : ""}), }`;
  const unpadded = 10 + dictionary.length + 1;
  const header = `${dictionary}${" ".repeat((64 - (unpadded % 64)) % 64)}\n`;
  const preamble = Buffer.alloc(10);
  Buffer.from([0x93, ...Buffer.from("NUMPY"), 1, 0]).copy(preamble);
  preamble.writeUInt16LE(header.length, 8);
  return Buffer.concat([preamble, Buffer.from(header, "latin1"), Buffer.from(data.buffer)]);
}

// What np.savetxt writes by default: "%.18e".
const savetxt = (value) => value.toExponential(18).replace(/e([+-])(\d)$/, "e$10$2");

// The reader's files in `scratch`: .npy (float64 logits, int64 labels) and text (a header row,
// labels as floats, class names).
function writeFiles() {
  const { logits, labels } = syntheticData();
  const files = {
    npyLogits: path.join(scratch, "logits.npy"),
    npyLabels: path.join(scratch, "labels.npy"),
    csvLogits: path.join(scratch, "logits.csv"),
    txtLabels: path.join(scratch, "labels.txt"),
    names: path.join(scratch, "names.txt"),
  };
  writeFileSync(files.npyLogits, npy("<f8", [ROWS, K], Float64Array.from(logits.flat())));
  writeFileSync(files.npyLabels, npy("<i8", [ROWS], BigInt64Array.from(labels.map(BigInt))));
  writeFileSync(files.csvLogits, `# ${NAMES.join(",")}\n${logits.map((row) => row.map(savetxt).join(",")).join("\n")}\n`);
  writeFileSync(files.txtLabels, `${labels.map(savetxt).join("\n")}\n`);
  writeFileSync(files.names, `${NAMES.join("\n")}\n`);
  return files;
}

let files;

before(async () => {
  site = await openSite();
  browser = await launchBrowser();
  problems = collectProblems(browser.context);
  scratch = mkdtempSync(path.join(os.tmpdir(), "calibra-e2e-own-logits-"));
  files = writeFiles();
  page = await browser.context.newPage();
  await page.goto(`${site.url}#${HASH}`);
  await waitForInference(page);
  testSetMetrics = await labMetrics();
  browser.context.on("request", (request) => requests.push({ method: request.method(), url: request.url() }));
});

after(async () => {
  await browser?.close();
  await site?.close();
  rmSync(scratch, { recursive: true, force: true });
});

// Both labs' readouts, read once each lab has been scrolled into view and redrawn (only the
// labs on screen are redrawn; a lab scrolled away keeps what it drew).
async function labMetrics() {
  for (const lab of ["#temperature-lab table", "#conformal-lab table"]) {
    await page.locator(lab).first().scrollIntoViewIfNeeded();
    await nextFrames(page, 3);
  }
  return readMetrics(page);
}

// Chooses the files (by their paths; `names` optional) in the last section, goes to the
// temperature lab by its button and waits for the lab drawn on them.
async function choose(logits, labels, names) {
  await page.locator("#own-logits").scrollIntoViewIfNeeded();
  await page.setInputFiles("#own-names-file", names ? [names] : []);
  await page.setInputFiles("#own-labels-file", [labels]);
  await page.setInputFiles("#own-logits-file", [logits]);
  // Each choice reads the files chosen so far: wait for the sentence naming the last ones.
  const shown = [`logits from ${path.basename(logits)}`, `labels from ${path.basename(labels)}`, ...(names ? [`named in ${path.basename(names)}`] : [])];
  await page.waitForFunction((parts) => {
    const status = document.getElementById("own-logits-status").textContent;
    return status.startsWith("Showing") && parts.every((part) => status.includes(part));
  }, shown, { timeout: 30_000, polling: 100 });
  await page.locator("#own-logits-show").click();
  await page.waitForFunction(() => window.calibra.timings.ownLogits.drawn !== null, null, { timeout: 30_000, polling: 100 });
  // The lab's heading just under the labs' index, which stays at the top.
  const [top, index] = await page.evaluate(() => ["temperature-lab", "lab-index"].map((id) => document.getElementById(id).getBoundingClientRect()).map((box, i) => (i === 0 ? box.top : box.height)));
  assert.ok(Math.abs(top - index) <= 1, `"Go to the temperature lab" leaves the lab at ${top} px, under an index ${index} px tall`);
  assert.equal(await page.evaluate(() => document.activeElement.id), "temperature", "the slider takes the focus");
}

// `calibra report --json` on files, with the page's split, bins and conformal settings.
async function report(logits, labels, extra = []) {
  const binary = await buildCalibra();
  const args = ["report", "--logits", logits, "--labels", labels, "--cal-fraction", "0.5", "--seed", String(SPLIT), "--bins", "15",
    "--score", "lac", "--alpha", "0.1", "--json", ...extra];
  return JSON.parse((await run(binary, args, { maxBuffer: 16 << 20 })).stdout);
}

// The page's readouts against `calibra report` on the same files: T = 1 and fitted T columns,
// the slider's T column, the estimators table and the conformal sets at that T.
async function assertLikeTheCli(metrics, logits, labels) {
  const fitted = await report(logits, labels);
  const atT = await report(logits, labels, ["--temperature", String(T)]);
  const close = (name, actual, expected) => assert.ok(Math.abs(actual - expected) <= TOLERANCE, `${name}: page ${actual}, CLI ${expected}`);
  close("fitted T", metrics.fitted_temperature, fitted.temperature);
  for (const name of TEMPERATURE_METRICS) {
    close(`${name} at T = 1`, metrics[`${name}_t1`], fitted.before[name]);
    close(`${name} at the fitted T`, metrics[`${name}_fitted`], fitted.after[name]);
    close(`${name} at T = ${T}`, metrics[name], atT.after[name]);
  }
  for (const name of ESTIMATOR_METRICS) close(`${name} at T = ${T}`, metrics[name], atT.after[name]);
  for (const name of CONFORMAL_METRICS) close(`${name} (LAC, α = 0.1, T = ${T})`, metrics[name], atT.conformal[name]);
  NAMES.forEach((_, k) => close(`coverage of class ${k}`, metrics[`coverage_class_${k}`], atT.conformal.per_class_coverage[k]));
}

test(".npy logits and labels: the labs show `calibra report`'s numbers for them, and only the labs that need no images", { timeout: 180_000 }, async () => {
  const hash = await hashParams(page);
  await choose(files.npyLogits, files.npyLabels);
  const metrics = await labMetrics();
  await assertLikeTheCli(metrics, files.npyLogits, files.npyLabels);
  assert.ok(!("coverage_class_4" in metrics) || Number.isNaN(metrics.coverage_class_4), "four classes, four per-class coverages");
  assert.match(await page.textContent("#own-logits-status"), /^Showing 3,000 rows of 4 classes: logits from logits\.npy, labels from labels\.npy\.$/);
  for (const note of await page.locator(".own-data-note").all()) assert.ok(await note.isVisible(), "each lab says whose numbers it shows");
  for (const id of ["#gallery", "#model", "#cache-note"]) assert.ok(!(await page.locator(id).isVisible()), `${id} needs the test images and is hidden`);
  assert.match(await page.textContent("#per-class-values"), /class 0 .*class 3/);
  assert.deepEqual(await hashParams(page), hash, "the link never holds the reader's files");
  // The bootstrap worker restarts on the new data (fetching the page's own module again); no
  // request goes anywhere else, and none carries data.
  for (const { method, url } of requests) assert.ok(method === "GET" && url.startsWith(site.url), `${method} ${url}`);
});

test("text files as np.savetxt writes them (a header, labels as floats) with class names give the same numbers", { timeout: 180_000 }, async () => {
  const fromNpy = await labMetrics();
  await choose(files.csvLogits, files.txtLabels, files.names);
  const metrics = await labMetrics();
  await assertLikeTheCli(metrics, files.csvLogits, files.txtLabels);
  for (const name of [...TEMPERATURE_METRICS, ...CONFORMAL_METRICS]) assert.equal(metrics[name], fromNpy[name], `${name}: .csv as .npy`);
  const perClass = await page.textContent("#per-class-values");
  for (const name of NAMES) assert.ok(perClass.includes(name), `the per-class readout names ${name}: ${perClass}`);
  assert.match(await page.textContent("#own-logits-status"), /the classes named in names\.txt\.$/);
  // The lab's top on screen: its note, the slider and the first charts and table.
  await page.evaluate(() => document.getElementById("temperature-lab").scrollIntoView({ block: "start" }));
  await nextFrames(page, 3);
  const shot = path.join(REPO_ROOT, "tests/e2e/screenshots/own-logits.png");
  mkdirSync(path.dirname(shot), { recursive: true });
  await page.screenshot({ path: shot });
  if (process.env.UPDATE_SCREENSHOT) copyFileSync(shot, path.join(REPO_ROOT, "docs/own-logits.png"));
});

test("each bad file shows the command-line tool's message and keeps the numbers shown", { timeout: 180_000 }, async () => {
  const shown = await labMetrics();
  const bad = (name, text) => {
    const file = path.join(scratch, name);
    writeFileSync(file, text);
    return file;
  };
  const typo = bad("typo.csv", `0.5,1.2,x3,0.1\n${"1,2,3,4\n".repeat(ROWS - 1)}`);
  const shortLabels = bad("short.txt", "0\n1\n2\n");
  const outOfRange = bad("range.txt", `${"1\n".repeat(ROWS - 1)}4\n`);
  const probabilities = bad("probabilities.csv", "0.25,0.25,0.25,0.25\n".repeat(ROWS));
  const unknown = bad("logits.json", "[]");
  const binary = await buildCalibra();
  const cli = async (logits, labels) => {
    const failure = await run(binary, ["report", "--logits", logits, "--labels", labels]).then(() => null, (error) => error);
    assert.ok(failure, `calibra report refuses ${path.basename(logits)} with ${path.basename(labels)}`);
    return failure.stderr.trim().replace(/^calibra: /, "");
  };
  const cases = [
    [typo, files.txtLabels, undefined, await cli(typo, files.txtLabels)],
    [files.csvLogits, shortLabels, undefined, await cli(files.csvLogits, shortLabels)],
    [files.csvLogits, outOfRange, undefined, await cli(files.csvLogits, outOfRange)],
    [probabilities, files.txtLabels, undefined, (await cli(probabilities, files.txtLabels)).replace(/; pass --from-probabilities.*$/, "")],
    [unknown, files.txtLabels, undefined, await cli(unknown, files.txtLabels)],
    [files.csvLogits, files.txtLabels, bad("three.txt", "a\nb\nc\n"), "three.txt: 3 class names, but the logits have 4 classes (one name a line)"],
  ];
  for (const [logits, labels, names, message] of cases) {
    await page.setInputFiles("#own-names-file", names ? [names] : []);
    await page.setInputFiles("#own-labels-file", [labels]);
    await page.setInputFiles("#own-logits-file", [logits]);
    await page.waitForFunction(() => document.getElementById("own-logits-status").textContent.startsWith("Cannot use"), null, { timeout: 60_000 });
    // The page knows a file by its name, the CLI by its path.
    const expected = `Cannot use these files: ${message.replaceAll(scratch + path.sep, "")}`;
    assert.equal(await page.textContent("#own-logits-status"), expected);
    assert.ok(await page.evaluate(() => document.getElementById("own-logits-status").classList.contains("error")), "a refusal looks like one, not like help text");
    assert.ok(await page.evaluate(() => document.body.classList.contains("own-data")), "the reader's data stays");
    const now = await labMetrics();
    for (const name of [...TEMPERATURE_METRICS, ...CONFORMAL_METRICS]) assert.equal(now[name], shown[name], `${path.basename(logits)}: ${name} unchanged`);
    await page.evaluate(() => { document.getElementById("own-logits-status").textContent = ""; });
  }
  // The wrong class-names file of the last case can be taken back: the other two files are read
  // again and shown.
  await page.click('button.file-remove[data-clears="own-names-file"]');
  await page.waitForFunction(() => document.getElementById("own-logits-status").textContent.startsWith("Showing"), null, { timeout: 30_000, polling: 100 });
  assert.ok(!(await page.evaluate(() => document.getElementById("own-logits-status").classList.contains("error"))));
});

test("with 100 classes the per-class chart's canvas grows a row a class, and both labs draw", { timeout: 120_000 }, async () => {
  const classes = 100;
  const rows = 1000;
  const logits = new Float32Array(rows * classes);
  const labels = new Int32Array(rows);
  for (let i = 0; i < rows; i++) {
    labels[i] = i % classes;
    for (let k = 0; k < classes; k++) logits[i * classes + k] = ((i * 7 + k * 13) % 17) / 17 - 0.5;
    logits[i * classes + (i % 5 === 0 ? (i + 1) % classes : i % classes)] += 3 + (i % 4);
  }
  const logitsFile = path.join(scratch, "many.npy");
  const labelsFile = path.join(scratch, "many-labels.npy");
  writeFileSync(logitsFile, npy("<f4", [rows, classes], logits));
  writeFileSync(labelsFile, npy("<i4", [rows], labels));
  const drawn = await page.evaluate(() => window.calibra.timings.conformalDraws.length);
  await choose(logitsFile, labelsFile);
  const metrics = await labMetrics();
  assert.ok(await page.evaluate((count) => window.calibra.timings.conformalDraws.length > count, drawn), "the conformal lab is drawn");
  // plot::per_class_height: 80 px and 14 px a class past 20 classes (a square canvas refused 100).
  assert.equal(await page.evaluate(() => document.getElementById("per-class").clientHeight), 80 + 14 * classes);
  assert.equal(await page.locator('#conformal-lab [data-metric^="coverage_class_"]').count(), classes, "a coverage readout a class");
  assert.ok(Number.isFinite(metrics.coverage), "the coverage is shown");
  assert.equal(await page.locator("#error").isHidden(), true, "no error is shown");
});

test("'Back to Fashion-MNIST' brings back the test images' numbers", { timeout: 60_000 }, async () => {
  await page.locator("#temperature-lab .own-logits-back").click();
  await nextFrames(page, 3);
  const metrics = await labMetrics();
  for (const name of [...TEMPERATURE_METRICS, ...CONFORMAL_METRICS, "fitted_temperature"]) assert.equal(metrics[name], testSetMetrics[name], name);
  assert.ok(!(await page.evaluate(() => document.body.classList.contains("own-data"))));
  assert.ok(await page.locator("#model").isVisible(), "the model control is back");
  assert.equal(await page.textContent("#own-logits-status"), "No files yet: the labs show the test images.");
  assert.deepEqual(problems, [], "no page errors");
});

test("the rivals table fills from the bootstrap worker with `calibra report --method`'s numbers, whatever network the link names", { timeout: 180_000 }, async () => {
  // The link names another network than the first (the reader chose it before their files):
  // the labs show the reader's one model all the same.
  await page.evaluate(() => { location.hash = `${location.hash.slice(1)}&model=logitnorm`; });
  await choose(files.npyLogits, files.npyLabels);
  assert.equal((await hashParams(page)).model, "logitnorm");
  await page.locator("#rivals-block").scrollIntoViewIfNeeded();
  await page.waitForFunction(() => {
    const cells = [...document.querySelectorAll("#rivals [data-metric]")];
    return cells.length > 0 && cells.every((cell) => cell.dataset.value !== "");
  }, null, { timeout: 60_000, polling: 100 });
  await nextFrames(page, 2);
  const metrics = await readMetrics(page);
  for (const method of ["vector", "isotonic", "venn-abers", "dirichlet"]) {
    const { recalibration } = await report(files.npyLogits, files.npyLabels, ["--method", method]);
    for (const name of ["accuracy", "ece", "nll", "brier", "calibration_ece"]) {
      assert.ok(Math.abs(metrics[`rival_${method}_${name}`] - recalibration[name]) <= TOLERANCE, `${method} ${name}: page ${metrics[`rival_${method}_${name}`]}, CLI ${recalibration[name]}`);
    }
  }
  assert.ok(await page.locator("#error").isHidden(), await page.textContent("#error"));
  assert.deepEqual(problems, [], "no page errors");
});


// Perfectly calibrated synthetic logits: ten classes, z = 3·N(0, 1), each label drawn from
// softmax(z) itself, so that P(right | confidence c) = c by construction. The draws come from
// mulberry32: the LCG above, whose products lose bits in doubles, made logits and labels depend
// on each other (over 200,000 rows: mean confidence 66.6% at 65.4% accuracy), and the verdict
// rightly called such a set overconfident.
function calibratedData(seed, rows) {
  let state = seed >>> 0;
  const random = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (((t ^ (t >>> 14)) >>> 0) + 0.5) / 4294967296;
  };
  const normal = () => Math.sqrt(-2 * Math.log(random())) * Math.cos(2 * Math.PI * random());
  const logits = new Float64Array(rows * 10);
  const labels = new BigInt64Array(rows);
  for (let i = 0; i < rows; i++) {
    const row = Array.from({ length: 10 }, () => 3 * normal());
    const weights = row.map(Math.exp);
    let u = random() * weights.reduce((a, b) => a + b, 0);
    let label = weights.findIndex((w) => (u -= w) < 0);
    if (label < 0) label = 9;
    logits.set(row, i * 10);
    labels[i] = BigInt(label);
  }
  return { logits, labels };
}

test("perfectly calibrated logits, as a reader's own files at T = 1, are not called over- or underconfident", { timeout: 300_000 }, async (t) => {
  for (const seed of [1, 2, 3]) {
    const { logits, labels } = calibratedData(seed, 10_000);
    const logitsFile = path.join(scratch, `calibrated-${seed}-logits.npy`);
    const labelsFile = path.join(scratch, `calibrated-${seed}-labels.npy`);
    writeFileSync(logitsFile, npy("<f8", [10_000, 10], logits));
    writeFileSync(labelsFile, npy("<i8", [10_000], labels));
    await choose(logitsFile, labelsFile);
    await page.evaluate(() => { location.hash = "t=1"; });
    await page.locator("#confidence-verdict").scrollIntoViewIfNeeded();
    await page.waitForFunction(() => document.getElementById("confidence-verdict").textContent.startsWith("At T = 1.000 "), null, { timeout: 30_000, polling: 100 });
    const verdict = await page.textContent("#confidence-verdict");
    t.diagnostic(`seed ${seed}: ${verdict}`);
    assert.doesNotMatch(verdict, /overconfident|underconfident/, `seed ${seed}: ${verdict}`);
    assert.match(verdict, /cannot tell it from a calibrated network/, `seed ${seed}: ${verdict}`);
    assert.match(await page.textContent("#verdict-rates"), /called 0 of 240 calibrated synthetic networks over- or underconfident/);
  }
  assert.deepEqual(problems, [], "no page errors");
});
