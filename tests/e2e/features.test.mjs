// The feature detectors in the LogitNorm lab: the inference worker's penultimate features,
// the detectors fitted in the bootstrap worker on the calibration half, and every feature
// score's FPR95, AUROC, AUPR-In and AUPR-Out equal to `calibra ood --model` run natively on
// the same images (the calibration half to fit, the evaluation half and the digits to score),
// to 1e-9; switching between fitted scores (its time reported, not asserted: speed is the
// benchmark's); the cache's size with the features.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { promisify } from "node:util";
import { gunzipSync } from "node:zlib";

import { IMAGES_URL, LABELS_URL, buildCalibra, collectProblems, download, launchBrowser, nextFrames, openSite, readMetrics, waitForInference } from "./helpers.mjs";

const run = promisify(execFile);

const INFERENCE_TIMEOUT_MS = 300_000;
// The page and the CLI infer each image to the same bits whatever its batch (the network's
// fixed-order products, src/model/inference.rs) and fit the detectors by the same f64
// arithmetic: only the last bits of a transcendental function may differ between the two.
const TOLERANCE = 1e-9;
const FEATURE_SCORES = ["mahalanobis", "knn", "react", "ash", "vim", "gradnorm"];
const METRICS = ["fpr95", "auroc", "aupr_in", "aupr_out"];
const MNIST_URL = "assets/mnist-ood-images-idx3-ubyte.gz";
const SIDE = 28;

let site;
let browser;
let page;
let problems;
let scratch;

before(async () => {
  site = await openSite();
  browser = await launchBrowser();
  problems = collectProblems(browser.context);
  scratch = mkdtempSync(path.join(os.tmpdir(), "calibra-e2e-features-"));
  page = await browser.context.newPage();
  await page.goto(`${site.url}#tau=0.04&ood=mnist&ood_score=knn`);
  await waitForInference(page, INFERENCE_TIMEOUT_MS);
  await page.locator("#ood-lab").scrollIntoViewIfNeeded();
  // Both networks' features on every set, then their fits in the bootstrap worker.
  await page.waitForFunction(() => document.querySelector('[data-metric="fpr95_knn_ce"]')?.dataset.value, null, { timeout: INFERENCE_TIMEOUT_MS, polling: 500 });
  await page.waitForFunction(() => document.querySelector('[data-metric="fpr95_knn"]')?.dataset.value, null, { timeout: INFERENCE_TIMEOUT_MS, polling: 500 });
  await nextFrames(page, 2);
});

after(async () => {
  await browser?.close();
  await site?.close();
  rmSync(scratch, { recursive: true, force: true });
  assert.deepEqual(problems, [], "no console error, uncaught exception or failed request");
});

// An IDX file of the `rows` of `images` (unzipped IDX images, 28×28), or of `labels` (unzipped
// IDX labels), written to `name`.
function idxRows(unzipped, rows, name, { images }) {
  const header = images ? 16 : 8;
  const width = images ? SIDE * SIDE : 1;
  const out = Buffer.alloc(header + rows.length * width);
  out.writeUInt32BE(images ? 0x803 : 0x801, 0);
  out.writeUInt32BE(rows.length, 4);
  if (images) {
    out.writeUInt32BE(SIDE, 8);
    out.writeUInt32BE(SIDE, 12);
  }
  rows.forEach((row, i) => unzipped.copy(out, header + i * width, header + row * width, header + (row + 1) * width));
  const file = path.join(scratch, name);
  writeFileSync(file, out);
  return file;
}

test("every feature score's metrics equal `calibra ood --model` on the same images (1e-9), for LogitNorm τ = 0.04 and cross-entropy", { timeout: 2 * INFERENCE_TIMEOUT_MS }, async (t) => {
  const binary = await buildCalibra();
  const limits = await page.evaluate(() => window.calibra.limits);
  const metrics = await readMetrics(page);
  const calibration = await page.evaluate(() => window.calibra.calibrationRows());
  const inCalibration = new Set(calibration);
  const files = {};
  for (const [name, url] of [["images", IMAGES_URL], ["labels", LABELS_URL], ["mnist", MNIST_URL]]) {
    files[name] = path.join(scratch, `${name}.gz`);
    await download(site.url, url, files[name]);
  }
  const images = gunzipSync(readFileSync(files.images));
  const labels = gunzipSync(readFileSync(files.labels));
  const rows = images.readUInt32BE(4);
  const evaluation = Array.from({ length: rows }, (_, row) => row).filter((row) => !inCalibration.has(row));
  const fitImages = idxRows(images, calibration, "fit-images-idx3-ubyte", { images: true });
  const fitLabels = idxRows(labels, calibration, "fit-labels-idx1-ubyte", { images: false });
  const idImages = idxRows(images, evaluation, "id-images-idx3-ubyte", { images: true });
  const status = await page.textContent("#feature-status");
  for (const [network, suffix] of [["0.04", ""], ["ce", "_ce"]]) {
    // The network the lab shows for a τ: the first listed (the seed its card records).
    const model = limits.models.find((m) => m.network === network);
    const weights = path.join(scratch, `${network}.safetensors`);
    await download(site.url, model.url, weights);
    const args = ["ood", "--model", weights, "--fit-images", fitImages, "--fit-labels", fitLabels, "--id-images", idImages, "--ood-images", files.mnist, "--json"];
    const native = JSON.parse((await run(binary, args, { maxBuffer: 16 << 20 })).stdout);
    assert.equal(native.n_fit, calibration.length);
    assert.ok(status.endsWith(`k = ${native.knn_k}.`), `KNN's k as the CLI's: ${status}`);
    let largest = 0;
    for (const score of FEATURE_SCORES) {
      for (const metric of suffix ? ["fpr95", "auroc"] : METRICS) {
        const value = metrics[`${metric}_${score}${suffix}`];
        const difference = Math.abs(value - native[score][metric]);
        largest = Math.max(largest, difference);
        assert.ok(difference <= TOLERANCE, `${network}, ${score} ${metric}: page ${value}, CLI ${native[score][metric]}`);
      }
    }
    t.diagnostic(`${network}: largest difference from the CLI ${largest.toExponential(2)}`);
    t.diagnostic(`${network}: ${FEATURE_SCORES.map((score) => `${score} FPR95 ${native[score].fpr95.toFixed(4)} AUROC ${native[score].auroc.toFixed(4)}`).join("; ")}`);
  }
});

test("once fitted, switching between feature scores redraws at once with the chosen score; the features' share of the cache", { timeout: INFERENCE_TIMEOUT_MS }, async (t) => {
  const millis = [];
  for (const score of ["vim", "mahalanobis", "gradnorm", "knn"]) {
    const before = await page.evaluate(() => window.calibra.timings.oodDraws.length);
    await page.selectOption("#ood-score", score);
    await page.waitForFunction((n) => window.calibra.timings.oodDraws.length > n, before, { timeout: 10_000, polling: 50 });
    millis.push(await page.evaluate(() => window.calibra.timings.oodDraws.at(-1)));
    assert.ok(Number.isFinite((await readMetrics(page))[`fpr95_${score}`]), `${score} shown at once`);
  }
  await page.evaluate(() => window.calibra.cacheSettled());
  const { usage } = await page.evaluate(() => navigator.storage.estimate());
  t.diagnostic(`a switch of feature score drew in ${millis.map((m) => m.toFixed(1)).join(", ")} ms; the origin's storage holds ${(usage / 2 ** 20).toFixed(1)} MiB (logits and features of two networks on the test images and the OOD sets)`);
});

test("the ranking lists every computed score on both networks by AUROC, and its sentence names the first with its interval", { timeout: INFERENCE_TIMEOUT_MS }, async () => {
  await page.waitForFunction(() => document.querySelectorAll("#ood-ranking tbody tr").length > 0, null, { timeout: INFERENCE_TIMEOUT_MS, polling: 500 });
  await nextFrames(page, 2);
  const rows = await page.$$eval("#ood-ranking tbody tr", (trs) => trs.map((tr) => [...tr.querySelectorAll("td, th")].map((cell) => ({ text: cell.textContent, value: cell.dataset.value }))));
  // Nine scores (ODIN not asked for) on each of the two networks.
  assert.equal(rows.length, 18);
  const aurocs = rows.map((cells) => Number(cells[4].value));
  assert.deepEqual(aurocs, [...aurocs].sort((a, b) => b - a), "by decreasing AUROC");
  const metrics = await readMetrics(page);
  const [first] = rows;
  const key = first[2].text === "cross-entropy" ? "_ce" : "";
  const score = { MSP: "msp", "max-logit": "max_logit", energy: "energy", Mahalanobis: "mahalanobis", KNN: "knn", ReAct: "react", "ASH-S": "ash", ViM: "vim", GradNorm: "gradnorm" }[first[1].text];
  // The feature scores are on the evaluation half in both tables: the same AUROC.
  if (FEATURE_SCORES.includes(score)) assert.equal(Number(first[4].value), metrics[`auroc_${score}${key}`]);
  const lesson = await page.textContent("#ood-ranking-lesson");
  assert.ok(lesson.startsWith(`Here ${first[1].text} on ${first[2].text} separates MNIST digits best, AUROC ${first[4].text}`), lesson);
  assert.match(lesson, /is (larger than|within) the noise of these images/);
});

test("a revisit draws its first frame from the cached logits alone, then reads the features kept apart: every feature score as before", { timeout: INFERENCE_TIMEOUT_MS }, async () => {
  const metrics = await readMetrics(page);
  const featureMetrics = (all) => Object.fromEntries(Object.entries(all).filter(([name]) => FEATURE_SCORES.some((score) => name.includes(`_${score}`))));
  const before = featureMetrics(metrics);
  assert.ok(Object.keys(before).length >= FEATURE_SCORES.length * METRICS.length, "the feature scores are shown");
  await page.evaluate(() => window.calibra.cacheSettled());
  // Each read of an entry of the cache's two stores, with how many frames the first lab had
  // drawn by then; the reload opens at the top of the page, where the first lab is.
  await page.addInitScript(() => {
    history.scrollRestoration = "manual";
    window.__reads = [];
    const get = IDBObjectStore.prototype.get;
    IDBObjectStore.prototype.get = function (...args) {
      window.__reads.push({ store: this.name, frames: window.calibra?.timings.draws.length ?? 0 });
      return get.apply(this, args);
    };
  });
  await page.reload();
  await waitForInference(page, INFERENCE_TIMEOUT_MS);
  assert.equal(await page.isHidden("#cache-note"), false, "the logits came from the cache");
  const reads = await page.evaluate(() => window.__reads);
  assert.equal(reads.find((read) => read.store === "logits")?.frames, 0, "the test images' logits are read before the first frame");
  const featureReads = reads.filter((read) => read.store === "features");
  assert.ok(featureReads.every((read) => read.frames > 0), `the features are read after the first frame: ${JSON.stringify(reads)}`);
  await page.locator("#ood-lab").scrollIntoViewIfNeeded();
  await page.waitForFunction(() => document.querySelector('[data-metric="fpr95_knn"]')?.dataset.value && document.querySelector('[data-metric="fpr95_knn_ce"]')?.dataset.value, null, { timeout: INFERENCE_TIMEOUT_MS, polling: 200 });
  await page.waitForFunction(() => document.querySelectorAll("#ood-ranking tbody tr").length > 0, null, { timeout: INFERENCE_TIMEOUT_MS, polling: 200 });
  await nextFrames(page, 2);
  assert.deepEqual(featureMetrics(await readMetrics(page)), before);
});
