// The LogitNorm lab: the τ slider over every trained network (accuracy as on its card), the
// page's OOD metrics against `calibra ood` run on the page's own logits, the two sentences
// against the numbers shown in every state tried, the τ chart growing as networks are
// evaluated, ODIN computed in the browser (with its speed), and no console error.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { promisify } from "node:util";

import { buildCalibra, collectProblems, download, hashParams, LABELS_URL, launchBrowser, nextFrames, openSite, readMetrics, waitForInference } from "./helpers.mjs";

const run = promisify(execFile);

const INFERENCE_TIMEOUT_MS = 300_000;
// The page and the CLI compute the same f64 arithmetic on the same logits: only summation order
// may differ.
const TOLERANCE_METRIC = 1e-9;
// Accuracy on all 10,000 test images against the card's, which the training run computed with
// the inference code of its day: a forward pass that sums in another order differs in the last
// float bits, which may flip an arg-max near a tie; two images.
const TOLERANCE_ACCURACY = 2e-4;
const SCORES = ["msp", "max_logit", "energy"];
const METRICS = ["fpr95", "auroc", "aupr_in", "aupr_out"];

let site;
let browser;
let page;
let problems;
let scratch;
// What the page had fetched once the temperature lab was complete, before the τ lab scrolled
// into view.
let fetchedBeforeTauLab;

before(async () => {
  site = await openSite();
  browser = await launchBrowser();
  problems = collectProblems(browser.context);
  scratch = mkdtempSync(path.join(os.tmpdir(), "calibra-e2e-ood-"));
  page = await browser.context.newPage();
  const fetched = [];
  browser.context.on("request", (request) => fetched.push(new URL(request.url()).pathname));
  await page.goto(`${site.url}#tau=0.04&ood=mnist&ood_score=energy`);
  await waitForInference(page, INFERENCE_TIMEOUT_MS);
  await nextFrames(page, 4);
  fetchedBeforeTauLab = [...fetched];
  await page.locator("#ood-lab").scrollIntoViewIfNeeded();
  // The first draw, once both networks' logits on the test images and the digits are in.
  await page.waitForFunction(() => window.calibra?.timings.oodDraws.length > 0, null, { timeout: INFERENCE_TIMEOUT_MS, polling: 500 });
  await nextFrames(page, 2);
});

after(async () => {
  await browser?.close();
  await site?.close();
  rmSync(scratch, { recursive: true, force: true });
  // Checked once every page of the file has run: a lone test would pass when run alone.
  assert.deepEqual(problems, [], "no console error, uncaught exception or failed request");
});

test("a reader who stays in the first lab downloads neither the digits nor a LogitNorm network, nor the ODIN or files modules", () => {
  const files = fetchedBeforeTauLab.map((pathname) => pathname.split("/").pop());
  const modules = fetchedBeforeTauLab.filter((pathname) => /\/pkg-(odin|own-logits)\//.test(pathname));
  assert.deepEqual(modules, [], "fetched before a reader asked for ODIN or chose files");
  assert.ok(files.includes("fmnist-ce.safetensors"), `the first lab's network was fetched: ${files.join(", ")}`);
  assert.ok(files.includes("t10k-images-idx3-ubyte.gz"), `the test images were fetched: ${files.join(", ")}`);
  assert.deepEqual(files.filter((file) => file.includes("mnist-ood") || file.includes("logitnorm")), [], `fetched before the τ lab was on screen: ${files.join(", ")}`);
});

const oodDraws = () => page.evaluate(() => window.calibra?.timings.oodDraws.length ?? 0);

// Runs `action` and waits until the τ lab has been redrawn after it (which happens only once
// every logit it needs has arrived).
async function afterOodDraw(action, timeout = INFERENCE_TIMEOUT_MS) {
  const before = await oodDraws();
  await action();
  await page.waitForFunction((n) => window.calibra.timings.oodDraws.length > n, before, { timeout, polling: 200 });
  await nextFrames(page, 2);
}

// Sets hash entries (the page keeps the rest) and waits for the lab's redraw, if anything
// changed: a redraw after the page applied them (its hashchange listener, registered before
// this one, applies them at once). A redraw of the previous state, which a worker's late answer
// asks for, can land between the hash's write and its hashchange; counting it read the previous
// set's numbers on a loaded machine.
async function show(entries) {
  const params = new URLSearchParams(await hashParams(page));
  const before = params.toString();
  for (const [key, value] of Object.entries(entries)) params.set(key, String(value));
  const changes = params.toString() !== before ? params.toString() : null;
  if (changes !== null) {
    await page.evaluate((h) => {
      window.__oodDrawsWhenApplied = null;
      window.addEventListener("hashchange", () => { window.__oodDrawsWhenApplied = window.calibra.timings.oodDraws.length; }, { once: true });
      location.hash = h;
    }, changes);
    await page.waitForFunction(() => window.__oodDrawsWhenApplied !== null && window.calibra.timings.oodDraws.length > window.__oodDrawsWhenApplied, null, { timeout: INFERENCE_TIMEOUT_MS, polling: 200 });
    await nextFrames(page, 2);
  }
  return readMetrics(page);
}

const text = (selector) => page.textContent(selector);
const cellText = (metric) => page.textContent(`[data-metric="${metric}"]`);

// Each gallery column against the page's own logits: its tiles are the network's surest OOD
// images at the hash's T, surest first, each caption's confidence (within half its last shown
// decimal) and class as computed here from the logits.
async function checkGalleries(where) {
  const state = await hashParams(page);
  const { limits, columns } = await page.evaluate(() => ({
    limits: window.calibra.limits,
    columns: [...document.querySelectorAll("#ood-gallery > div")].map((column) => ({
      title: column.querySelector("h4").textContent,
      tiles: [...column.querySelectorAll(".ood-tile")].map((tile) => ({ index: Number(tile.dataset.index), caption: tile.querySelector("p").textContent })),
    })),
  }));
  const temperature = Number(state.t);
  assert.equal(await text("#ood-gallery-title"), `The OOD images each network is surest about, at T = ${temperature.toFixed(3)} (the first lab's temperature)`, where);
  const titles = state.tau === "ce" ? ["cross-entropy"] : [`LogitNorm τ = ${state.tau}`, "cross-entropy"];
  assert.deepEqual(columns.map((c) => c.title), titles, `${where}: gallery columns`);
  for (const column of columns) {
    const network = column.title === "cross-entropy" ? "ce" : state.tau;
    const model = limits.models.findIndex((m) => m.network === network);
    const logits = await page.evaluate(([i, set]) => window.calibra.logits(i, set), [model, state.ood]);
    const surest = [];
    for (let row = 0; row * limits.classes < logits.length; row++) {
      const z = logits.slice(row * limits.classes, (row + 1) * limits.classes).map((v) => v / temperature);
      const top = Math.max(...z);
      const sum = z.reduce((s, v) => s + Math.exp(v - top), 0);
      surest.push({ row, confidence: 1 / sum, predicted: z.indexOf(top) });
    }
    surest.sort((a, b) => b.confidence - a.confidence || a.row - b.row);
    assert.equal(column.tiles.length, 8, `${where}, ${column.title}: eight tiles`);
    column.tiles.forEach((tile, rank) => {
      const expected = surest[rank];
      const [, above, shown, decimals, name] = tile.caption.match(/^(> )?(\d+\.(\d+))% sure: (.+)$/) ?? [];
      assert.ok(shown !== undefined, `${where}, ${column.title}: caption "${tile.caption}"`);
      if (above) assert.ok(expected.confidence >= Number(shown) / 100, `${where}, ${column.title}, rank ${rank}: shown > ${shown}%, computed ${expected.confidence * 100}%`);
      else assert.ok(Math.abs(Number(shown) / 100 - expected.confidence) <= 0.5 * 10 ** -(decimals.length + 2) + 1e-12, `${where}, ${column.title}, rank ${rank}: shown ${shown}%, computed ${expected.confidence * 100}%`);
      assert.equal(name, limits.class_names[expected.predicted], `${where}, ${column.title}, rank ${rank}: class`);
      // A tie in confidence may order rows differently only if the confidences are equal.
      if (tile.index !== expected.row) assert.equal(surest.find((s) => s.row === tile.index)?.confidence, expected.confidence, `${where}, ${column.title}, rank ${rank}: row ${tile.index}, expected ${expected.row}`);
    });
  }
}

// The two sentences against the readouts of the state on screen.
async function checkLessons(where) {
  // The lesson's paired interval comes from the bootstrap worker, a moment after the numbers.
  await page.waitForFunction(() => !document.getElementById("ood-lesson").textContent.includes("Computing how much"), null, { timeout: 120_000, polling: 100 });
  await nextFrames(page, 2);
  const m = await readMetrics(page);
  const state = await hashParams(page);
  const lesson = await text("#ood-lesson");
  if (state.tau === "ce") {
    assert.match(lesson, /This is the cross-entropy network/, where);
    return;
  }
  const score = state.ood_score;
  const [fpr, auroc, ceFpr, ceAuroc] = [m[`fpr95_${score}`], m[`auroc_${score}`], m[`fpr95_${score}_ce`], m[`auroc_${score}_ce`]];
  if (Number.isNaN(fpr)) {
    assert.match(lesson, /is not computed yet/, where);
  } else {
    for (const metric of [`fpr95_${score}`, `fpr95_${score}_ce`]) assert.ok(lesson.includes(await cellText(metric)), `${where}: ${metric} in "${lesson}"`);
    assert.ok(lesson.includes(`AUROC ${auroc.toFixed(3)} against ${ceAuroc.toFixed(3)}`), `${where}: ${lesson}`);
    // A difference is named only on the side its paired interval lies, and the paper never.
    assert.doesNotMatch(lesson, /paper|holds/, where);
    const [, lower, upper] = lesson.match(/FPR95[^(]*\(95% interval ([+-][\d.]+) to ([+-][\d.]+)\)/).map(Number);
    assert.ok(lower <= upper, `${where}: ${lesson}`);
    if (/raises FPR95/.test(lesson)) assert.ok(fpr > ceFpr && lower > 0, `${where}: ${lesson}`);
    else if (/lowers FPR95/.test(lesson)) assert.ok(fpr < ceFpr && upper < 0, `${where}: ${lesson}`);
    else assert.ok(/FPR95 difference, [+-][\d.]+ points, is within noise/.test(lesson) && lower <= 0 && upper >= 0, `${where}: ${lesson}`);
  }
  const calibration = await text("#calibration-lesson");
  for (const name of ["network_ece_raw", "network_ece_raw_ce", "network_ece_fitted", "network_ece_fitted_ce", "network_accuracy", "network_accuracy_ce"]) {
    assert.ok(calibration.includes(await cellText(name)), `${where}: ${name} (${await cellText(name)}) in "${calibration}"`);
  }
  // A fit stopped at the slider's bound says so, in the sentence and in the table.
  const atBound = (await cellText("network_fitted_temperature")).endsWith("(bound)");
  const bound = atBound ? " (the fit stopped at the slider's bound: a T beyond it would fit better)" : "";
  assert.ok(calibration.includes(`T = ${m.network_fitted_temperature.toFixed(3)}${bound} ${m.network_fitted_temperature < 1 ? "sharpens" : "softens"}`), `${where}: ${calibration}`);
  assert.equal(calibration.includes("no worse calibrated than"), !(m.network_ece_raw > m.network_ece_raw_ce), `${where}: ${calibration}`);
}

// The page's logits of model `index` on `set`, written as CSV rows for the CLI.
async function logitsCsv(index, set) {
  const values = await page.evaluate(([i, s]) => window.calibra.logits(i, s), [index, set]);
  const classes = await page.evaluate(() => window.calibra.limits.classes);
  const rows = [];
  for (let r = 0; r < values.length / classes; r++) rows.push(values.slice(r * classes, (r + 1) * classes).join(","));
  const file = path.join(scratch, `${index}-${set}.csv`);
  writeFileSync(file, `${rows.join("\n")}\n`);
  return file;
}

test("the τ slider visits every trained network, cross-entropy last; accuracy as on each card; the sentences follow the numbers", { timeout: 12 * INFERENCE_TIMEOUT_MS }, async (t) => {
  const limits = await page.evaluate(() => window.calibra.limits);
  await show({ tau: limits.tau_steps[0] });
  await page.focus("#tau");
  const seen = [];
  for (let position = 0; position < limits.tau_steps.length; position++) {
    if (position > 0) await afterOodDraw(() => page.keyboard.press("ArrowRight"));
    const tau = (await hashParams(page)).tau;
    assert.equal(tau, limits.tau_steps[position], `slider position ${position}`);
    seen.push(tau);
    const model = limits.models.find((m) => m.network === tau);
    const card = await (await fetch(new URL(model.url.replace(".safetensors", ".json"), site.url))).json();
    const m = await readMetrics(page);
    assert.ok(Math.abs(m.network_accuracy - card.evaluation.test_before_scaling.accuracy) <= TOLERANCE_ACCURACY, `τ ${tau}: accuracy ${m.network_accuracy}, card ${card.evaluation.test_before_scaling.accuracy}`);
    assert.equal(await page.getAttribute("#tau", "aria-valuetext"), await text("#tau-value"));
    await checkLessons(`τ ${tau}`);
    t.diagnostic(`τ ${tau}: accuracy ${m.network_accuracy}, FPR95 energy ${m.fpr95_energy} (CE ${m.fpr95_energy_ce}), raw ECE ${m.network_ece_raw.toFixed(4)} -> ${m.network_ece_fitted.toFixed(4)}`);
  }
  assert.equal(seen.at(-1), "ce", "cross-entropy at the end of the slider");
  assert.equal(new Set(seen).size, limits.tau_steps.length, "every trained network once");
  const taus = seen.slice(0, -1).map(Number);
  assert.deepEqual(taus, [...taus].sort((a, b) => a - b), "τ increases along the slider");
});

test("every score's metrics equal `calibra ood` on the page's own logits (1e-9), each OOD set, T = 1 and T = 2", { timeout: 4 * INFERENCE_TIMEOUT_MS }, async () => {
  const binary = await buildCalibra();
  const limits = await page.evaluate(() => window.calibra.limits);
  const index = (network) => limits.models.findIndex((m) => m.network === network);
  for (const ood of ["mnist", "gaussian", "uniform"]) {
    for (const temperature of [1, 2]) {
      const m = await show({ tau: "0.04", ood, t: temperature, ood_score: "energy" });
      for (const [network, suffix] of [["0.04", ""], ["ce", "_ce"]]) {
        const args = ["ood", "--id-logits", await logitsCsv(index(network), "test"), "--ood-logits", await logitsCsv(index(network), ood), "--temperature", String(temperature), "--json"];
        const native = JSON.parse((await run(binary, args, { maxBuffer: 16 << 20 })).stdout);
        for (const score of SCORES) {
          const names = suffix ? ["fpr95", "auroc"] : METRICS;
          for (const metric of names) {
            const value = m[`${metric}_${score}${suffix}`];
            assert.ok(Math.abs(value - native[score][metric]) <= TOLERANCE_METRIC, `${ood}, T = ${temperature}, ${network}, ${score} ${metric}: page ${value}, CLI ${native[score][metric]}`);
          }
        }
      }
      await checkLessons(`${ood}, T = ${temperature}`);
      await checkGalleries(`${ood}, T = ${temperature}`);
    }
  }
  await show({ t: 1 });
});

test("the sentences hold for every score on every set, at T = 0.5, 1, 5 and the fitted T", { timeout: 2 * INFERENCE_TIMEOUT_MS }, async () => {
  for (const ood of ["mnist", "gaussian", "uniform"]) {
    for (const score of SCORES) {
      await show({ tau: "1", ood, ood_score: score });
      await checkLessons(`τ 1, ${ood}, ${score}`);
    }
  }
  for (const t of [0.5, 5]) {
    for (const score of SCORES) {
      await show({ tau: "0.04", ood: "mnist", ood_score: score, t });
      await checkLessons(`τ 0.04, mnist, ${score}, T = ${t}`);
      await checkGalleries(`τ 0.04, mnist, ${score}, T = ${t}`);
    }
  }
  // The first lab's Fit button, clicked without scrolling the τ lab out of view.
  await afterOodDraw(() => page.evaluate(() => document.getElementById("fit").click()));
  await checkLessons("τ 0.04, mnist, at the fitted T");
  await checkGalleries("τ 0.04, mnist, at the fitted T");
  await show({ t: 1 });
});

test("the τ chart gains a point per network evaluated, up to every trained network and seed", { timeout: 4 * INFERENCE_TIMEOUT_MS }, async () => {
  await show({ tau: "0.04", ood: "mnist", ood_score: "energy" });
  const trained = (await page.evaluate(() => window.calibra.limits)).models.length;
  assert.match(await text("#tau-points"), new RegExp(`of ${trained} networks evaluated`));
  await page.click("#evaluate-all");
  await page.waitForFunction((n) => Number(document.querySelector('[data-metric="tau_points"]').dataset.value) === n, trained, { timeout: INFERENCE_TIMEOUT_MS, polling: 500 });
  assert.equal(await text("#tau-points"), `${trained} of ${trained} networks evaluated.`);
  // The seed sentence: each network trained with several seeds, its mean over them.
  const seeds = await text("#tau-seeds");
  const { models } = await page.evaluate(() => window.calibra.limits);
  for (const network of ["ce", "0.04", "1"]) {
    const title = network === "ce" ? "cross-entropy" : `LogitNorm τ = ${network}`;
    const count = models.filter((m) => m.network === network).length;
    assert.match(seeds, new RegExp(`${title}: FPR95 [0-9.]+ on average over ${count} seeds`), seeds);
  }
});

test("one T against normalised temperature scaling: every network's T, ECE and NLL equal `calibra report --method temperature|normalized --bootstrap` on the page's logits (1e-9), the intervals as the CLI's to the digit shown, and the sentence follows them", { timeout: 4 * INFERENCE_TIMEOUT_MS }, async (t) => {
  const binary = await buildCalibra();
  const limits = await page.evaluate(() => window.calibra.limits);
  // Test 4 evaluated every network; the worker compares them one at a time.
  await page.waitForFunction(() => document.getElementById("normalized-lesson").textContent.startsWith("Against cross-entropy's"), null, { timeout: INFERENCE_TIMEOUT_MS, polling: 500 });
  await nextFrames(page, 2);
  const m = await readMetrics(page);
  const state = await page.evaluate(() => window.calibra.state);
  const labels = path.join(scratch, "t10k-labels-idx1-ubyte.gz");
  await download(site.url, LABELS_URL, labels);
  const cellText = (metric) => page.textContent(`#normalized-table [data-metric="${metric}"]`);
  const shown = (interval) => `${interval.estimate.toFixed(4)} (${interval.lower.toFixed(4)} to ${interval.upper.toFixed(4)})`;
  const networks = [...new Set(limits.models.map((model) => model.network))];
  const native = {};
  for (const network of networks) {
    const index = limits.models.findIndex((model) => model.network === network && model.seed === 0);
    const logits = await logitsCsv(index, "test");
    for (const [method, suffix] of [["temperature", "plain"], ["normalized", "normalized"]]) {
      const args = ["report", "--logits", logits, "--labels", labels, "--cal-fraction", "0.5", "--seed", String(state.split),
        "--bins", String(state.bins), "--binning", state.binning, "--method", method, "--bootstrap", "--json"];
      const report = JSON.parse((await run(binary, args, { maxBuffer: 16 << 20 })).stdout);
      const intervals = report.recalibration_intervals;
      const temperature = method === "temperature" ? report.temperature : null;
      if (temperature !== null) assert.ok(Math.abs(m[`normalized_t_plain_${network}`] - temperature) <= TOLERANCE_METRIC, `${network}: T ${m[`normalized_t_plain_${network}`]}, CLI ${temperature}`);
      for (const metric of ["ece", "nll"]) {
        const name = `normalized_${metric}_${suffix}_${network}`;
        assert.ok(Math.abs(m[name] - intervals[metric].estimate) <= TOLERANCE_METRIC, `${name}: page ${m[name]}, CLI ${intervals[metric].estimate}`);
        assert.ok(Math.abs(intervals[metric].estimate - report.recalibration[metric]) <= 1e-12, `${network} ${method}: the interval's estimate is the report's ${metric}`);
        assert.equal(await cellText(name), shown(intervals[metric]), name);
      }
      native[`${network}:${suffix}`] = intervals;
    }
    assert.match(await cellText(`normalized_t_normalized_${network}`), /^0\.\d{4}$/, `${network}: normalised T shown`);
  }
  // The sentence: cross-entropy's ECE interval, then each network of τ ≥ 0.3 with its verdict,
  // as its intervals decide it.
  const lesson = await text("#normalized-lesson");
  const ce = native["ce:plain"].ece;
  assert.ok(lesson.startsWith(`Against cross-entropy's ECE after one T, ${shown(ce)}:`), lesson);
  for (const network of networks.filter((n) => n !== "ce" && Number(n) >= 0.3)) {
    const [plain, normalized] = [native[`${network}:plain`], native[`${network}:normalized`]];
    const from = lesson.indexOf(`LogitNorm τ = ${network} has`);
    const next = lesson.indexOf(" LogitNorm τ = ", from + 1);
    const clause = lesson.slice(from, next === -1 ? undefined : next);
    assert.ok(clause.startsWith(`LogitNorm τ = ${network} has ECE ${shown(plain.ece)} after one T and ${shown(normalized.ece)} after normalised T, NLL ${shown(plain.nll)} and ${shown(normalized.nll)}:`), clause);
    const leaves = plain.ece.lower > ce.upper;
    const lowers = normalized.ece.upper < plain.ece.lower;
    if (leaves && lowers) assert.match(clause, /normalised T (repairs what one T leaves|lowers the ECE beyond the noise but not)/, clause);
    else if (leaves) assert.match(clause, /normalised T does not repair what one T leaves/, clause);
    else assert.match(clause, /one T already calibrates it as well as cross-entropy/, clause);
    assert.equal(clause.includes("its NLL too is lower beyond the noise"), normalized.nll.upper < plain.nll.lower, clause);
    t.diagnostic(`τ ${network}: ECE ${shown(plain.ece)} -> ${shown(normalized.ece)}, NLL ${shown(plain.nll)} -> ${shown(normalized.nll)}`);
  }
});

test("ODIN is computed in the browser on request, with progress, and joins the table", { timeout: 2 * INFERENCE_TIMEOUT_MS }, async (t) => {
  await show({ tau: "ce", ood: "mnist", ood_score: "odin" });
  assert.match(await text("#odin-status"), /needs a backward pass/);
  assert.equal((await readMetrics(page)).fpr95_odin, Number.NaN, "no ODIN before the button");
  const images = 12_000; // cross-entropy alone: the 10,000 test images and the 2,000 digits
  const started = Date.now();
  await page.click("#compute-odin");
  await page.waitForFunction(() => document.getElementById("odin-status").textContent.includes("is computed"), null, { timeout: 2 * INFERENCE_TIMEOUT_MS, polling: 500 });
  const seconds = (Date.now() - started) / 1000;
  await nextFrames(page, 3);
  const m = await readMetrics(page);
  for (const metric of METRICS) assert.ok(m[`${metric}_odin`] >= 0 && m[`${metric}_odin`] <= 1, `${metric}_odin = ${m[`${metric}_odin`]}`);
  assert.equal(await page.isDisabled("#compute-odin"), true, "nothing left to compute");
  await checkLessons("cross-entropy, ODIN");
  // A LogitNorm network whose ODIN scores are not computed: the sentence says so.
  await show({ tau: "0.04" });
  await checkLessons("τ 0.04, ODIN computed for cross-entropy only");
  assert.equal(await page.isDisabled("#compute-odin"), false, "the chosen network's ODIN is left to compute");
  t.diagnostic(`ODIN on ${images} images (cross-entropy, test + MNIST) in ${seconds.toFixed(1)} s: ${Math.round(images / seconds)} images/s`);
});

test("the paper's protocol: τ tuned on Gaussian noise by MSP at T = 1, then MSP at T = 1 and energy at T = 0.1 (LogitNorm) on the digits and uniform noise, as `calibra ood` computes them", { timeout: 6 * INFERENCE_TIMEOUT_MS }, async () => {
  const binary = await buildCalibra();
  const limits = await page.evaluate(() => window.calibra.limits);
  await show({ paper: 1, t: 1 });
  assert.ok(await page.isVisible("#paper-block"), "the protocol's block shows");
  await page.waitForFunction(() => document.querySelector('[data-metric="paper_auroc_energy_uniform_ce"]')?.dataset.value, null, { timeout: 4 * INFERENCE_TIMEOUT_MS, polling: 500 });
  const m = await readMetrics(page);
  const index = (network) => limits.models.findIndex((model) => model.network === network);
  const native = async (network, set, temperature) => {
    const args = ["ood", "--id-logits", await logitsCsv(index(network), "test"), "--ood-logits", await logitsCsv(index(network), set), "--temperature", String(temperature), "--json"];
    return JSON.parse((await run(binary, args, { maxBuffer: 16 << 20 })).stdout);
  };
  // The τ the paper's tuning picks: the lowest FPR95 of MSP at T = 1 on Gaussian noise.
  let best = null;
  for (const tau of limits.tau_steps.filter((step) => step !== "ce")) {
    const fpr95 = (await native(tau, "gaussian", 1)).msp.fpr95;
    if (best === null || fpr95 < best.fpr95) best = { tau, fpr95 };
  }
  assert.match(await text("#paper-selection"), new RegExp(`τ = ${best.tau} is picked`));
  for (const set of ["mnist", "uniform"]) {
    for (const [network, suffix] of [[best.tau, ""], ["ce", "_ce"]]) {
      const msp = (await native(network, set, 1)).msp;
      const energy = (await native(network, set, network === "ce" ? 1 : 0.1)).energy;
      for (const metric of ["fpr95", "auroc"]) {
        for (const [score, expected] of [["msp", msp], ["energy", energy]]) {
          const shown = m[`paper_${metric}_${score}_${set}${suffix}`];
          assert.ok(Math.abs(shown - expected[metric]) <= TOLERANCE_METRIC, `${network}, ${set}, ${score} ${metric}: page ${shown}, CLI ${expected[metric]}`);
        }
      }
    }
  }
  assert.match(await text("#paper-lesson"), /^Under the paper's protocol, on MNIST digits by MSP, /);
  await show({ paper: 0 });
  assert.equal(await page.isVisible("#paper-block"), false, "closed again");
});

test("conformal p-values: the FDR level set by a pointer and the keyboard and the OOD share by the keyboard give what `calibra ood --pvalues --fdr Q --ood-share S` computes on the page's own logits (1e-9), for energy and MSP; the sentence and the chart's text state those numbers", { timeout: 2 * INFERENCE_TIMEOUT_MS }, async (t) => {
  const binary = await buildCalibra();
  const limits = await page.evaluate(() => window.calibra.limits);
  const index = limits.models.findIndex((m) => m.network === "0.04");
  await show({ tau: "0.04", ood: "mnist", ood_score: "energy", t: 1 });
  // show() sets a hash that names every default; the page's own link replaces it within 200 ms.
  await page.waitForFunction(() => !window.calibra.hashPending);
  const written = new URLSearchParams((await page.evaluate(() => location.hash)).slice(1));
  assert.ok(!written.has("fdr") && !written.has("ood_share"), "the defaults stay out of the link");
  const fdr = page.locator("#ood-fdr");
  await fdr.scrollIntoViewIfNeeded();
  const box = await fdr.boundingBox();
  await afterOodDraw(() => page.mouse.click(box.x + 0.9 * box.width, box.y + box.height / 2));
  assert.ok(Number((await hashParams(page)).fdr) > 0.4, "a click near the track's end");
  await fdr.focus();
  await afterOodDraw(() => page.keyboard.press("Home"));
  for (let step = 0; step < 19; step++) await afterOodDraw(() => page.keyboard.press("ArrowRight"));
  const share = page.locator("#ood-share");
  await share.focus();
  await afterOodDraw(() => page.keyboard.press("Home"));
  for (let step = 0; step < 4; step++) await afterOodDraw(() => page.keyboard.press("ArrowRight"));
  const link = await hashParams(page);
  assert.deepEqual([link.fdr, link.ood_share], ["0.2", "0.05"]);
  assert.equal(await text("#ood-fdr-value"), "20%");
  assert.equal(await page.getAttribute("#ood-share", "aria-valuetext"), "OOD share 5%");
  const args = ["ood", "--id-logits", await logitsCsv(index, "test"), "--ood-logits", await logitsCsv(index, "mnist"), "--temperature", "1", "--pvalues", "--fdr", "0.2", "--ood-share", "0.05", "--seed", "0", "--json"];
  const native = JSON.parse((await run(binary, args, { maxBuffer: 64 << 20 })).stdout).pvalues;
  for (const score of ["energy", "msp"]) {
    const m = await show({ ood_score: score });
    const cli = native[score];
    const where = `${score}, q = 0.2, share 0.05`;
    assert.equal(m.pvalue_calibration, cli.n_calibration, `${where}: calibration images`);
    assert.equal(m.pvalue_discoveries, cli.discoveries, `${where}: discoveries`);
    assert.equal(m.pvalue_false_discoveries, cli.false_discoveries, `${where}: false discoveries`);
    for (const [shown, key] of [["pvalue_fdp", "false_discovery_proportion"], ["pvalue_power", "power"], ["pvalue_largest_rejected", "largest_rejected_pvalue"]]) {
      // No discovery: no largest p-value declared, a blank readout on the page and null in the CLI.
      const agree = cli[key] === null ? Number.isNaN(m[shown]) : Math.abs(m[shown] - cli[key]) <= TOLERANCE_METRIC;
      assert.ok(agree, `${where}: ${shown} page ${m[shown]}, CLI ${cli[key]}`);
    }
    const nullShare = cli.n_in_distribution / (cli.n_in_distribution + cli.n_out_of_distribution);
    assert.ok(Math.abs(m.pvalue_fdr_bound - 0.2 * nullShare) <= TOLERANCE_METRIC, `${where}: bound ${m.pvalue_fdr_bound}`);
    const batch = (cli.n_in_distribution + cli.n_out_of_distribution).toLocaleString("en-US");
    const sentence = await text("#pvalue-sentence");
    assert.ok(sentence.includes(`Each of the ${cli.n_in_distribution.toLocaleString("en-US")} test images and ${cli.n_out_of_distribution.toLocaleString("en-US")} MNIST digits`), `${where}: ${sentence}`);
    const declared = cli.discoveries === 0 ? `declares none of the ${batch} images` : `declares ${cli.discoveries.toLocaleString("en-US")} of the ${batch} images`;
    assert.ok(sentence.includes(declared), `${where}: ${sentence}`);
    assert.ok(sentence.includes(`= ${(100 * 0.2 * nullShare).toFixed(1)}%.`), `${where}: ${sentence}`);
    assert.ok((await text("#pvalue-chart-summary")).includes(`${batch} p-values by ${score === "msp" ? "MSP" : "energy"}`));
    t.diagnostic(`${where}: ${cli.discoveries} declared, ${cli.false_discoveries} false, power ${cli.power}`);
  }
  await show({ ood_score: "energy", fdr: 0.1, ood_share: 0.1 });
  await page.waitForFunction(() => !window.calibra.hashPending);
  const back = new URLSearchParams((await page.evaluate(() => location.hash)).slice(1));
  assert.ok(!back.has("fdr") && !back.has("ood_share"), "back at the default, out of the link again");
});
