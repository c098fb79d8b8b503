// Every sentence the page writes about its numbers, checked against the numbers it shows, in the
// states where it is shown: T ∈ {0.5, 1, fitted, 5}, both networks, every score, randomized on
// and off. The computed sentences (confidence verdict, coverage verdict, per-class sentence,
// experiment caption) are checked for agreement with the readouts; the fixed sentences of the
// text are checked in the states they talk about.
//
// One tall page (every lab on screen at once, so every lab redraws on each change) driven through
// the URL hash, the page's one state.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { collectProblems, hashParams, launchBrowser, nextFrames, openSite, readMetrics, waitForInference } from "./helpers.mjs";

const INFERENCE_TIMEOUT_MS = 180_000;
const SCORES = ["lac", "aps", "raps", "saps"];
const TEMPERATURES = [0.5, 1, "fitted", 5];
// The page's split: 5,000 calibration and 5,000 evaluation images.
const N = 5000;
const M = 5000;

let site;
let browser;
let problems;
let page;
const fitted = {};

// The spread of one split's coverage, from the Beta-Binomial law, written out independently of
// the page: k = ⌈(n + 1)(1 − α)⌉, Beta(k, n + 1 − k) variance, times (n + 1 + m)/m.
function splitStandardDeviation(alpha, n = N, m = M) {
  const k = Math.ceil((n + 1) * (1 - alpha) - 1e-9);
  const a = k;
  const b = n + 1 - k;
  const variance = (a * b) / ((a + b) ** 2 * (a + b + 1));
  return Math.sqrt((variance * (a + b + m)) / m);
}

// Shows `state` (hash keys) and waits until both labs have redrawn for it. A link names only
// what differs from the defaults, so the hash the page writes is not the one set here: whether
// the labs redraw is told by the page's state, read once the hash change has been handled.
async function show(state) {
  const counts = await page.evaluate(() => [window.calibra.timings.draws.length, window.calibra.timings.conformalDraws.length]);
  const before = await page.evaluate(() => JSON.stringify(window.calibra.state));
  const hash = new URLSearchParams(Object.entries(state).map(([k, v]) => [k, String(v)])).toString();
  await page.evaluate((h) => { location.hash = h; }, hash);
  await nextFrames(page, 2);
  const changed = await page.evaluate((previous) => JSON.stringify(window.calibra.state) !== previous, before);
  if (changed) {
    await page.waitForFunction(
      ([t, c]) => window.calibra.timings.draws.length > t && window.calibra.timings.conformalDraws.length > c,
      counts,
      { timeout: INFERENCE_TIMEOUT_MS, polling: "raf" },
    );
  }
  await page.waitForFunction(() => document.body.dataset.inference === "done", null, { timeout: INFERENCE_TIMEOUT_MS });
  await nextFrames(page, 3);
  return readMetrics(page);
}

const text = (selector) => page.textContent(selector);
const pct = (value, decimals) => `${(100 * value).toFixed(decimals)}%`;

before(async () => {
  site = await openSite();
  // Tall enough for the first two labs at once (about 9,200 and 7,900 px at this width): a lab
  // draws only while it is in view, and every claim here reads both.
  browser = await launchBrowser({ viewport: { width: 1280, height: 20000 } });
  problems = collectProblems(browser.context);
  page = browser.context.pages()[0] ?? (await browser.context.newPage());
  await page.goto(site.url);
  await waitForInference(page, INFERENCE_TIMEOUT_MS);
  for (const model of ["ce", "logitnorm"]) {
    await show({ model, t: 1 });
    await waitForInference(page, INFERENCE_TIMEOUT_MS);
    fitted[model] = Number(await page.getAttribute('#fit [data-metric="fitted_temperature"]', "data-value"));
  }
});

after(async () => {
  await browser?.close();
  await site?.close();
  // Checked once every page of the file has run: a lone test would pass when run alone.
  assert.deepEqual(problems, [], "no console error, uncaught exception or failed request");
});

// The confidence verdict states the readouts' numbers and contradicts none of them: a direction
// only on the side of the mean gap. Whether the verdict is right is tested natively on networks
// whose truth is known (calibration_null_tests.rs) and below on calibrated synthetic logits.
function checkConfidenceVerdict(verdict, m, where) {
  assert.ok(verdict.includes(pct(m.accuracy, 1)) && verdict.includes(pct(m.mean_confidence, 1)), `${where}: ${verdict}`);
  assert.ok(verdict.includes(m.ece.toFixed(4)) && verdict.includes(m.ece_null_limit.toFixed(4)), `${where}: ${verdict}`);
  assert.match(verdict, /overconfident|underconfident|cannot tell|no one direction/, where);
  assert.ok(!(verdict.includes("overconfident") && m.mean_confidence <= m.accuracy), where);
  assert.ok(!(verdict.includes("underconfident") && m.mean_confidence >= m.accuracy), where);
}

// The coverage verdict's side, distance and "chance" agree with coverage, band and the law.
function checkCoverageVerdict(verdict, m, alpha, where) {
  const sd = splitStandardDeviation(alpha);
  let deviations = 0;
  if (m.coverage < m.guarantee_lower) deviations = (m.coverage - m.guarantee_lower) / sd;
  if (m.coverage > m.guarantee_upper) deviations = (m.coverage - m.guarantee_upper) / sd;
  assert.ok(Math.abs(m.coverage_deviations - deviations) < 1e-6, `${where}: page ${m.coverage_deviations}, law ${deviations}`);
  if (deviations === 0) assert.match(verdict, /inside the guarantee band/, where);
  else assert.ok(verdict.includes(`${Math.abs(deviations).toFixed(1)} standard deviations ${deviations < 0 ? "below" : "above"}`), `${where}: ${verdict}`);
  assert.equal(/is what chance gives/.test(verdict) || /inside the guarantee band/.test(verdict), Math.abs(deviations) <= 3, `${where}: ${verdict}`);
}

// The per-class sentence names the classes with the lowest and highest coverage shown.
function checkPerClass(sentence, m, where) {
  const coverages = Array.from({ length: 10 }, (_, k) => m[`coverage_class_${k}`]);
  const low = Math.min(...coverages);
  const high = Math.max(...coverages);
  assert.ok(sentence.includes(`lowest coverage is`) && sentence.includes(pct(low, 1)) && sentence.includes(pct(high, 1)), `${where}: ${sentence}`);
}

test("the verdicts agree with the readouts at T ∈ {0.5, 1, fitted, 5}, both networks, every score, randomized on and off", { timeout: 600_000 }, async (t) => {
  let states = 0;
  for (const model of ["ce", "logitnorm"]) {
    for (const temperature of TEMPERATURES) {
      const tValue = temperature === "fitted" ? fitted[model] : temperature;
      for (const score of SCORES) {
        for (const randomized of score === "lac" ? [true] : [true, false]) {
          const where = `${model}, T = ${temperature}, ${score}${randomized ? "" : " (not randomized)"}`;
          const m = await show({ model, t: tValue, score, randomized: randomized ? 1 : 0, alpha: 0.1 });
          checkConfidenceVerdict(await text("#confidence-verdict"), m, where);
          checkCoverageVerdict(await text("#coverage-verdict"), m, 0.1, where);
          checkPerClass(await text("#per-class-sentence"), m, where);
          states += 1;
        }
      }
    }
  }
  t.diagnostic(`${states} states checked`);
});

test("the lede: the cross-entropy network at T = 1 is surer than it is right", { timeout: 60_000 }, async () => {
  assert.match(await text(".lede"), /trained the usual way, with cross-entropy, is right about nine times in ten and sounds surer than that/);
  const m = await show({ model: "ce", t: 1 });
  assert.ok(m.accuracy > 0.85 && m.accuracy < 0.95, `about nine in ten: ${m.accuracy}`);
  assert.ok(m.mean_confidence > m.accuracy, `surer than right: ${m.mean_confidence} vs ${m.accuracy}`);
});

test("an overconfident network (T = 0.3) makes APS sets smaller and CovGap larger than at the fitted T", { timeout: 60_000 }, async () => {
  const cold = await show({ model: "ce", t: 0.3, score: "aps", randomized: 1 });
  const calibrated = await show({ model: "ce", t: fitted.ce, score: "aps", randomized: 1 });
  assert.ok(cold.average_set_size < calibrated.average_set_size, `sizes ${cold.average_set_size} vs ${calibrated.average_set_size}`);
  assert.ok(cold.covgap > calibrated.covgap, `CovGap ${cold.covgap} vs ${calibrated.covgap}`);
});

test("non-randomized APS: q̂ a hair below 1 with more empty and larger sets at T = 1, ties at q̂ = 1 above the band at T = 0.3; the buttons show both", { timeout: 60_000 }, async () => {
  const randomized = await show({ model: "ce", t: 1, score: "aps", randomized: 1 });
  await show({ model: "ce", t: 2, score: "lac", randomized: 1 });
  await page.click('button.preset[data-action="aps_raw_t1"]');
  await nextFrames(page, 3);
  const raw = await readMetrics(page);
  assert.equal(raw.temperature, 1);
  assert.equal(await page.inputValue("#score"), "aps");
  assert.equal(await page.isChecked("#randomized"), false);
  assert.ok(raw.qhat < 1 && raw.qhat > 1 - 1e-6, `q̂ ${raw.qhat} a hair below 1`);
  assert.match(await text('[data-metric="qhat"]'), /^1 − \d/);
  assert.ok(raw.empty_rate > randomized.empty_rate, `empty ${raw.empty_rate} vs randomized ${randomized.empty_rate}`);
  assert.ok(raw.average_set_size > randomized.average_set_size, `size ${raw.average_set_size} vs randomized ${randomized.average_set_size}`);
  await page.click('button.preset[data-action="aps_raw_cold"]');
  await nextFrames(page, 3);
  const cold = await readMetrics(page);
  assert.equal(cold.temperature, 0.3);
  assert.equal(cold.qhat, 1, "q̂ = 1 exactly");
  assert.ok(cold.coverage > cold.guarantee_upper && cold.coverage_deviations > 3, `coverage ${cold.coverage}, ${cold.coverage_deviations} sd`);
  assert.match(await text("#coverage-verdict"), /calibration scores tie with q̂/);
});

test("APS can return empty sets, randomized or not (the set-size caption and the text)", { timeout: 60_000 }, async () => {
  for (const randomized of [1, 0]) {
    const m = await show({ model: "ce", t: 1, score: "aps", randomized });
    assert.ok(m.empty_rate > 0, `randomized ${randomized}: empty ${m.empty_rate}`);
  }
});

test("RAPS's defaults differ from APS; λ = 0.01, k_reg = 5 gives exactly APS's sets at every T shown", { timeout: 120_000 }, async () => {
  const m = await show({ model: "ce", t: fitted.ce, score: "raps", randomized: 1 });
  assert.notEqual(m.compare_raps_average_set_size, m.compare_aps_average_set_size, "the defaults show what RAPS does");
  for (const temperature of TEMPERATURES) {
    const t = temperature === "fitted" ? fitted.ce : temperature;
    const weak = await show({ model: "ce", t, score: "raps", randomized: 1, raps_lambda: 0.01, k_reg: 5 });
    for (const metric of ["coverage", "average_set_size", "singleton_rate", "empty_rate"]) {
      assert.equal(weak[`compare_raps_${metric}`], weak[`compare_aps_${metric}`], `T = ${temperature}: ${metric}`);
    }
  }
  await show({ model: "ce", t: 1, raps_lambda: 0.1, k_reg: 1 });
});

test("LAC's sets move little near the fitted T and more at T = 20", { timeout: 60_000 }, async () => {
  const at = async (t) => (await show({ model: "ce", t, score: "lac" })).singleton_rate;
  const base = await at(fitted.ce);
  const near = Math.abs((await at(1)) - base);
  const far = Math.abs((await at(20)) - base);
  assert.ok(far > near, `singletons move ${near} at T = 1 and ${far} at T = 20`);
});

test("the coverage experiment's caption follows its numbers", { timeout: 120_000 }, async () => {
  for (const [t, randomized] of [[fitted.ce, 1], [1, 0]]) {
    await show({ model: "ce", t, score: "aps", randomized });
    await page.evaluate(() => { delete window.calibra.timings.experiment; });
    await page.click("#run-experiment");
    await page.waitForFunction(() => window.calibra.timings.experiment !== undefined, null, { timeout: 60_000 });
    const caption = await text("#experiment-caption");
    const mean = Number(await page.getAttribute("#experiment-summary", "data-value"));
    const theory = Math.ceil(5001 * 0.9 - 1e-9) / 5001;
    const summary = await text("#experiment-summary");
    const spread = /spread \(sd\) ([\d.]+)%/.exec(summary);
    assert.ok(spread, `summary: ${summary}`);
    const sd = Number(spread[1]) / 100;
    const centred = Math.abs(mean - theory) <= (3 * sd) / Math.sqrt(1000) + 1e-4;
    assert.equal(caption.includes("sits where the theory puts it"), centred, `T = ${t}, randomized ${randomized}: mean ${mean}, theory ${theory}: ${caption}`);
    assert.equal(caption.includes("is not where the theory puts it"), !centred, caption);
  }
});

test("each \"Try this\" button sets the state it names; its line asks the reader to look, stating no number", { timeout: 120_000 }, async () => {
  await show({ model: "logitnorm", t: 4, score: "lac", randomized: 0, mondrian: 0 });
  const expected = {
    overconfident: { model: "ce", t: "1" },
    fit: { model: "ce", t: String(fitted.ce) },
    too_cold: { model: "ce", t: "0.3" },
    logitnorm_raw: { model: "logitnorm", t: "1" },
    aps_raw_t1: { model: "ce", t: "1", score: "aps", randomized: "0" },
    aps_raw_cold: { model: "ce", t: "0.3", score: "aps", randomized: "0" },
    mondrian: { score: "aps", randomized: "1", mondrian: "1" },
  };
  const buttons = await page.$$eval(".try-this button.preset", (all) => all.map((b) => b.dataset.action));
  assert.deepEqual(buttons.sort(), Object.keys(expected).sort());
  for (const [action, entries] of Object.entries(expected)) {
    await page.click(`.try-this button.preset[data-action="${action}"]`);
    await nextFrames(page, 3);
    await page.waitForFunction(() => document.body.dataset.inference === "done", null, { timeout: INFERENCE_TIMEOUT_MS });
    const hash = await hashParams(page);
    for (const [key, value] of Object.entries(entries)) {
      // The link writes every field; T as the number it is.
      const shown = key === "t" ? Number(hash.t) : hash[key];
      assert.equal(shown, key === "t" ? Number(value) : value, `${action}: ${key}`);
    }
  }
  for (const line of await page.$$eval(".try-this li", (all) => all.map((li) => li.textContent))) {
    // A setting it names ("the T = 1 column") is not a number it states.
    const watched = line.slice(line.indexOf(":") + 1).replace(/T = [\d.]+/g, "");
    assert.doesNotMatch(watched, /\d/, `a "Try this" line states a number: ${line}`);
  }
});

test("the temperature lab's numbers are the evaluation half's, but for the one rivals column headed \"calibration half\"", async () => {
  const intro = await text("#temperature-lab .method > p:nth-of-type(2)");
  assert.match(intro, /measured on the other, evaluation half, but for the one column of the rivals table below that is headed "calibration half"/);
  const tables = await page.$$eval("#temperature-lab table", (all) => all.map((table) => ({
    caption: table.caption?.textContent ?? "",
    headers: [...table.tHead.rows[0].cells].map((cell) => cell.textContent),
  })));
  assert.ok(tables.length >= 2, `the lab's tables: ${tables.length}`);
  for (const { caption } of tables) assert.match(caption, /^Evaluation half/, `a table of the lab says which half: ${caption}`);
  const calibrationColumns = tables.flatMap(({ headers }, table) => headers
    .map((header, column) => ({ header, table, column, last: column === headers.length - 1 }))
    .filter(({ header }) => /calibration half/i.test(header)));
  assert.equal(calibrationColumns.length, 1, `one column names the calibration half: ${JSON.stringify(calibrationColumns)}`);
  assert.ok(calibrationColumns[0].last, "it is its table's last column");
  const rivals = await page.$eval("#temperature-lab table:has(#def-calibration-ece)", (table) => [...table.tHead.rows[0].cells].length);
  assert.ok(rivals > 0, "it is the rivals table's");
});
