// End-to-end tests of the conformal lab in headless Chromium: the guarantee holds on the page for
// every score and several α, the controls change what they should, the deterministic scores equal
// the native CLI's numbers, and the experiment, gallery and hash links work.
//
// One browser for the file and one page, whose cross-entropy inference runs once. The conformal
// lab redraws only when on screen, so each test scrolls it into view first.
//
// Run: bash scripts/test (its last stage), or by hand after bash scripts/build-site:
//   npm ci --prefix tests/e2e && node --test tests/e2e/conformal.test.mjs
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, test } from "node:test";
import { promisify } from "node:util";

import { LABELS_URL, Native, buildCalibra, canvasData, collectProblems, download, hashParams, launchBrowser, nextFrames, openSite, readMetrics, waitForInference } from "./helpers.mjs";

const run = promisify(execFile);

// The guarantee is 1 − α ≤ E[coverage] ≤ 1 − α + 1/(n + 1) over calibration sets; one split's
// coverage scatters around it by the Beta-Binomial standard deviation (calibration draw and the
// 5,000 evaluation images together), and the test allows three of them on each side (the rule
// the page itself uses; see docs/definitions.md, "Split conformal prediction").
const STANDARD_DEVIATIONS = 3;

// One split's standard deviation: Beta(k, n + 1 − k) variance times (n + 1 + m)/m.
function splitStandardDeviation(alpha, n = 5000, m = 5000) {
  const k = Math.ceil((n + 1) * (1 - alpha) - 1e-9);
  const variance = (k * (n + 1 - k)) / ((n + 1) ** 2 * (n + 2));
  return Math.sqrt((variance * (n + 1 + m)) / m);
}
// q̂ is the same order statistic natively and in the browser; logits differ in the last f32 bits.
const TOLERANCE_QHAT = 1e-5;
// On the page's own logits the CLI runs the same f64 arithmetic: only summation order may differ.
const TOLERANCE_SAME_LOGITS = 1e-9;
const INFERENCE_TIMEOUT_MS = 180_000;
const SCORES = ["lac", "aps", "raps", "saps"];
const ALPHAS = [0.05, 0.1, 0.2];

let site;
let browser;
let problems;
let native;
let page;

const conformalDraws = () => page.evaluate(() => window.calibra.timings.conformalDraws.length);

// Runs `action` and waits for the conformal redraw it causes.
async function afterConformalRedraw(action) {
  const before = await conformalDraws();
  await action();
  await page.waitForFunction((n) => window.calibra.timings.conformalDraws.length > n, before, { timeout: 60_000, polling: "raf" });
  await nextFrames(page, 1);
}

// Every readout once block `id` is on screen: a frame computes a block of readouts only while it
// is (the score comparison, the threshold methods), so the test scrolls to it as a reader does.
async function readWithBlock(id) {
  const before = await conformalDraws();
  const offScreen = await page.evaluate((block) => {
    const { top, bottom } = document.getElementById(block).getBoundingClientRect();
    return bottom < -300 || top > innerHeight + 300;
  }, id);
  await page.locator(`#${id}`).scrollIntoViewIfNeeded();
  if (offScreen) await page.waitForFunction((n) => window.calibra.timings.conformalDraws.length > n, before, { timeout: 60_000, polling: "raf" });
  await nextFrames(page, 1);
  return readMetrics(page);
}

// Moves a range input to `value` the way a user's drag does (an `input` event).
const setRange = (id, value) => page.evaluate(([id, value]) => {
  const input = document.getElementById(id);
  input.value = String(value);
  input.dispatchEvent(new Event("input"));
}, [id, value]);

// Puts the lab's controls in the given state, one control at a time, waiting for each redraw;
// controls already in that state are left alone (they would not redraw).
async function configure({ alpha = 0.1, score = "aps", randomized = true, mondrian = false, gallery = "all" } = {}) {
  if (Number(await page.inputValue("#alpha")) !== alpha) await afterConformalRedraw(() => setRange("alpha", alpha));
  if ((await page.inputValue("#score")) !== score) await afterConformalRedraw(() => page.selectOption("#score", score));
  // LAC has no draw: its "randomized" box is disabled and changes nothing.
  if (score !== "lac" && (await page.isChecked("#randomized")) !== randomized) await afterConformalRedraw(() => page.setChecked("#randomized", randomized));
  if ((await page.isChecked("#mondrian")) !== mondrian) await afterConformalRedraw(() => page.setChecked("#mondrian", mondrian));
  if ((await page.inputValue("#gallery-filter")) !== gallery) await afterConformalRedraw(() => page.selectOption("#gallery-filter", gallery));
}

async function showConformalLab() {
  await page.locator("#conformal-lab").scrollIntoViewIfNeeded();
  await page.waitForFunction(() => window.calibra.timings.conformalDraws.length > 0, null, { timeout: 60_000 });
  await nextFrames(page);
}

before(async () => {
  site = await openSite();
  browser = await launchBrowser();
  problems = collectProblems(browser.context);
  native = new Native(site.url);
  native.logitsFile("ce").catch(() => {});
  page = browser.context.pages()[0] ?? (await browser.context.newPage());
  await page.goto(site.url);
  await waitForInference(page, INFERENCE_TIMEOUT_MS);
  await showConformalLab();
});

after(async () => {
  await browser?.close();
  await site?.close();
  native?.close();
  // Checked once every page of the file has run: a lone test would pass when run alone.
  assert.deepEqual(problems, [], "no console error, uncaught exception or failed request");
});

test("for α in {0.05, 0.1, 0.2} and every score, coverage lies in the guarantee band ± 3 split standard deviations", { timeout: 120_000 }, async (t) => {
  for (const alpha of ALPHAS) {
    for (const score of SCORES) {
      await configure({ alpha, score });
      const m = await readMetrics(page);
      const se = splitStandardDeviation(alpha);
      assert.ok(Math.abs(m.guarantee_lower - (1 - alpha)) < 1e-12, `lower edge is 1 − α for α = ${alpha}`);
      assert.ok(Math.abs(m.guarantee_upper - (1 - alpha + 1 / 5001)) < 1e-12, `upper edge is 1 − α + 1/(n + 1) for α = ${alpha}`);
      const low = m.guarantee_lower - STANDARD_DEVIATIONS * se;
      const high = m.guarantee_upper + STANDARD_DEVIATIONS * se;
      assert.ok(m.coverage >= low && m.coverage <= high, `${score}, α = ${alpha}: coverage ${m.coverage} outside [${low}, ${high}]`);
      t.diagnostic(`${score} α=${alpha}: coverage ${m.coverage}, size ${m.average_set_size}, q̂ ${m.qhat}`);
    }
  }
});

test("switching score changes the average set size, and the comparison row of the shown score equals the readout", { timeout: 60_000 }, async () => {
  const sizes = {};
  for (const score of SCORES) {
    await configure({ score });
    const m = await readWithBlock("comparison");
    sizes[score] = m.average_set_size;
    assert.equal(m[`compare_${score}_average_set_size`], m.average_set_size, `${score}: table row = readout`);
    assert.equal(m[`compare_${score}_coverage`], m.coverage);
  }
  // The four scores build sets differently; RAPS's defaults are chosen to differ from APS.
  assert.notEqual(sizes.lac, sizes.aps, `LAC and APS: ${JSON.stringify(sizes)}`);
  assert.notEqual(sizes.aps, sizes.raps, `APS and RAPS: ${JSON.stringify(sizes)}`);
  assert.notEqual(sizes.aps, sizes.saps, `APS and SAPS: ${JSON.stringify(sizes)}`);
  assert.equal((await hashParams(page)).score, "saps");
});

// The page's logits of the cross-entropy network as CSV rows, and the served labels: the files
// `calibra report` reads to run the same f64 arithmetic as the page.
async function pageFiles() {
  const values = await page.evaluate(() => window.calibra.logits(window.calibra.limits.model_index.ce, "test"));
  const rows = [];
  for (let r = 0; r < values.length / 10; r++) rows.push(values.slice(r * 10, (r + 1) * 10).join(","));
  const pageLogits = path.join(native.dir, "page-ce.csv");
  writeFileSync(pageLogits, `${rows.join("\n")}\n`);
  const labels = path.join(native.dir, "page-labels.gz");
  await download(site.url, LABELS_URL, labels);
  return { pageLogits, labels };
}

test("every score, randomized or not, equals `calibra report` at T = 1 on the same split and draws: on the page's own logits to 1e-9, on native logits q̂ 1e-5 and rates within 2 images", { timeout: 240_000 }, async (t) => {
  const cases = [["lac", false], ...["aps", "raps", "saps"].flatMap((score) => [[score, true], [score, false]])];
  const binary = await buildCalibra();
  const { pageLogits, labels } = await pageFiles();
  for (const [score, randomized] of cases) {
    await configure({ score, randomized });
    const m = await readMetrics(page);
    const options = ["--cal-fraction", "0.5", "--seed", "0", "--temperature", "1", "--score", score, "--alpha", "0.1", "--randomized", String(randomized), "--bootstrap", "2", "--json"];
    const same = JSON.parse((await run(binary, ["report", "--logits", pageLogits, "--labels", labels, ...options], { maxBuffer: 16 << 20 })).stdout).conformal;
    for (const metric of ["qhat", "coverage", "empty_rate", "singleton_rate", "average_set_size"]) {
      assert.ok(Math.abs(m[metric] - same[metric]) <= TOLERANCE_SAME_LOGITS, `${score}${randomized ? "" : " (not randomized)"}, page logits: ${metric} page ${m[metric]}, CLI ${same[metric]}`);
    }
    // Coverage's 95% bootstrap interval: the same count of covered images, the same binomial
    // quantiles; it holds the coverage.
    for (const [end, key] of [["coverage_lo", "lower"], ["coverage_hi", "upper"]]) {
      assert.ok(Math.abs(m[end] - same.coverage_interval[key]) <= TOLERANCE_SAME_LOGITS, `${score}: ${end} page ${m[end]}, CLI ${same.coverage_interval[key]}`);
    }
    assert.ok(m.coverage_lo < m.coverage && m.coverage < m.coverage_hi, `${score}: coverage ${m.coverage} inside [${m.coverage_lo}, ${m.coverage_hi}]`);
    const expected = (await native.report("ce", { seed: 0, temperature: 1, extra: ["--score", score, "--alpha", "0.1", "--randomized", String(randomized)] })).conformal;
    const where = `${score}${randomized ? "" : " (not randomized)"}`;
    assert.ok(Math.abs(m.qhat - expected.qhat) <= TOLERANCE_QHAT, `${where}: q̂ page ${m.qhat}, native ${expected.qhat}`);
    // The page and the CLI give each image the same uniform draw; the browser's logits differ
    // from native ones only in the last f32 bits, so an image whose score sits that close to q̂
    // may flip: each rate agrees within 2 of the 5,000 images.
    const images = (value) => Math.round(value * 5000);
    for (const metric of ["coverage", "empty_rate", "singleton_rate"]) {
      assert.ok(Math.abs(images(m[metric]) - images(expected[metric])) <= 2, `${where}: ${metric} ${m[metric]} vs ${expected[metric]}`);
    }
    // Non-randomized APS and RAPS at T = 1 put q̂ a hair below 1, where the cumulative scores of
    // confident images crowd, so a label's membership can be decided by those last bits: their
    // set sizes are compared more loosely.
    const crowded = !randomized && (score === "aps" || score === "raps");
    const sizeTolerance = crowded ? 0.01 : 2 / 5000;
    assert.ok(Math.abs(m.average_set_size - expected.average_set_size) <= sizeTolerance, `${where}: size ${m.average_set_size} vs ${expected.average_set_size}`);
    t.diagnostic(`${where}: coverage page ${m.coverage}, native ${expected.coverage}`);
  }
});

test("Mondrian thresholds show ten per-class coverages and ten q̂", { timeout: 60_000 }, async () => {
  await configure({ score: "aps" });
  const marginal = await readMetrics(page);
  await configure({ score: "aps", mondrian: true });
  const m = await readMetrics(page);
  for (let k = 0; k < 10; k++) {
    assert.ok(m[`coverage_class_${k}`] >= 0 && m[`coverage_class_${k}`] <= 1, `class ${k} coverage shown`);
  }
  assert.ok(Number.isNaN(m.qhat_per_class) && !("qhat" in m), "one q̂ per class, not one for all");
  assert.equal((await page.getAttribute('[data-metric="qhat_per_class"]', "title")).split("\n").length, 10);
  const worst = (metrics) => Math.min(...Array.from({ length: 10 }, (_, k) => metrics[`coverage_class_${k}`]));
  assert.ok(worst(m) > worst(marginal), `Mondrian lifts the worst class: ${worst(marginal)} → ${worst(m)}`);
  assert.ok(m.covgap < marginal.covgap, `Mondrian shrinks CovGap: ${marginal.covgap} → ${m.covgap}`);
  assert.equal((await hashParams(page)).mondrian, "1");
});

test("the coverage experiment completes and draws its histogram", { timeout: 60_000 }, async (t) => {
  await configure({ score: "aps" });
  const blank = await canvasData(page, "experiment");
  assert.equal(await page.isVisible("#experiment"), false, "no empty chart before the first run");
  await page.click("#run-experiment");
  await page.waitForFunction(() => window.calibra.timings.experiment !== undefined, null, { timeout: 30_000 });
  const drawn = await canvasData(page, "experiment");
  assert.notEqual(drawn, blank, "the experiment canvas was drawn");
  const mean = Number(await page.getAttribute("#experiment-summary", "data-value"));
  assert.ok(Math.abs(mean - 0.9) < 0.01, `mean coverage over 1,000 splits ${mean} near 1 − α = 0.9`);
  assert.match(await page.textContent("#experiment-caption"), /Beta\(k, n \+ 1 − k\)/);
  // The PAC rank at δ = 0.1 on the same splits: below 1 − α far less often than the marginal
  // rank, in the share its caption states.
  const m = await readMetrics(page);
  assert.ok(m.pac_experiment_below < m.marginal_experiment_below / 2, `PAC ${m.pac_experiment_below}, marginal ${m.marginal_experiment_below}`);
  const caption = await page.textContent("#pac-experiment-caption");
  assert.ok(caption.includes(`(${(100 * m.pac_experiment_below).toFixed(1)}%)`), caption);
  // Conformal risk control at the default risk level of 3% on the same splits: the mean share
  // answered wrongly at most the level (within 3 standard errors of 1,000 splits of sd ≲ 0.5%),
  // some splits above it, and the caption states the numbers shown.
  assert.ok(m.risk_experiment_mean <= 0.03 + 3 * 0.005 / Math.sqrt(1000), `mean answered and wrong ${m.risk_experiment_mean}`);
  assert.ok(m.risk_experiment_above > 0 && m.risk_experiment_above < 1, `splits above ${m.risk_experiment_above}`);
  const riskCaption = await page.textContent("#risk-experiment-caption");
  assert.ok(riskCaption.startsWith("Conformal risk control at a risk level of 3%: over 1,000 splits"), riskCaption);
  assert.ok(riskCaption.includes(`answered ${(100 * m.risk_experiment_mean).toFixed(2)}% of its evaluation part wrongly`), riskCaption);
  assert.ok(riskCaption.includes(`(${(100 * m.risk_experiment_above).toFixed(1)}%)`), riskCaption);
  assert.match(caption, /^PAC at δ = 10%: over 1,000 splits/);
  t.diagnostic(`1,000 splits in ${await page.evaluate(() => window.calibra.timings.experiment)} ms`);
});

test("gallery filters show only matching images", { timeout: 60_000 }, async () => {
  // The gallery is rebuilt only near the screen.
  await page.locator("#gallery").scrollIntoViewIfNeeded();
  await configure({ score: "lac", alpha: 0.2 });
  const tiles = () => page.$$eval("#gallery .tile", (nodes) => nodes.map((n) => ({ covered: n.dataset.covered, size: Number(n.dataset.setSize) })));
  const checks = {
    misses: (tile) => tile.covered === "false",
    large: (tile) => tile.size >= 3,
    empty: (tile) => tile.size === 0,
  };
  const m = await readMetrics(page);
  for (const [filter, matches] of Object.entries(checks)) {
    await configure({ score: "lac", alpha: 0.2, gallery: filter });
    const shown = await tiles();
    assert.ok(shown.every(matches), `${filter}: every tile matches`);
    if (filter === "misses") assert.ok(shown.length > 0, "LAC at α = 0.2 misses some images");
    if (filter === "empty") assert.equal(shown.length > 0, m.empty_rate > 0, "empty sets shown exactly when there are some");
  }
  // Each evaluation image shows its Venn–Abers interval, its ends in order (the native test
  // checks them against the core's predictor); the calibration images of the extremes, none.
  await configure({ score: "lac", alpha: 0.2, gallery: "all" });
  const intervals = () => page.$$eval("#gallery .tile", (nodes) => nodes.map((n) => n.querySelector(".venn-abers")?.textContent ?? null));
  const shownIntervals = await intervals();
  assert.ok(shownIntervals.length > 0, "the gallery has tiles");
  for (const text of shownIntervals) {
    const match = /^Venn–Abers: ([01]\.\d+)–([01]\.\d+)$/.exec(text ?? "");
    assert.ok(match && Number(match[1]) < Number(match[2]), `"${text}" is an interval`);
  }
  await configure({ score: "lac", alpha: 0.2, gallery: "extremes" });
  assert.ok((await intervals()).every((text) => text === null), "calibration images show no interval");
  await configure({ score: "lac", alpha: 0.2, gallery: "misses" });
  await page.click("#gallery .tile >> nth=0");
  // The explanation is drawn on the next animation frame, not by the click itself.
  await page.locator("#explanation tbody tr").nth(9).waitFor({ state: "attached" });
  const rows = await page.$$eval("#explanation tbody tr", (trs) => trs.map((tr) => tr.className));
  assert.equal(rows.length, 10, "the explanation lists every label");

  // A keyboard reader on a tile stays on the same image when the sets change under it.
  await configure({ score: "lac", alpha: 0.2, gallery: "all" });
  const focused = await page.$("#gallery .tile >> nth=3");
  const row = await focused.getAttribute("data-row");
  await focused.focus();
  await configure({ score: "lac", alpha: 0.05, gallery: "all" });
  const after = await page.evaluate((old) => ({
    rebuilt: !old.isConnected,
    row: document.activeElement.dataset.row,
    tile: document.activeElement.classList.contains("tile"),
  }), focused);
  assert.ok(after.rebuilt, "changing α rebuilt the gallery");
  assert.deepEqual({ row: after.row, tile: after.tile }, { row, tile: true }, "focus stays on the same image's tile");
});

test("a hash link restores the conformal lab", { timeout: INFERENCE_TIMEOUT_MS + 60_000 }, async () => {
  const fresh = await browser.context.newPage();
  await fresh.goto(`${site.url}#alpha=0.15&score=raps&randomized=0&raps_lambda=0.05&k_reg=3&saps_lambda=0.4&mondrian=1&gallery=large`);
  await waitForInference(fresh, INFERENCE_TIMEOUT_MS);
  assert.equal(await fresh.inputValue("#alpha"), "0.15");
  assert.equal(await fresh.inputValue("#score"), "raps");
  assert.equal(await fresh.isChecked("#randomized"), false);
  assert.equal(await fresh.isChecked("#mondrian"), true);
  assert.equal(await fresh.inputValue("#raps-lambda"), "0.05");
  assert.equal(await fresh.inputValue("#k-reg"), "3");
  assert.equal(await fresh.inputValue("#saps-lambda"), "0.4");
  assert.equal(await fresh.inputValue("#gallery-filter"), "large");
  await fresh.locator("#conformal-lab").scrollIntoViewIfNeeded();
  await fresh.waitForFunction(() => window.calibra.timings.conformalDraws.length > 0, null, { timeout: 60_000 });
  const m = await readMetrics(fresh);
  assert.ok(Math.abs(m.guarantee_lower - 0.85) < 1e-12, "α = 0.15 is in force");
  await fresh.close();
});

test("the PAC threshold at a δ moved by the keyboard equals `calibra report --pac α,δ` on the page's own logits to 1e-9", { timeout: 120_000 }, async (t) => {
  await configure({ score: "aps" });
  const binary = await buildCalibra();
  const { pageLogits, labels } = await pageFiles();
  const delta = page.locator("#pac-delta");
  await delta.scrollIntoViewIfNeeded();
  await delta.focus();
  // From the default 0.1, ten steps of 0.01 up and one back.
  for (const key of [...Array(10).fill("ArrowRight"), "ArrowLeft"]) await afterConformalRedraw(() => page.keyboard.press(key));
  assert.equal((await hashParams(page)).delta, "0.19");
  assert.equal(await page.textContent("#pac-delta-value"), "0.19");
  const m = await readMetrics(page);
  const options = ["--cal-fraction", "0.5", "--seed", "0", "--temperature", "1", "--score", "aps", "--randomized", "true", "--pac", "0.1,0.19", "--bootstrap", "2", "--json"];
  const cli = JSON.parse((await run(binary, ["report", "--logits", pageLogits, "--labels", labels, ...options], { maxBuffer: 16 << 20 })).stdout).conformal;
  assert.equal(m.pac_k, cli.pac_k, "the PAC rank");
  for (const [shown, key] of [["pac_qhat", "qhat"], ["pac_coverage", "coverage"], ["pac_average_set_size", "average_set_size"]]) {
    assert.ok(Math.abs(m[shown] - cli[key]) <= TOLERANCE_SAME_LOGITS, `${shown}: page ${m[shown]}, CLI ${cli[key]}`);
  }
  // Above the marginal rank, and the sentence names both ranks as the table shows them.
  assert.ok(m.pac_k > m.marginal_k && m.pac_shortfall <= 0.19 && m.marginal_shortfall > 0.19);
  const sentence = await page.textContent("#pac-sentence");
  for (const rank of [m.marginal_k, m.pac_k]) assert.ok(sentence.includes(`rank k = ${rank.toLocaleString("en-US")}`), sentence);
  assert.ok(sentence.includes("(δ = 19%)"), sentence);
  t.diagnostic(`δ = 0.19: PAC k ${m.pac_k} (q̂ ${m.pac_qhat}), marginal k ${m.marginal_k}`);
});

test("selective classification at a risk level set by a pointer and the keyboard equals `calibra report --selective` on the page's own logits to 1e-9", { timeout: 120_000 }, async (t) => {
  await configure({ score: "aps" });
  const binary = await buildCalibra();
  const { pageLogits, labels } = await pageFiles();
  const risk = page.locator("#selective-risk");
  await risk.scrollIntoViewIfNeeded();
  // A click near the track's start, then the keyboard: Home (1%) and four steps up.
  const box = await risk.boundingBox();
  await afterConformalRedraw(() => page.mouse.click(box.x + 0.05 * box.width, box.y + box.height / 2));
  await risk.focus();
  await afterConformalRedraw(() => page.keyboard.press("Home"));
  for (let step = 0; step < 4; step++) await afterConformalRedraw(() => page.keyboard.press("ArrowRight"));
  assert.equal((await hashParams(page)).risk, "0.05");
  assert.equal(await page.textContent("#selective-risk-value"), "5%");
  const m = await readMetrics(page);
  const options = ["--cal-fraction", "0.5", "--seed", "0", "--temperature", "1", "--selective", "0.05", "--bootstrap", "2", "--json"];
  const cli = JSON.parse((await run(binary, ["report", "--logits", pageLogits, "--labels", labels, ...options], { maxBuffer: 16 << 20 })).stdout).selective;
  for (const [shown, key] of [["selective_threshold", "threshold"], ["selective_coverage", "coverage"], ["selective_risk", "selective_risk"], ["selective_answered_error_rate", "answered_error_rate"], ["selective_aurc", "aurc"]]) {
    assert.ok(Math.abs(m[shown] - cli[key]) <= TOLERANCE_SAME_LOGITS, `${shown}: page ${m[shown]}, CLI ${cli[key]}`);
  }
  // At T = 1 the AURC shown is the one at T = 1; the sentence states the threshold shown.
  assert.equal(m.selective_aurc, m.selective_aurc_at_one);
  const sentence = await page.textContent("#selective-sentence");
  assert.ok(sentence.includes(`a confidence above ${m.selective_threshold.toFixed(4)} at T = 1.000`), sentence);
  assert.ok(m.selective_answered_error_rate <= 0.05 + 3 * Math.sqrt((0.05 * 0.95) / 5000), `answered and wrong ${m.selective_answered_error_rate}`);
  t.diagnostic(`risk 5%: threshold ${m.selective_threshold}, answered ${m.selective_coverage}, AURC ${m.selective_aurc} (fitted T: ${m.selective_aurc_fitted})`);
});

test("worst-slab coverage, measured by a pointer and again by the keyboard, equals `calibra report --worst-slab` on the page's own logits to 1e-9, with its noise floor", { timeout: 120_000 }, async (t) => {
  await configure({ score: "aps" });
  const binary = await buildCalibra();
  const { pageLogits, labels } = await pageFiles();
  const button = page.locator("#measure-worst-slab");
  await button.scrollIntoViewIfNeeded();
  await button.click();
  await page.waitForFunction(() => window.calibra.timings.worstSlab !== undefined, null, { timeout: 30_000 });
  const byPointer = await readMetrics(page);
  // The keyboard presses it again: the same numbers.
  await page.evaluate(() => { window.calibra.timings.worstSlab = undefined; });
  await button.focus();
  await page.keyboard.press("Enter");
  await page.waitForFunction(() => window.calibra.timings.worstSlab !== undefined, null, { timeout: 30_000 });
  const m = await readMetrics(page);
  assert.equal(m.worst_slab_coverage, byPointer.worst_slab_coverage);
  const options = ["--cal-fraction", "0.5", "--seed", "0", "--temperature", "1", "--score", "aps", "--randomized", "true", "--worst-slab", "--bootstrap", "2", "--json"];
  const cli = JSON.parse((await run(binary, ["report", "--logits", pageLogits, "--labels", labels, ...options], { maxBuffer: 16 << 20 })).stdout).conditional_coverage;
  for (const [shown, key] of [["worst_slab_coverage", "worst_slab_coverage"], ["worst_slab_floor", "worst_slab_noise_floor"], ["worst_slab_rows", "worst_slab_rows"], ["covgap", "covgap"], ["covgap_floor", "covgap_noise_floor"]]) {
    assert.ok(Math.abs(m[shown] - cli[key]) <= TOLERANCE_SAME_LOGITS, `${shown}: page ${m[shown]}, CLI ${cli[key]}`);
  }
  // Below 1 − α, as the search picks the worst slab; the sentence states the numbers shown.
  assert.ok(m.worst_slab_floor < 0.9 && m.worst_slab_floor_spread > 0, `floor ${m.worst_slab_floor}`);
  const sentence = await page.textContent("#worst-slab-sentence");
  assert.ok(sentence.includes(`the worst covers ${(100 * m.worst_slab_coverage).toFixed(1)}% of its ${m.worst_slab_rows.toLocaleString("en-US")} images`), sentence);
  assert.ok(sentence.includes(`${(100 * m.worst_slab_floor).toFixed(1)}% on average here`), sentence);
  assert.match(await page.textContent("#worst-slab-summary"), /^Measured at α = 0\.10, APS, T = 1\.000, one threshold for all\.$/);
  t.diagnostic(`worst slab ${m.worst_slab_coverage} (${m.worst_slab_rows} images), floor ${m.worst_slab_floor} ± ${m.worst_slab_floor_spread}, in ${await page.evaluate(() => window.calibra.timings.worstSlab)} ms`);
});

test("marginal, Mondrian and clustered thresholds side by side equal `calibra report`, `--mondrian` and `--clustered 3` on the page's own logits to 1e-9", { timeout: 120_000 }, async (t) => {
  await configure({ score: "aps" });
  const binary = await buildCalibra();
  const { pageLogits, labels } = await pageFiles();
  const m = await readWithBlock("threshold-methods");
  const options = ["--cal-fraction", "0.5", "--seed", "0", "--temperature", "1", "--score", "aps", "--randomized", "true", "--bootstrap", "2", "--json"];
  for (const [name, extra] of [["marginal", []], ["mondrian", ["--mondrian"]], ["clustered", ["--clustered", "3"]]]) {
    const cli = JSON.parse((await run(binary, ["report", "--logits", pageLogits, "--labels", labels, ...options, ...extra], { maxBuffer: 16 << 20 })).stdout).conformal;
    const lowest = Math.min(...cli.per_class_coverage.filter((c) => c !== null));
    for (const [column, value] of [["coverage", cli.coverage], ["average_set_size", cli.average_set_size], ["covgap", cli.covgap], ["lowest_class", lowest]]) {
      const shown = m[`method_${name}_${column}`];
      assert.ok(Math.abs(shown - value) <= TOLERANCE_SAME_LOGITS, `${name} ${column}: page ${shown}, CLI ${value}`);
    }
    if (name === "clustered") {
      // The clusters named on the page are the CLI's, numbered from 1.
      const clusters = await page.textContent("#clustered-clusters");
      const found = cli.clusters.cluster_of_class.filter((c) => c !== null);
      if (found.length > 0) assert.ok(clusters.startsWith("Cluster 1: "), clusters);
      const count = found.length === 0 ? 0 : Math.max(...found) + 1;
      assert.equal((clusters.match(/[Cc]luster \d+:/g) ?? []).length, count, `${clusters} against ${JSON.stringify(cli.clusters)}`);
      t.diagnostic(`clusters: ${clusters} (${cli.clusters.clustering_rows} rows set aside)`);
    }
  }
  // The sentence states the three CovGaps and the floor shown.
  const sentence = await page.textContent("#threshold-methods-sentence");
  for (const name of ["marginal", "mondrian", "clustered"]) {
    assert.ok(sentence.includes(`${(100 * m[`method_${name}_covgap`]).toFixed(2)}%`), `${name}: ${sentence}`);
  }
  assert.ok(sentence.includes(`shows ${(100 * m.covgap_floor).toFixed(2)}% on average`), sentence);
  t.diagnostic(sentence);
});
