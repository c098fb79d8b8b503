// The estimators table's edge cases in headless Chromium: each case chosen by pointer and by
// keyboard enters the link, its numbers equal `calibra report --case <case> --json` on the page's
// own logits at the same T (1e-9: the same f64 code on the same f32 logits), its lesson and the
// agreement sentence state the numbers shown, the slider moves T where it means something and
// is said not to where it does not, a link restores a case, and the network's own logits
// restore every number.
//
// Run after bash scripts/build-site: node --test tests/e2e/estimator-cases.test.mjs
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { promisify } from "node:util";

import { LABELS_URL, buildCalibra, collectProblems, download, hashParams, launchBrowser, nextFrames, openSite, readMetrics, waitForInference } from "./helpers.mjs";

const run = promisify(execFile);

const INFERENCE_TIMEOUT_MS = 300_000;
// The page and the CLI run the same f64 code on the same f32 logits.
const TOLERANCE = 1e-9;
// The page's readouts, each with the `calibra report --json` key it equals.
const READOUTS = {
  estimator_ece: "ece", estimator_rmsce: "rmsce", estimator_mce: "mce", estimator_classwise_ece: "classwise_ece", estimator_smece: "smece",
  ece_debiased: "ece_debiased", top_label_ece: "top_label_ece", ks_error: "ks_error",
  spiegelhalter_z: "spiegelhalter_z", spiegelhalter_p: "spiegelhalter_p", kuiper: "kuiper", kuiper_p: "kuiper_p", ks_statistic: "ks_statistic", ks_p: "ks_p",
};
// The five errors the agreement sentence compares, as it names them, with their readouts.
const COMPARED = [["ECE", "estimator_ece"], ["smooth ECE", "estimator_smece"], ["debiased L2 error", "ece_debiased"], ["top-label ECE", "top_label_ece"], ["KS error", "ks_error"]];
const CASES = ["confidence_one", "empty_bins", "base_rate", "hundred_images"];

let site;
let browser;
let page;
let problems;
let scratch;
let logitsFile;
let labelsFile;

before(async () => {
  site = await openSite();
  browser = await launchBrowser({ hasTouch: true });
  problems = collectProblems(browser.context);
  scratch = mkdtempSync(path.join(os.tmpdir(), "calibra-cases-"));
  page = browser.context.pages()[0] ?? (await browser.context.newPage());
  await page.goto(site.url);
  await waitForInference(page, INFERENCE_TIMEOUT_MS);
  const { values, classes } = await page.evaluate(() => ({
    values: window.calibra.logits(window.calibra.limits.model_index[window.calibra.state.model], "test"),
    classes: window.calibra.limits.classes,
  }));
  const rows = [];
  for (let r = 0; r < values.length / classes; r++) rows.push(values.slice(r * classes, (r + 1) * classes).join(","));
  logitsFile = path.join(scratch, "logits.csv");
  writeFileSync(logitsFile, `${rows.join("\n")}\n`);
  labelsFile = path.join(scratch, "labels.gz");
  await download(site.url, LABELS_URL, labelsFile);
});

after(async () => {
  await browser?.close();
  await site?.close();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
  assert.deepEqual(problems, [], "no console error, uncaught exception or failed request");
});

// `calibra report --json`'s `after` on the page's own logits, split and bins, for `kase` at T.
async function nativeCase(kase, temperature) {
  const binary = await buildCalibra();
  const state = await page.evaluate(() => window.calibra.state);
  const args = ["report", "--logits", logitsFile, "--labels", labelsFile, "--cal-fraction", "0.5", "--seed", String(state.split),
    "--bins", String(state.bins), "--binning", state.binning, "--temperature", String(temperature), "--case", kase.replace(/_/g, "-"), "--json"];
  return JSON.parse((await run(binary, args, { maxBuffer: 64 << 20 })).stdout).after;
}

// The table once the case's intervals and the network's at this T are in, and the agreement
// sentence says which agree.
async function settledTable() {
  await page.waitForFunction(() => ["estimator_ece_lo", "ece_lo"].every((name) => {
    const value = document.querySelector(`[data-metric="${name}"]`)?.dataset.value;
    return value !== undefined && value !== "";
  }) && !document.getElementById("estimators-agreement").textContent.startsWith("Which"), null, { timeout: 120_000 });
  await nextFrames(page, 2);
  return readMetrics(page);
}

// The agreement sentence against the intervals shown: the range it says the group shares lies
// in every member's interval and in no other's, and every other error is named with its value
// and on the side its interval lies.
function checkAgreement(sentence, metrics) {
  const shared = sentence.match(/^(.*) agree here: their 95% intervals share (\d\.\d{4})–(\d\.\d{4})\./);
  const members = shared ? shared[1].split(/, | and /).map((part) => part.replace(/^the /i, "").toLowerCase()) : [];
  const rounding = 5e-5;
  for (const [name, readout] of COMPARED) {
    const [lo, hi] = [metrics[`${readout}_lo`], metrics[`${readout}_hi`]];
    if (members.includes(name.toLowerCase())) {
      assert.ok(lo <= Number(shared[2]) + rounding && Number(shared[3]) <= hi + rounding, `${name} [${lo}, ${hi}] holds the shared ${shared[2]}–${shared[3]}: ${sentence}`);
    } else {
      const side = shared && lo > Number(shared[3]) ? "higher" : "lower";
      const value = metrics[readout].toFixed(4);
      assert.ok(sentence.includes(`(${value}) is ${side}`), `${name} (${value}) named ${side}: ${sentence}`);
    }
  }
  assert.ok(sentence.includes(`The class-wise ECE (${metrics.estimator_classwise_ece.toFixed(4)}) is not compared`), sentence);
}

// Chooses `kase` by a click or a tap on its label, or by the keyboard from the radio before it.
async function choose(kase, way) {
  const radio = page.locator(`#estimator-case input[value="${kase}"]`);
  const label = page.locator("#estimator-case label").filter({ has: page.locator(`input[value="${kase}"]`) });
  if (way === "pointer") {
    await label.click();
  } else if (way === "touch") {
    await label.tap();
  } else {
    // From the radio before it with ArrowDown, or for the first from the second with ArrowUp.
    const radios = await page.locator("#estimator-case input").evaluateAll((inputs) => inputs.map((input) => input.value));
    const index = radios.indexOf(kase);
    await page.locator(`#estimator-case input[value="${radios[index === 0 ? 1 : index - 1]}"]`).focus();
    await page.keyboard.press(index === 0 ? "ArrowUp" : "ArrowDown");
  }
  await nextFrames(page, 3);
  assert.ok(await radio.isChecked(), `${kase} checked`);
}

test("each case, by pointer, touch and keyboard, enters the link, equals calibra report --case (1e-9), and its sentences state its numbers", { timeout: 900_000 }, async () => {
  await page.locator("#estimators").scrollIntoViewIfNeeded();
  const own = await settledTable();
  for (const [index, kase] of CASES.entries()) {
    // Every case two ways, and each way (pointer, touch, keyboard) for at least two cases.
    for (const way of [["pointer", "keyboard"], ["keyboard", "touch"], ["touch", "pointer"], ["pointer", "keyboard"]][index]) {
      await choose("network", "pointer");
      await choose(kase, way);
      assert.equal((await hashParams(page)).case, kase, `${kase} by ${way} in the link`);
      const metrics = await settledTable();
      const t = await page.evaluate(() => window.calibra.state.t);
      const expected = await nativeCase(kase, kase === "base_rate" ? 1 : t);
      for (const [readout, key] of Object.entries(READOUTS)) {
        const want = expected[key] ?? Number.NaN;
        if (Number.isNaN(want)) assert.ok(Number.isNaN(metrics[readout]), `${kase}: ${readout} undefined as in the CLI`);
        else assert.ok(Math.abs(metrics[readout] - want) <= TOLERANCE, `${kase} (${way}): ${readout} page ${metrics[readout]}, CLI ${want}`);
      }
      assert.equal(metrics.estimator_images, kase === "hundred_images" ? 100 : own.estimator_images);
      checkAgreement(await page.textContent("#estimators-agreement"), metrics);
      const lesson = await page.textContent("#estimator-case-lesson");
      const ece = metrics.estimator_ece.toFixed(4);
      if (kase === "confidence_one") {
        assert.ok(lesson.includes(`ECE ${ece}, RMSCE ${metrics.estimator_rmsce.toFixed(4)}, MCE ${metrics.estimator_mce.toFixed(4)}`), lesson);
        assert.match(await page.textContent("#estimators-agreement"), /have a confidence of exactly 1\.0/);
      } else if (kase === "empty_bins") {
        assert.ok(lesson.includes(`(ECE ${ece}, MCE ${metrics.estimator_mce.toFixed(4)}`), lesson);
        // At most four confidences by construction, each filling at most one equal-width bin.
        const [, distinct, empty] = lesson.match(/(\d+) distinct confidences? in 15 bins leave (\d+) bins empty/).map(Number);
        assert.ok(distinct <= 4 && empty >= 15 - distinct, lesson);
      } else if (kase === "base_rate") {
        assert.ok(lesson.includes(`ECE is ${ece}, near 0`), lesson);
        assert.ok(metrics.estimator_ece < 0.05, `a constant base rate is nearly calibrated: ECE ${ece}`);
      } else {
        assert.ok(lesson.includes(`ECE's 95% interval is ${(metrics.estimator_ece_hi - metrics.estimator_ece_lo).toFixed(4)} wide here against ${(metrics.ece_hi - metrics.ece_lo).toFixed(4)}`), lesson);
        assert.ok(metrics.estimator_ece_hi - metrics.estimator_ece_lo > metrics.ece_hi - metrics.ece_lo, "the intervals widen on 100 images");
      }
      assert.ok(await page.locator("#error").isHidden(), "no error shown");
    }
  }
});

test("the slider moves T where it means something and is said not to for the base rates; the network's own logits restore every number", { timeout: 300_000 }, async () => {
  await choose("network", "pointer");
  const own = await settledTable();
  await choose("empty_bins", "pointer");
  const before = await settledTable();
  await page.locator("#temperature").focus();
  for (let i = 0; i < 40; i++) await page.keyboard.press("ArrowRight");
  await nextFrames(page, 3);
  const moved = await readMetrics(page);
  assert.notEqual(moved.estimator_temperature, before.estimator_temperature, "T moves the empty-bins case");
  assert.notEqual(moved.estimator_ece, before.estimator_ece);
  await choose("base_rate", "pointer");
  const rates = await settledTable();
  assert.equal(rates.estimator_temperature, 1, "the base rates at T = 1");
  assert.match(await page.textContent("#estimator-case-lesson"), /The slider's T \(now [\d.]+\) does not apply here/);
  for (let i = 0; i < 40; i++) {
    await page.locator("#temperature").focus();
    await page.keyboard.press("ArrowLeft");
  }
  await nextFrames(page, 3);
  assert.equal((await readMetrics(page)).estimator_ece, rates.estimator_ece, "T does not move the base rates");
  // Back to T = 1 and the network's own logits: every number as it was, the lesson gone, the
  // link without the case.
  await page.locator("#reset-temperature").click();
  await choose("network", "keyboard");
  const back = await settledTable();
  for (const readout of Object.keys(READOUTS)) {
    if (!Number.isNaN(own[readout])) assert.equal(back[readout], own[readout], `${readout} restored`);
  }
  assert.equal(await page.textContent("#estimator-case-lesson"), "");
  assert.equal((await hashParams(page)).case, "network");
  assert.ok(!(await page.evaluate(() => location.hash)).includes("case="), "the default is not in the link");
});

test("a link restores its case", { timeout: 300_000 }, async () => {
  const linked = await browser.context.newPage();
  await linked.goto(`${site.url}#case=hundred_images`);
  await waitForInference(linked, INFERENCE_TIMEOUT_MS);
  assert.ok(await linked.locator('#estimator-case input[value="hundred_images"]').isChecked());
  await linked.locator("#estimators").scrollIntoViewIfNeeded();
  await nextFrames(linked, 3);
  assert.equal((await readMetrics(linked)).estimator_images, 100);
  assert.match(await linked.textContent("#estimator-case-lesson"), /^The first 100 images/);
  await linked.close();
});
