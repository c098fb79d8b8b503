// The anatomy of the temperature fit in headless Chromium: the chart draws once every image is
// in, its three mistake switches work by pointer, keyboard and touch (each puts its entry in the
// link, its T on the chart and its sentence beside it), and the Brier decomposition's table
// and the CORP decompositions' equal `calibra report --json`'s `brier_decomposition` and
// `corp_*` on the page's own logits (1e-9: the same f64 code on the same f32 logits) at T = 1,
// at the fitted T and at the slider's T, and
// each mistaken fit's T and sentence equal `calibra report --mistake`'s.
//
// Run after bash scripts/build-site: node --test tests/e2e/anatomy.test.mjs
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { promisify } from "node:util";

import {
  LABELS_URL, REPO_ROOT, buildCalibra, collectProblems, download, drawnCanvasData, hashParams, launchBrowser, nextFrames, openSite, readMetrics,
  waitForInference,
} from "./helpers.mjs";

const run = promisify(execFile);

const INFERENCE_TIMEOUT_MS = 300_000;
// The page and the CLI run the same f64 code on the same f32 logits.
const TOLERANCE = 1e-9;
const TERMS = ["reliability", "resolution", "uncertainty", "within_bin"];
const CORP_TERMS = ["score", "mcb", "dsc", "unc"];
// Each switch, its link entry and its sentence.
const MISTAKES = ["evaluation-half", "probabilities", "minimise-ece"];

let site;
let browser;
let page;
let problems;
let scratch;

before(async () => {
  site = await openSite();
  browser = await launchBrowser({ hasTouch: true });
  problems = collectProblems(browser.context);
  scratch = mkdtempSync(path.join(os.tmpdir(), "calibra-anatomy-"));
  page = browser.context.pages()[0] ?? (await browser.context.newPage());
  await page.goto(site.url);
  await waitForInference(page, INFERENCE_TIMEOUT_MS);
});

after(async () => {
  await browser?.close();
  await site?.close();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
  assert.deepEqual(problems, [], "no console error, uncaught exception or failed request");
});

// `calibra report --json` on the page's own logits of the shown network, with the page's split
// and bins, at the fitted T or at `--temperature`.
async function nativeReport(extra = []) {
  const binary = await buildCalibra();
  const { values, state, classes } = await page.evaluate(() => ({
    values: window.calibra.logits(window.calibra.limits.model_index[window.calibra.state.model], "test"),
    state: window.calibra.state,
    classes: window.calibra.limits.classes,
  }));
  const rows = [];
  for (let r = 0; r < values.length / classes; r++) rows.push(values.slice(r * classes, (r + 1) * classes).join(","));
  const logits = path.join(scratch, "logits.csv");
  writeFileSync(logits, `${rows.join("\n")}\n`);
  const labels = path.join(scratch, "labels.gz");
  await download(site.url, LABELS_URL, labels);
  const args = ["report", "--logits", logits, "--labels", labels, "--cal-fraction", "0.5", "--seed", String(state.split),
    "--bins", String(state.bins), "--binning", state.binning, "--json", ...extra];
  return JSON.parse((await run(binary, args, { maxBuffer: 64 << 20 })).stdout);
}

const close = (name, actual, expected) => assert.ok(Math.abs(actual - expected) <= TOLERANCE, `${name}: page ${actual}, CLI ${expected}`);

// The anatomy block on screen, its curves computed and drawn.
async function showAnatomy() {
  await page.locator("#anatomy-block").scrollIntoViewIfNeeded();
  await page.waitForFunction(() => document.getElementById("anatomy-summary").textContent.includes("NLL is least"), null, { timeout: 60_000 });
  await drawnCanvasData(page, "temperature-anatomy", 30_000);
}

test("the chart draws once every image is in, and its text alternative states the least points beside the fit", { timeout: 120_000 }, async () => {
  await showAnatomy();
  const summary = await page.textContent("#anatomy-summary");
  const fitted = await page.evaluate(() => Number(document.querySelector('[data-metric="fitted_temperature"]').dataset.value));
  assert.ok(summary.includes(`exact fit T = ${fitted.toFixed(3)}`), summary);
  for (const [index, line] of summary.split(";").entries()) assert.match(line, /T = \d\.\d{3}/, `part ${index}: ${line}`);
});

test("each mistake switch, by pointer, keyboard and touch, enters the link and shows its T and its sentence", { timeout: 120_000 }, async () => {
  await showAnatomy();
  const ways = {
    "evaluation-half": (locator) => locator.click(),
    probabilities: async (locator) => {
      await locator.focus();
      await page.keyboard.press("Space");
    },
    "minimise-ece": (locator) => locator.tap(),
  };
  for (const mistake of MISTAKES) {
    const before = await page.locator("#temperature-anatomy").screenshot();
    await ways[mistake](page.locator(`#mistake-${mistake}`));
    await nextFrames(page, 3);
    const key = `mistake_${mistake.replace(/-/g, "_")}`;
    assert.equal((await hashParams(page))[key], "1", `${key} in the link`);
    assert.ok(await page.locator(`#mistake-${mistake}`).isChecked());
    const sentence = await page.textContent(`#mistake-${mistake}-sentence`);
    const temperature = (await readMetrics(page))[`${key}_temperature`];
    assert.ok(Number.isFinite(temperature), `${key}'s T is shown`);
    assert.ok(sentence.includes(temperature.toFixed(3)), `${sentence} states T = ${temperature}`);
    const afterSwitch = await page.locator("#temperature-anatomy").screenshot();
    assert.notDeepEqual(afterSwitch, before, `${mistake}: its line is drawn`);
  }
  assert.match(await page.textContent("#mistake-evaluation-half-sentence"), /flatter/);
  assert.match(await page.textContent("#mistake-minimise-ece-sentence"), /with 15 bins/);
  const shot = path.join(REPO_ROOT, "tests/e2e/screenshots/anatomy.png");
  mkdirSync(path.dirname(shot), { recursive: true });
  await page.locator("#anatomy-block").screenshot({ path: shot });
  // Off again: the sentence goes, the link says 0.
  await page.locator("#mistake-probabilities").click();
  await nextFrames(page, 3);
  assert.equal((await hashParams(page)).mistake_probabilities, "0");
  assert.equal(await page.textContent("#mistake-probabilities-sentence"), "");
});

test("the Brier decomposition and the CORP decompositions equal calibra report's at T = 1, at the fitted T and at the slider's T (1e-9), and their sentences state them", { timeout: 900_000 }, async () => {
  await showAnatomy();
  // A keyboard move of the temperature slider.
  await page.locator("#temperature").focus();
  await page.keyboard.press("ArrowRight");
  await page.keyboard.press("ArrowRight");
  await nextFrames(page, 3);
  const t = await page.evaluate(() => window.calibra.state.t);
  const metrics = await readMetrics(page);
  const fitted = await nativeReport();
  const atT = await nativeReport(["--temperature", String(t)]);
  for (const term of TERMS) {
    close(`${term} at T = 1`, metrics[`brier_${term}_t1`], fitted.before.brier_decomposition[term]);
    close(`${term} at the fitted T`, metrics[`brier_${term}_fitted`], fitted.after.brier_decomposition[term]);
    close(`${term} at T = ${t}`, metrics[`brier_${term}`], atT.after.brier_decomposition[term]);
  }
  const sentence = await page.textContent("#brier-decomposition-sentence");
  for (const metric of ["brier_reliability", "brier_resolution", "brier_reliability_t1", "brier_reliability_fitted", "brier_resolution_fitted"]) {
    const text = await page.locator(`[data-metric="${metric}"]`).first().textContent();
    assert.ok(sentence.includes(text), `${sentence} states ${metric} ${text}`);
  }
  assert.match(sentence, /nearly untouched/, "on the cross-entropy network the fit moves reliability, not resolution");
  // The CORP decompositions of the top label's Brier and log scores, without bins.
  for (const score of ["brier", "log"]) {
    for (const term of CORP_TERMS) {
      const name = `corp_${score}_${term}`;
      close(`${name} at T = 1`, metrics[`${name}_t1`], fitted.before[name]);
      close(`${name} at the fitted T`, metrics[`${name}_fitted`], fitted.after[name]);
      close(`${name} at T = ${t}`, metrics[name], atT.after[name]);
    }
  }
  const corpSentence = await page.textContent("#corp-decomposition-sentence");
  for (const metric of ["corp_brier_score", "corp_brier_mcb", "corp_log_dsc", "corp_brier_mcb_t1", "corp_brier_mcb_fitted", "corp_log_unc_fitted"]) {
    const text = await page.locator(`[data-metric="${metric}"]`).first().textContent();
    assert.ok(corpSentence.includes(text), `${corpSentence} states ${metric} ${text}`);
  }
  assert.ok(metrics.corp_brier_mcb_fitted < metrics.corp_brier_mcb_t1, "the fit lowers the Brier MCB");
  // The CORP diagram's text states the Brier terms at the slider's T.
  const summary = await page.textContent("#corp-reliability-summary");
  for (const term of ["score", "mcb", "dsc", "unc"]) {
    assert.ok(summary.includes(metrics[`corp_brier_${term}`].toFixed(4)), `${summary} states corp_brier_${term}`);
  }
});

test("each mistaken fit's T and sentence equal `calibra report --mistake`'s on the page's logits (1e-9)", { timeout: 900_000 }, async () => {
  await showAnatomy();
  for (const mistake of MISTAKES) {
    if (!(await page.locator(`#mistake-${mistake}`).isChecked())) await page.locator(`#mistake-${mistake}`).click();
  }
  await nextFrames(page, 3);
  const metrics = await readMetrics(page);
  for (const mistake of MISTAKES) {
    const native = (await nativeReport(["--mistake", mistake])).mistake;
    assert.equal(native.mistake, mistake);
    close(`${mistake}'s T`, metrics[`mistake_${mistake.replace(/-/g, "_")}_temperature`], native.temperature);
    assert.equal(await page.textContent(`#mistake-${mistake}-sentence`), native.sentence, `${mistake}: the page's sentence is the CLI's`);
  }
});
