// The "your own image" section: a stroke drawn on the pad and a PNG dropped on the section each
// give the probabilities, conformal set and OOD verdict that `calibra logits` and `calibra
// report` give on the same picture; the 28×28 the page exports is the one the native tool makes
// of the PNG; no request leaves the page while a picture is classified, and the link never
// holds it; a file that is no picture and a blank picture say what is wrong and keep what was
// shown. UPDATE_SCREENSHOT=1 also copies the section's screenshot to docs/own-image.png.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { promisify } from "node:util";

import { buildCalibra, collectProblems, hashParams, launchBrowser, Native, nextFrames, openSite, readMetrics, REPO_ROOT, waitForInference } from "./helpers.mjs";

const run = promisify(execFile);

// Browser and native logits differ in their last float bits (the wasm and native kernels sum
// in other orders): probabilities agree to this.
const TOLERANCE_PROBABILITY = 1e-5;
// The same for a threshold computed over 10,000 test images' energies (values near 10).
const TOLERANCE_THRESHOLD = 1e-4;
// A score this close to its threshold may fall on either side between browser and native.
const TOO_CLOSE = 1e-4;
const ALPHA = 0.1;
// A p-value counts the 5,000 calibration energies at or below the picture's: browser and native
// logits may put two of them on the other side, 1/5,001 each.
const TOLERANCE_PVALUE = 2 / 5001 + 1e-12;

let site;
let browser;
let page;
let problems;
let native;
let scratch;
const requests = [];

before(async () => {
  site = await openSite();
  native = new Native(site.url);
  browser = await launchBrowser();
  problems = collectProblems(browser.context);
  browser.context.on("request", (request) => requests.push(request.url()));
  scratch = mkdtempSync(path.join(os.tmpdir(), "calibra-e2e-own-"));
  page = await browser.context.newPage();
  await page.goto(`${site.url}#score=lac&alpha=${ALPHA}`);
  await waitForInference(page);
  // The page's own background work first: the bootstrap worker starts (fetching its module)
  // once the temperature slider has rested.
  await page.waitForFunction(() => window.calibra.timings.intervals.length > 0, null, { timeout: 60_000, polling: 250 });
  await page.locator("#own-image").scrollIntoViewIfNeeded();
  await nextFrames(page, 2);
});

after(async () => {
  await browser?.close();
  await site?.close();
  native?.close();
  rmSync(scratch, { recursive: true, force: true });
  // Checked once every page of the file has run: a lone test would pass when run alone.
  assert.deepEqual(problems, [], "no console error, uncaught exception or failed request");
});

// softmax(z / t), in f64.
function softmax(logits, t) {
  const top = Math.max(...logits);
  const e = logits.map((z) => Math.exp((z - top) / t));
  const total = e.reduce((a, b) => a + b, 0);
  return e.map((v) => v / total);
}

// The [n, 10] float32 logits of a .npy file calibra wrote (version 1.0, C order), as rows.
function readNpy(file) {
  const bytes = readFileSync(file);
  const headerLength = bytes.readUInt16LE(8);
  const data = bytes.subarray(10 + headerLength);
  const values = Array.from(new Float32Array(data.buffer.slice(data.byteOffset, data.byteOffset + data.length)));
  const rows = [];
  for (let r = 0; r < values.length / 10; r++) rows.push(values.slice(r * 10, (r + 1) * 10));
  return rows;
}

// `calibra logits` of the cross-entropy network on a picture or IDX file.
async function nativeLogits(images, name, extra = []) {
  const [binary] = await Promise.all([buildCalibra(), native.weightBytes("ce")]);
  const out = path.join(scratch, `${name}.npy`);
  await run(binary, ["logits", "--model", path.join(native.dir, "ce.safetensors"), "--images", images, "--out", out, ...extra]);
  return readNpy(out)[0];
}

// Waits until the section shows the cross-entropy network's answer on the 28×28 `pixels`.
async function answered(pixels) {
  await page.waitForFunction(
    (expected) => {
      const shown = window.calibra.ownPixels;
      return shown && shown.join() === expected.join() && document.querySelector('[data-metric="own_top_ce"]') !== null
        && !document.getElementById("own-sentence").textContent.startsWith("Waiting");
    },
    pixels,
    { timeout: 30_000, polling: 100 },
  );
  await nextFrames(page, 2);
}

// The 28×28 the page exports (its IDX download), saved to `name`.
async function exported(name) {
  const [download] = await Promise.all([page.waitForEvent("download"), page.click("#own-download")]);
  const file = path.join(scratch, name);
  await download.saveAs(file);
  return file;
}

// The section against the native tool: probabilities at T = 1 and at the page's T, the LAC
// set from `calibra report`'s q̂ at that T, and the energy verdict against the threshold of the
// native test logits.
async function checkAgainstNative(logits, label) {
  const m = await readMetrics(page);
  const t = await page.evaluate(() => window.calibra.state.t);
  const [raw, scaled] = [softmax(logits, 1), softmax(logits, t)];
  for (let k = 0; k < 10; k++) {
    assert.ok(Math.abs(m[`own_probability_raw_${k}`] - raw[k]) < TOLERANCE_PROBABILITY, `${label}, class ${k} at T = 1: page ${m[`own_probability_raw_${k}`]}, native ${raw[k]}`);
    assert.ok(Math.abs(m[`own_probability_t_${k}`] - scaled[k]) < TOLERANCE_PROBABILITY, `${label}, class ${k} at T = ${t}`);
  }
  const top = raw.indexOf(Math.max(...raw));
  assert.equal(m.own_top_ce, top, `${label}: top class`);
  // LAC: y is in the set when 1 − p(y) ≤ q̂.
  const { qhat } = (await native.report("ce", { seed: 0, temperature: t, extra: ["--score", "lac", "--alpha", String(ALPHA)] })).conformal;
  const decided = scaled.map((p) => Math.abs(1 - p - qhat) > TOO_CLOSE);
  const expectedSet = scaled.map((p, k) => (1 - p <= qhat ? k : -1)).filter((k) => k >= 0);
  if (decided.every(Boolean)) assert.equal(m.own_set_ce, expectedSet.length, `${label}: set size (q̂ ${qhat})`);
  const setText = await page.locator('[data-metric="own_set_ce"]').textContent();
  const names = await page.evaluate(() => window.calibra.limits.class_names);
  for (let k = 0; k < 10; k++) {
    if (decided[k]) assert.equal(setText.includes(names[k]), expectedSet.includes(k), `${label}: ${names[k]} in the set ${setText} (1 − p = ${1 - scaled[k]}, q̂ ${qhat})`);
  }
  // Energy at T against the ⌈0.95·n⌉-th largest energy of the native test logits.
  const energy = (z) => t * Math.log(z.reduce((sum, v) => sum + Math.exp(v / t), 0));
  const testEnergies = readNpy(await native.logitsFile("ce")).map(energy).sort((a, b) => b - a);
  const threshold = testEnergies[Math.ceil(0.95 * testEnergies.length) - 1];
  assert.ok(Math.abs(m.own_ood_threshold_ce - threshold) < TOLERANCE_THRESHOLD, `${label}: threshold page ${m.own_ood_threshold_ce}, native ${threshold}`);
  assert.ok(Math.abs(m.own_ood_score_ce - energy(logits)) < TOLERANCE_THRESHOLD, `${label}: energy`);
  assert.equal(m.own_ood_in_ce, m.own_ood_score_ce >= m.own_ood_threshold_ce ? 1 : 0, `${label}: the verdict follows the numbers shown`);
  if (Math.abs(energy(logits) - threshold) > TOO_CLOSE) assert.equal(m.own_ood_in_ce, energy(logits) >= threshold ? 1 : 0, `${label}: verdict`);
  const sentence = await page.locator("#own-sentence").textContent();
  assert.ok(sentence.includes(`takes your image for a ${names[top]}`), sentence);
  assert.equal(sentence.includes("passes for a Fashion-MNIST image"), m.own_ood_in_ce === 1, sentence);
  // Its conformal p-value: `calibra ood --pvalues` with the picture as the one OOD row, against
  // the calibration half of the native test logits (split 0).
  const picture = path.join(scratch, `${label.replace(/\W+/g, "-")}-logits.csv`);
  writeFileSync(picture, `${logits.join(",")}\n`);
  const args = ["ood", "--id-logits", await native.logitsFile("ce"), "--ood-logits", picture, "--temperature", String(t), "--pvalues", "--seed", "0", "--json"];
  const { pvalues } = JSON.parse((await run(await buildCalibra(), args, { maxBuffer: 64 << 20 })).stdout);
  const [expected] = pvalues.energy.out_of_distribution_pvalues;
  assert.ok(Math.abs(m.own_ood_pvalue_ce - expected) <= TOLERANCE_PVALUE, `${label}: p-value page ${m.own_ood_pvalue_ce}, CLI ${expected}`);
  assert.ok(sentence.includes(`Its conformal p-value is ${m.own_ood_pvalue_ce.toFixed(4)}: `), sentence);
}

test("a stroke drawn on the pad: the page's answer is the native tool's on the 28×28 it exports, and nothing is fetched", { timeout: 300_000 }, async () => {
  const hashBefore = await hashParams(page);
  const fetchedBefore = requests.length;
  const box = await page.locator("#own-pad").boundingBox();
  // A trouser-like shape: two strokes down from a waistband.
  const at = (x, y) => [box.x + x * box.width, box.y + y * box.height];
  for (const stroke of [[[0.3, 0.15], [0.7, 0.15]], [[0.32, 0.15], [0.3, 0.85]], [[0.68, 0.15], [0.7, 0.85]]]) {
    await page.mouse.move(...at(...stroke[0]));
    await page.mouse.down();
    for (let step = 1; step <= 10; step++) {
      const [x0, y0] = stroke[0];
      const [x1, y1] = stroke[1];
      await page.mouse.move(...at(x0 + ((x1 - x0) * step) / 10, y0 + ((y1 - y0) * step) / 10));
    }
    await page.mouse.up();
  }
  await page.waitForFunction(() => window.calibra.ownPixels !== null, null, { timeout: 60_000 });
  const pixels = await page.evaluate(() => window.calibra.ownPixels);
  await answered(pixels);
  assert.equal(requests.length, fetchedBefore, `requests while classifying: ${requests.slice(fetchedBefore).join(", ")}`);
  assert.deepEqual(await hashParams(page), hashBefore, "the link does not hold the picture");
  const idx = await exported("drawing-idx3-ubyte");
  const bytes = readFileSync(idx);
  assert.deepEqual([...bytes.subarray(0, 16)], [0, 0, 8, 3, 0, 0, 0, 1, 0, 0, 0, 28, 0, 0, 0, 28]);
  assert.deepEqual([...bytes.subarray(16)], pixels, "the download is the 28×28 shown");
  await checkAgainstNative(await nativeLogits(idx, "drawing"), "drawing");
});

test("a PNG dropped on the section: negated by the guess, its own test image nearest, the native tool's answer on the same file", { timeout: 300_000 }, async () => {
  // Test image 8, ink on paper, blown up five times on a wider sheet, as a PNG the browser
  // encodes. It fills 28 pixels along its longest side and sits where the preparation centres
  // it, so its preparation comes back close to it (`own_image_tests.rs`).
  const base64 = await page.evaluate(async () => {
    const response = await fetch("assets/fashion-mnist/t10k-images-idx3-ubyte.gz");
    const stream = response.body.pipeThrough(new DecompressionStream("gzip"));
    const all = new Uint8Array(await new Response(stream).arrayBuffer());
    const image = all.subarray(16 + 8 * 784, 16 + 9 * 784);
    const [scale, margin] = [5, 30];
    const side = 28 * scale + 2 * margin;
    const canvas = new OffscreenCanvas(side, side);
    const context = canvas.getContext("2d");
    context.fillStyle = "#fff";
    context.fillRect(0, 0, side, side);
    for (let y = 0; y < 28; y++) {
      for (let x = 0; x < 28; x++) {
        const ink = 255 - image[y * 28 + x];
        context.fillStyle = `rgb(${ink}, ${ink}, ${ink})`;
        context.fillRect(margin + x * scale, margin + y * scale, scale, scale);
      }
    }
    const blob = await canvas.convertToBlob({ type: "image/png" });
    const bytes = new Uint8Array(await blob.arrayBuffer());
    let text = "";
    for (const byte of bytes) text += String.fromCharCode(byte);
    return btoa(text);
  });
  const png = path.join(scratch, "garment.png");
  writeFileSync(png, Buffer.from(base64, "base64"));
  const fetchedBefore = requests.length;
  const dataTransfer = await page.evaluateHandle((encoded) => {
    const bytes = Uint8Array.from(atob(encoded), (c) => c.charCodeAt(0));
    const transfer = new DataTransfer();
    transfer.items.add(new File([bytes], "garment.png", { type: "image/png" }));
    return transfer;
  }, base64);
  await page.dispatchEvent("#own-drop", "drop", { dataTransfer });
  await page.waitForFunction(() => document.getElementById("own-status").textContent.includes("garment.png"), null, { timeout: 60_000 });
  const pixels = await page.evaluate(() => window.calibra.ownPixels);
  await answered(pixels);
  assert.equal(requests.length, fetchedBefore, `requests while classifying: ${requests.slice(fetchedBefore).join(", ")}`);
  const m = await readMetrics(page);
  assert.equal(m.own_inverted, 1, "ink on paper is negated");
  const first = await page.locator("#own-neighbours figcaption").first().textContent();
  assert.match(first, /^#8: /, "the nearest test image is the one the picture was made from");
  // The native tool prepares the PNG itself: the same logits as on the page's exported 28×28
  // (bit for bit: same 28×28, same native kernels).
  const fromPng = await nativeLogits(png, "garment");
  const fromExport = await nativeLogits(await exported("garment-idx3-ubyte"), "garment-export");
  assert.deepEqual(fromExport, fromPng, "the page's 28×28 is the native tool's");
  await checkAgainstNative(fromPng, "dropped PNG");
  mkdirSync(path.join(REPO_ROOT, "tests/e2e/screenshots"), { recursive: true });
  const shot = path.join(REPO_ROOT, "tests/e2e/screenshots/own-image.png");
  await page.locator("#own-image").screenshot({ path: shot });
  if (process.env.UPDATE_SCREENSHOT === "1") copyFileSync(shot, path.join(REPO_ROOT, "docs/own-image.png"));
});

// The section's answers are on screen, or hidden with no picture kept.
const answersShown = () => page.evaluate(() => ({ pixels: window.calibra.ownPixels, hidden: document.getElementById("own-results").hidden }));

test("a file that is no picture and a blank picture say so, and take away the answers about the picture before", { timeout: 60_000 }, async () => {
  const before = await answersShown();
  assert.ok(before.pixels && !before.hidden, "a picture is shown with its answers");
  const notes = path.join(scratch, "notes.png");
  writeFileSync(notes, "these are notes, not a picture\n");
  await page.setInputFiles("#own-file", notes);
  await page.waitForFunction(() => document.getElementById("own-status").textContent.startsWith("Cannot read “notes.png”"), null, { timeout: 60_000 });
  await nextFrames(page, 2);
  assert.deepEqual(await answersShown(), { pixels: null, hidden: true }, "no answer sits under the refusal");
  // A white PNG, encoded by the browser.
  const blank = await page.evaluate(async () => {
    const canvas = new OffscreenCanvas(40, 30);
    const context = canvas.getContext("2d");
    context.fillStyle = "#fff";
    context.fillRect(0, 0, 40, 30);
    const bytes = new Uint8Array(await (await canvas.convertToBlob({ type: "image/png" })).arrayBuffer());
    return Array.from(bytes);
  });
  const blankFile = path.join(scratch, "white.png");
  writeFileSync(blankFile, Buffer.from(blank));
  await page.setInputFiles("#own-file", blankFile);
  await page.waitForFunction(() => document.getElementById("own-status").textContent.includes("“white.png”"), null, { timeout: 60_000 });
  assert.match(await page.locator("#own-status").textContent(), /^Cannot use “white\.png”: the picture is blank/);
  await nextFrames(page, 2);
  assert.deepEqual(await answersShown(), { pixels: null, hidden: true });
});

test("Clear, and undoing the only stroke, take the answers away with the drawing", { timeout: 120_000 }, async () => {
  const box = await page.locator("#own-pad").boundingBox();
  const stroke = async () => {
    await page.mouse.move(box.x + 0.3 * box.width, box.y + 0.2 * box.height);
    await page.mouse.down();
    for (let step = 1; step <= 10; step++) await page.mouse.move(box.x + 0.3 * box.width, box.y + (0.2 + 0.06 * step) * box.height);
    await page.mouse.up();
    await page.waitForFunction(() => window.calibra.ownPixels !== null && !document.getElementById("own-results").hidden, null, { timeout: 30_000 });
  };
  for (const button of ["#own-clear", "#own-undo"]) {
    await stroke();
    await page.click(button);
    await nextFrames(page, 2);
    assert.deepEqual(await answersShown(), { pixels: null, hidden: true }, `${button} leaves no answer under an empty pad`);
    assert.equal(await page.textContent("#own-status"), "No picture yet.");
  }
});
