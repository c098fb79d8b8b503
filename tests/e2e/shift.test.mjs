// "When the test images shift": the cross-entropy network on rotated test images. The page's
// logits of the corrupted copy equal `calibra logits --corruption` on the same images (1e-9:
// the network's products sum in one fixed order on both); its clean and refitted columns equal
// `calibra report` on the page's own logits (1e-9), and the kept column's T-dependent metrics
// `calibra report --temperature <clean T>`; the verdict states the numbers shown and says on
// which side of the guarantee band each coverage lies; a severity sweep fills the chart and
// the severity table; the recalibrate switch redraws the diagram at the refitted T; inversion
// has severities 0 and 1 only. Adaptive conformal inference over the rising-severity stream,
// its γ set by a pointer and the keyboard, replays the stream in the frame of each change
// (its time reported; speed is the benchmark's) and equals `calibra report --aci-gamma` on the
// stream the chart's CSV lists (1e-9). Weighted conformal, its domain classifier fitted without
// labels, equals `calibra report --covariate-shift` on the page's halves (1e-9), and its
// sentence states the numbers shown.
// UPDATE_SCREENSHOT=1 copies the lab's screenshot to docs/shift.png.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { gunzipSync } from "node:zlib";
import path from "node:path";
import { after, before, test } from "node:test";
import { promisify } from "node:util";

import { buildCalibra, canvasData, collectProblems, download, hashParams, LABELS_URL, launchBrowser, MODEL_URLS, IMAGES_URL, Native, nextFrames, openSite, readMetrics, REPO_ROOT, waitForInference } from "./helpers.mjs";

const run = promisify(execFile);

const SPLIT = 0;
const ALPHA = 0.1;
const HASH = `model=ce&split=${SPLIT}&score=aps&alpha=${ALPHA}&shift=rotation&severity=5`;
const SAME_LOGITS = 1e-9;
const SHIFT_TIMEOUT_MS = 180_000;
const METRICS = ["temperature", "accuracy", "ece", "nll", "brier", "coverage", "set_size"];

let site;
let browser;
let page;
let problems;
let native;

before(async () => {
  site = await openSite();
  native = new Native(site.url);
  buildCalibra().catch(() => {});
  browser = await launchBrowser();
  problems = collectProblems(browser.context);
  page = await browser.context.newPage();
  await page.goto(`${site.url}#${HASH}`);
  await waitForInference(page);
});

after(async () => {
  await browser?.close();
  await site?.close();
  native?.close();
  // Checked once every page of the file has run: a lone test would pass when run alone.
  assert.deepEqual(problems, [], "no console error, uncaught exception or failed request");
});

// Scrolls to the shift lab and waits until the shown severity's column is filled.
async function shownSeverity() {
  await page.locator("#shift-lab").scrollIntoViewIfNeeded();
  await page.waitForFunction(() => {
    const cell = document.querySelector('[data-metric="shift_kept_coverage"]');
    return cell && cell.dataset.value !== undefined && cell.dataset.value !== "";
  }, null, { timeout: SHIFT_TIMEOUT_MS, polling: 250 });
  await nextFrames(page, 2);
  return readMetrics(page);
}

// The page's logits of model 0 on `set`, as a CSV file for `calibra report`.
async function pageLogitsCsv(set) {
  const values = await page.evaluate((name) => window.calibra.logits(0, name), set);
  const rows = [];
  for (let r = 0; r < values.length / 10; r++) rows.push(values.slice(r * 10, (r + 1) * 10).join(","));
  const file = path.join(native.dir, `${set}.csv`);
  writeFileSync(file, `${rows.join("\n")}\n`);
  return { file, values };
}

// `calibra report --json` with the page's split, bins and conformal settings.
async function report(logits, extra = []) {
  const binary = await buildCalibra();
  const labels = path.join(native.dir, "labels.gz");
  await download(site.url, LABELS_URL, labels);
  const args = ["report", "--logits", logits, "--labels", labels, "--cal-fraction", "0.5", "--seed", String(SPLIT),
    "--bins", "15", "--score", "aps", "--alpha", String(ALPHA), "--json", ...extra];
  return JSON.parse((await run(binary, args, { maxBuffer: 64 << 20 })).stdout);
}

// The float32 values of a .npy file `calibra logits` wrote.
function readNpy(file) {
  const bytes = readFileSync(file);
  const headerLength = bytes.readUInt16LE(8);
  const data = bytes.subarray(10 + headerLength);
  return new Float32Array(data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength));
}

const close = (name, actual, expected, tolerance = SAME_LOGITS) =>
  assert.ok(Math.abs(actual - expected) <= tolerance, `${name}: page ${actual}, expected ${expected}`);

test("rotated images: the page's logits are `calibra logits --corruption`'s, and the table is `calibra report`'s on them", { timeout: SHIFT_TIMEOUT_MS + 120_000 }, async () => {
  const metrics = await shownSeverity();
  const shifted = await pageLogitsCsv("shift-rotation-5");
  const clean = await pageLogitsCsv("test");

  const binary = await buildCalibra();
  const images = path.join(native.dir, "images.gz");
  const weights = path.join(native.dir, "ce.safetensors");
  await Promise.all([download(site.url, IMAGES_URL, images), download(site.url, MODEL_URLS.ce, weights)]);
  const out = path.join(native.dir, "rotation-5.npy");
  await run(binary, ["logits", "--model", weights, "--images", images, "--corruption", "rotation", "--severity", "5", "--out", out]);
  const expected = readNpy(out);
  assert.equal(expected.length, shifted.values.length);
  let largest = 0;
  expected.forEach((value, i) => { largest = Math.max(largest, Math.abs(value - shifted.values[i])); });
  assert.ok(largest <= SAME_LOGITS, `the page's logits of the rotated images differ from the CLI's by ${largest}`);

  const cleanReport = await report(clean.file);
  const refitReport = await report(shifted.file);
  const keptReport = await report(shifted.file, ["--temperature", String(metrics.shift_clean_temperature)]);
  for (const [column, r] of [["clean", cleanReport], ["refit", refitReport]]) {
    close(`${column} T`, metrics[`shift_${column}_temperature`], r.temperature);
    for (const name of ["accuracy", "ece", "nll", "brier"]) close(`${column} ${name}`, metrics[`shift_${column}_${name}`], r.after[name]);
    close(`${column} coverage`, metrics[`shift_${column}_coverage`], r.conformal.coverage);
    close(`${column} set size`, metrics[`shift_${column}_set_size`], r.conformal.average_set_size);
  }
  close("kept T", metrics.shift_kept_temperature, cleanReport.temperature);
  for (const name of ["accuracy", "ece", "nll", "brier"]) close(`kept ${name}`, metrics[`shift_kept_${name}`], keptReport.after[name]);
  // Severity 5 is the last row of the severity table once evaluated; the shown one is marked.
  close("severity 5 coverage, kept", metrics.shift_severity_5_coverage_kept, metrics.shift_kept_coverage, 0);
  close("severity 5 coverage, refitted", metrics.shift_severity_5_coverage_refit, metrics.shift_refit_coverage, 0);
  close("severity 0 coverage", metrics.shift_severity_0_coverage_kept, metrics.shift_clean_coverage, 0);
});

test("the verdict states the numbers shown and on which side of the band each coverage lies", { timeout: 60_000 }, async () => {
  const metrics = await shownSeverity();
  const verdict = await page.textContent("#shift-verdict");
  const percent = (value) => `${(100 * value).toFixed(2)}%`;
  assert.ok(verdict.startsWith("Rotation at severity 5 (±30°): "), verdict);
  assert.ok(verdict.includes(`accuracy ${percent(metrics.shift_kept_accuracy)} (clean: ${percent(metrics.shift_clean_accuracy)})`), verdict);
  const [kept, rest] = verdict.split(" Refitted on the corrupted calibration half: ");
  const [refit, sizes] = rest.split(" The refitted sets hold ");
  assert.equal(sizes, `${metrics.shift_refit_set_size.toFixed(3)} labels on average (clean: ${metrics.shift_clean_set_size.toFixed(3)}).`);
  // The band: [1 − α, 1 − α + 1/(n + 1)] with n = 5,000 calibration images (one threshold).
  const lower = 1 - ALPHA;
  const upper = lower + 1 / 5001;
  for (const [part, coverage, name] of [[kept, metrics.shift_kept_coverage, "kept"], [refit, metrics.shift_refit_coverage, "refitted"]]) {
    assert.ok(part.includes(`Coverage ${percent(coverage)} `), `${name}: ${part}`);
    if (coverage < lower) assert.match(part, /standard deviations below the band/, `${name} ${coverage}: ${part}`);
    else if (coverage > upper) assert.match(part, /standard deviations above the band/, `${name} ${coverage}: ${part}`);
    else assert.match(part, /lies inside the guarantee band/, `${name} ${coverage}: ${part}`);
  }
  assert.match(kept, /the corrupted images are not exchangeable with the clean calibration images, so the guarantee does not cover them\.$/, kept);
  assert.doesNotMatch(refit, /not exchangeable/, refit);
  // What this network and corruption really do: with q̂ from the clean images, coverage falls
  // under 1 − α at severity 5 by more than chance; refitted, it is back within chance of the band.
  assert.ok(metrics.shift_kept_coverage < lower, `kept coverage ${metrics.shift_kept_coverage}`);
  assert.match(kept, /more than chance gives for one split/, kept);
  assert.match(refit, /inside the guarantee band|within what chance gives for one split/, refit);
});

test("the sweep: every severity of the corruption is evaluated, the chart and the table fill in, the diagram follows the recalibrate switch", { timeout: 6 * SHIFT_TIMEOUT_MS }, async (t) => {
  await shownSeverity();
  await page.waitForFunction(() => document.querySelectorAll("#shift-severities tbody tr").length === 6, null, { timeout: 5 * SHIFT_TIMEOUT_MS, polling: 500 });
  await nextFrames(page, 2);
  const metrics = await readMetrics(page);
  const rows = await page.$$eval("#shift-severities tbody tr", (trs) => trs.map((tr) => tr.cells[0].textContent));
  assert.deepEqual(rows.map((row) => row.split(" ")[0]), ["0", "1", "2", "3", "4", "5"]);
  assert.match(await page.textContent("#shift-progress"), /^Severities evaluated for the cross-entropy network: 0, 1, 2, 3, 4, 5 of 0–5\.$/);
  // What making each corrupted copy took on the page's thread, in ten parts between frames (a
  // diagnostic, not a limit).
  for (const { set, millis } of await page.evaluate(() => window.calibra.timings.corruptions)) t.diagnostic(`${set}: made in ${millis.toFixed(0)} ms`);
  // Accuracy falls as the rotation grows.
  for (let s = 1; s <= 5; s++) assert.ok(metrics[`shift_severity_${s}_accuracy`] < metrics[`shift_severity_0_accuracy`], `severity ${s}`);

  // The switch sits in the lab's sticky bar, and reaching it may scroll the diagram out of
  // view, where a figure is not redrawn: the diagram is brought into view before and after.
  await page.locator("#shift-reliability").scrollIntoViewIfNeeded();
  await nextFrames(page, 3);
  const diagram = await canvasData(page, "shift-reliability");
  await page.locator("#recalibrate").check();
  await page.locator("#shift-reliability").scrollIntoViewIfNeeded();
  await page.waitForFunction((old) => document.getElementById("shift-reliability").toDataURL() !== old, diagram, { timeout: SHIFT_TIMEOUT_MS, polling: 250 });
  assert.equal((await hashParams(page)).recalibrate, "1");

  // The lab's screenshot, with the sweep drawn.
  await page.locator("#shift-lab").evaluate((lab) => lab.scrollIntoView({ block: "start" }));
  await nextFrames(page, 3);
  const shot = path.join(REPO_ROOT, "tests/e2e/screenshots/shift.png");
  mkdirSync(path.dirname(shot), { recursive: true });
  await page.locator("#shift-lab").screenshot({ path: shot });
  if (process.env.UPDATE_SCREENSHOT) copyFileSync(shot, path.join(REPO_ROOT, "docs/shift.png"));
});

// The figure menu's CSV of figure `id`, as a reader downloads it: its rows, header first.
async function figureCsv(id) {
  const menu = page.locator("figure", { has: page.locator(`canvas#${id}`) }).locator("details.figure-menu");
  await menu.scrollIntoViewIfNeeded();
  if (!(await menu.evaluate((details) => details.open))) await menu.locator("summary").click();
  const title = await page.evaluate((figure) => window.calibra.limits.figures.find((f) => f.id === figure).title, id);
  const [file] = await Promise.all([
    page.waitForEvent("download"),
    menu.getByRole("button", { name: `Download the ${title} as CSV` }).click(),
  ]);
  await menu.locator("summary").click();
  return readFileSync(await file.path(), "utf8").trim().split(/\r?\n/).map((line) => line.split(","));
}

// Runs `action` and waits for the shift lab's next frame that shows γ = `gamma`; returns that
// frame's time (ms: the shift lab's view, the stream's replay when γ changed, the drawing).
async function afterGammaFrame(action, gamma) {
  const before = await page.evaluate(() => window.calibra.timings.shiftDraws.length);
  await action();
  await page.waitForFunction(([n, shown]) => window.calibra.timings.shiftDraws.length > n && document.getElementById("aci-gamma-value").textContent === shown, [before, String(gamma)], { timeout: 60_000, polling: "raf" });
  await nextFrames(page, 2);
  return page.evaluate(() => window.calibra.timings.shiftDraws.at(-1));
}

test("adaptive conformal inference: γ set by a pointer and the keyboard, the stream replayed in the frame of each change (its time reported), equal to `calibra report --aci-gamma` on the page's stream", { timeout: 6 * SHIFT_TIMEOUT_MS }, async (t) => {
  // LAC, so that no uniform draw differs between the page's rows and the CLI's files.
  await page.selectOption("#score", "lac");
  const gamma = page.locator("#aci-gamma");
  await page.locator("#aci-stream").scrollIntoViewIfNeeded();
  // The stream is complete once every severity of the rotation is classified (in the cache).
  await page.waitForFunction(() => (document.getElementById("aci-sentence").textContent ?? "").startsWith("The stream: the 5,000 evaluation images, the rotation rising from severity 0 to 5 in"), null, { timeout: 5 * SHIFT_TIMEOUT_MS, polling: 500 });
  await gamma.scrollIntoViewIfNeeded();
  // A click at a third of the track (γ about 0.017), then Home (0.001) and nine steps up:
  // γ = 0.01. (sliders.test.mjs taps every slider, this one too.)
  const box = await gamma.boundingBox();
  await page.mouse.click(box.x + box.width / 3, box.y + box.height / 2);
  await nextFrames(page, 2);
  const clicked = Number((await hashParams(page)).aci_gamma);
  assert.ok(clicked > 0.01 && clicked < 0.03, `the click set γ = ${clicked}`);
  await gamma.focus();
  await afterGammaFrame(() => page.keyboard.press("Home"), 0.001);
  for (let step = 2; step < 10; step++) await afterGammaFrame(() => page.keyboard.press("ArrowRight"), step / 1000);
  const millis = await afterGammaFrame(() => page.keyboard.press("ArrowRight"), 0.01);
  t.diagnostic(`the frame that replayed 5,000 images at γ = 0.01 took ${millis.toFixed(0)} ms`);
  assert.equal((await hashParams(page)).aci_gamma, "0.01");
  const m = await readMetrics(page);
  assert.equal(m.aci_images, 5000);

  // The stream as the chart's CSV gives it, made into `calibra report`'s files.
  const [header, ...steps] = await figureCsv("aci-stream");
  const column = (name) => header.indexOf(name);
  const labelsFile = path.join(native.dir, "labels.gz");
  await download(site.url, LABELS_URL, labelsFile);
  const labels = gunzipSync(readFileSync(labelsFile)).subarray(8);
  const logits = { 0: await page.evaluate(() => window.calibra.logits(0, "test")) };
  for (let s = 1; s <= 5; s++) logits[s] = await page.evaluate((name) => window.calibra.logits(0, name), `shift-rotation-${s}`);
  const row = (values, r) => values.slice(r * 10, (r + 1) * 10).join(",");
  const calibrationRows = await page.evaluate(() => window.calibra.calibrationRows());
  const write = (name, lines) => { const file = path.join(native.dir, name); writeFileSync(file, `${lines.join("\n")}\n`); return file; };
  const files = {
    logits: write("aci-calibration.csv", calibrationRows.map((r) => row(logits[0], r))),
    labels: write("aci-calibration-labels.txt", calibrationRows.map((r) => labels[r])),
    testLogits: write("aci-stream.csv", steps.map((step) => row(logits[Number(step[column("severity")])], Number(step[column("test_row")])))),
    testLabels: write("aci-stream-labels.txt", steps.map((step) => labels[Number(step[column("test_row")])])),
  };
  assert.deepEqual([...new Set(steps.map((step) => step[column("severity")]))], ["0", "1", "2", "3", "4", "5"]);
  const temperature = steps[0][column("temperature")];
  const binary = await buildCalibra();
  const args = ["report", "--logits", files.logits, "--labels", files.labels, "--test-logits", files.testLogits, "--test-labels", files.testLabels,
    "--temperature", temperature, "--score", "lac", "--alpha", String(ALPHA), "--aci-gamma", "0.01", "--json"];
  const aci = JSON.parse((await run(binary, args, { maxBuffer: 64 << 20 })).stdout).aci;
  for (const [shown, key] of [["aci_coverage", "coverage"], ["aci_set_size", "average_set_size"], ["aci_fixed_coverage", "fixed_coverage"], ["aci_fixed_set_size", "fixed_average_set_size"], ["aci_final_alpha", "final_alpha"], ["aci_bound", "miscoverage_bound"]]) {
    close(shown, m[shown], aci[key]);
  }
  close("last step's α_t", Number(steps.at(-1)[column("alpha_t")]), aci.final_alpha);
  // What the stream shows on this network: q̂ fixed loses coverage, ACI brings the long run
  // back near 1 − α with larger sets, and the sentence says so with the numbers shown.
  assert.ok(m.aci_fixed_coverage < 1 - ALPHA, `fixed ${m.aci_fixed_coverage}`);
  assert.ok(m.aci_set_size > m.aci_fixed_set_size, `sizes ${m.aci_set_size}, ${m.aci_fixed_set_size}`);
  assert.ok(Math.abs(1 - ALPHA - m.aci_coverage) <= m.aci_bound, `ACI ${m.aci_coverage} within ±${m.aci_bound}`);
  const sentence = await page.textContent("#aci-sentence");
  assert.ok(sentence.includes(`covers ${(100 * m.aci_fixed_coverage).toFixed(1)}%`), sentence);
  assert.ok(sentence.includes(`at γ = 0.01, correcting α_t after each image, covers ${(100 * m.aci_coverage).toFixed(1)}% in the long run`), sentence);
  assert.ok(sentence.includes(`The price is larger sets: ${m.aci_set_size.toFixed(2)} labels on average against ${m.aci_fixed_set_size.toFixed(2)}`), sentence);
  t.diagnostic(sentence);
  assert.match(await page.textContent("#aci-stream-summary"), /^After the last image, coverage since the start is /);
});

test("weighted conformal: without a label of the rotated images, equal to `calibra report --covariate-shift` on the page's halves, its sentence stating the numbers shown", { timeout: 3 * SHIFT_TIMEOUT_MS }, async (t) => {
  // LAC, so that no uniform draw differs between the page's rows and the CLI's files.
  await page.selectOption("#score", "lac");
  await shownSeverity();
  await page.locator("#shift-weighted").scrollIntoViewIfNeeded();
  await page.waitForFunction(() => (document.getElementById("shift-weighted-sentence").textContent ?? "") !== "", null, { timeout: SHIFT_TIMEOUT_MS, polling: 250 });
  await nextFrames(page, 2);
  const m = await readMetrics(page);

  // The page's halves as `calibra report`'s files: the clean calibration half labelled, the
  // rotated calibration half unlabelled, the rotated evaluation half labelled, rows rising.
  const labelsFile = path.join(native.dir, "labels.gz");
  await download(site.url, LABELS_URL, labelsFile);
  const labels = gunzipSync(readFileSync(labelsFile)).subarray(8);
  const clean = await page.evaluate(() => window.calibra.logits(0, "test"));
  const rotated = await page.evaluate(() => window.calibra.logits(0, "shift-rotation-5"));
  const calibrationRows = (await page.evaluate(() => window.calibra.calibrationRows())).sort((a, b) => a - b);
  const inCalibration = new Set(calibrationRows);
  const evaluationRows = [...labels.keys()].filter((r) => !inCalibration.has(r));
  const row = (values, r) => values.slice(r * 10, (r + 1) * 10).join(",");
  const write = (name, lines) => { const file = path.join(native.dir, name); writeFileSync(file, `${lines.join("\n")}\n`); return file; };
  const binary = await buildCalibra();
  const args = ["report",
    "--logits", write("weighted-calibration.csv", calibrationRows.map((r) => row(clean, r))),
    "--labels", write("weighted-calibration-labels.txt", calibrationRows.map((r) => labels[r])),
    "--test-logits", write("weighted-evaluation.csv", evaluationRows.map((r) => row(rotated, r))),
    "--test-labels", write("weighted-evaluation-labels.txt", evaluationRows.map((r) => labels[r])),
    "--covariate-shift", write("weighted-unlabelled.csv", calibrationRows.map((r) => row(rotated, r))),
    "--temperature", String(m.shift_clean_temperature), "--score", "lac", "--alpha", String(ALPHA), "--json"];
  const weighted = JSON.parse((await run(binary, args, { maxBuffer: 64 << 20 })).stdout).weighted;
  assert.equal(weighted.n_unlabelled, 5000);
  for (const [shown, key] of [["shift_weighted_coverage", "coverage"], ["shift_weighted_set_size", "average_set_size"], ["shift_weighted_ess", "effective_sample_size"], ["shift_weighted_infinite_share", "infinite_share"]]) {
    close(shown, m[shown], weighted[key]);
  }
  // The table shows the weighted column beside the kept and refitted ones of the same severity.
  const cells = await page.$$eval("#shift-weighted tbody tr", (trs) => trs.map((tr) => [...tr.cells].map((cell) => cell.textContent)));
  const percent = (value) => `${(100 * value).toFixed(2)}%`;
  assert.deepEqual(cells[0], ["coverage", percent(m.shift_kept_coverage), percent(m.shift_weighted_coverage), percent(m.shift_refit_coverage)]);
  const sentence = await page.textContent("#shift-weighted-sentence");
  t.diagnostic(sentence);
  assert.match(sentence, /^(With q̂ kept, coverage is|Weighted by the domain classifier|Weighted, coverage (reaches|rises|is))/, sentence);
  assert.ok(sentence.includes(percent(m.shift_weighted_coverage)), sentence);
  assert.ok(sentence.includes(percent(m.shift_kept_coverage)), sentence);
  assert.ok(sentence.includes(`effective sample size is ${Math.round(m.shift_weighted_ess).toLocaleString("en-US")} of 5,000 calibration images`), sentence);
  assert.ok(sentence.includes(`${percent(m.shift_weighted_infinite_share)} of the evaluation images get q̂ = +∞`), sentence);
});

test("inversion is on or off: its slider has two positions, and a link asking for more shows it on", { timeout: SHIFT_TIMEOUT_MS + 30_000 }, async () => {
  await page.goto(`${site.url}#${HASH.replace("shift=rotation&severity=5", "shift=inversion&severity=4")}`);
  await waitForInference(page);
  assert.equal((await hashParams(page)).severity, "1");
  assert.equal(await page.getAttribute("#severity", "max"), "1");
  assert.equal(await page.textContent("#severity-value"), "1 (inverted)");
  const metrics = await shownSeverity();
  assert.ok(Number.isFinite(metrics.shift_kept_accuracy));
  assert.equal(await page.locator("#shift-corrupted canvas").count(), 8);
});
