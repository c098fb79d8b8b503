// The page's benchmark in headless Chromium: prints figures as a Markdown table, asserts nothing
// about speed. Run through scripts/bench (which builds the site when it is missing).
//
//   node tests/e2e/bench.mjs [--moves N] [--json]
//
// One cold visit with a fresh profile (nothing cached), then one revisit in the same profile:
//   - time to first chart: timings.firstChart, ms since navigation start to the task the page
//     posts from the frame that drew the reliability diagram, which runs once that frame is
//     painted; the median of FIRST_CHART_VISITS more cold visits, each in a fresh profile;
//   - inference: timings.inferenceDone[0] (all 10,000 images of the shown model), and images/s
//     over the inference window: from the page's first message to a worker to the last logits;
//   - slider: N programmatic moves across the range (value set + `input` dispatched, one per
//     frame), each timed twice: timings.draws (the wasm call and the canvas drawing) and input
//     event -> the next frame has painted (a rAF callback queued after the page's redraw, then a
//     task posted from it, which runs once the frame is committed); the same sweep again with
//     the smooth reliability diagram scrolled into view (a frame draws only the figures on
//     screen, and computes that diagram's bootstrap band only when it is); and once more on a
//     phone-class device (CDP: 390×844 at device scale 3, CPU throttled 4×), where every other
//     lab's slider is swept too, each with the chart or table it moves on screen;
//   - bytes: the .wasm on disk (raw, gzip -9) and every response the browser received on the
//     cold visit, workers included (playwright's request sizes: headers + body as transferred);
//   - a switch to a network not yet seen, once the first is in: from the model control's change
//     to all 10,000 of its images inferred;
//   - revisit: the page loaded again, its files from the service worker's cache (www/sw.js; the
//     page's own, as every visit here allows it) and its logits from the logits cache:
//     timings.inferenceDone[0].
//   - a slow link: one more cold visit in a fresh profile, the site served gzipped as static
//     hosts serve it (helpers.mjs serveDirectory's `gzip`) and Chromium's network emulation
//     (CDP Network.emulateNetworkConditions) at 5 Mbit/s and 100 ms of latency: first chart,
//     all 10,000 images, and every response's bytes by file;
//   - worker scaling: two more cold visits, each in a fresh profile, with the browser reporting 1
//     and then 2 logical cores (navigator.hardwareConcurrency, overridden by an init script): the
//     page runs one inference worker a core (at most four; www/start-workers.js), so one and then
//     two on the same machine.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { gzipSync } from "node:zlib";

import { SITE_DIR, chromiumArgs, chromiumVersion, launchBrowser, openSite, serveDirectory, waitForInference } from "./helpers.mjs";

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const index = args.indexOf(name);
  return index >= 0 ? args[index + 1] : fallback;
};
const MOVES = Number(option("--moves", 200));
if (!Number.isInteger(MOVES) || MOVES < 100) {
  console.error("bench: --moves takes a whole number of at least 100");
  process.exit(2);
}
const JSON_OUTPUT = args.includes("--json");
// Whole runs of the bench, one after the other: one run's figures move with whatever else runs on
// the machine, so the headline figures are given as the median and the range over the runs.
const RUNS = Number(option("--runs", 5));
if (!Number.isInteger(RUNS) || RUNS < 1) {
  console.error("bench: --runs takes a whole number of at least 1");
  process.exit(2);
}

const quantile = (values, q) => {
  const sorted = [...values].sort((a, b) => a - b);
  const position = (sorted.length - 1) * q;
  const low = Math.floor(position);
  const high = Math.ceil(position);
  return sorted[low] + (sorted[high] - sorted[low]) * (position - low);
};
const ms = (value) => `${value.toFixed(value < 10 ? 1 : 0)} ms`;
const bytes = (value) => (value >= 1 << 20 ? `${(value / (1 << 20)).toFixed(2)} MiB` : `${(value / 1024).toFixed(0)} KiB`);
const group = (value) => Math.round(value).toLocaleString("en");

function cpuModel() {
  try {
    const line = readFileSync("/proc/cpuinfo", "utf8").split("\n").find((l) => l.startsWith("model name"));
    return line ? line.split(":")[1].trim() : os.cpus()[0]?.model ?? "unknown";
  } catch {
    return os.cpus()[0]?.model ?? "unknown";
  }
}

function nproc() {
  try {
    return Number(execFileSync("nproc", { encoding: "utf8" }).trim());
  } catch {
    return os.availableParallelism();
  }
}

// Counts the inference workers (not the bootstrap worker) and the times of the first request
// to a worker and of each logits message, without touching the page's code: Worker is wrapped
// before the page runs.
function instrumentWorkers() {
  const marks = { workers: 0, firstRequest: null, firstLogits: null, lastLogits: null };
  window.__bench = marks;
  const NativeWorker = window.Worker;
  window.Worker = class extends NativeWorker {
    constructor(...rest) {
      super(...rest);
      if (new URL(rest[0], location.href).pathname.endsWith("/worker.js")) marks.workers += 1;
      this.addEventListener("message", (event) => {
        if (event.data?.status === "logits" && event.data.model === 0) {
          marks.firstLogits ??= performance.now();
          marks.lastLogits = performance.now();
        }
      });
    }

    postMessage(message, transfer) {
      if (message?.type === "load") marks.firstRequest ??= performance.now();
      return super.postMessage(message, transfer);
    }
  };
}

// Positions sweeping `steps + 1` slider values up and down in `moves` moves, with no two equal
// in a row (an unchanged value would not redraw).
function sweepPositions(moves, steps) {
  const positions = [];
  for (let i = 0; i < moves; i++) {
    const phase = (i / (moves - 1)) * 2; // 0 -> 1 -> 2: up the range, then back down
    positions.push(Math.round(steps * (phase <= 1 ? phase : 2 - phase)));
  }
  for (let i = 1; i < positions.length; i++) if (positions[i] === positions[i - 1]) positions[i] = positions[i] === 0 ? 1 : positions[i] - 1;
  return positions;
}

// Moves slider `id` through `values`; returns per-move input -> painted-frame times and the
// page's own redraw times from window.calibra.timings[timingsKey].
function sweepSlider({ id, values, timingsKey }) {
  const slider = document.getElementById(id);
  const paint = [];
  const drawsBefore = window.calibra.timings[timingsKey].length;
  return new Promise((resolve) => {
    const step = (i) => {
      if (i === values.length) {
        resolve({ paint, draws: window.calibra.timings[timingsKey].slice(drawsBefore), positions: values.length });
        return;
      }
      slider.value = String(values[i]);
      const started = performance.now();
      slider.dispatchEvent(new Event("input", { bubbles: true }));
      // The page's redraw was queued for this frame by the input handler; ours runs after it.
      requestAnimationFrame(() => {
        const channel = new MessageChannel();
        channel.port1.onmessage = () => {
          paint.push(performance.now() - started);
          step(i + 1);
        };
        channel.port2.postMessage(null);
      });
    };
    requestAnimationFrame(() => step(0));
  });
}

// The ids of the canvases in the window.
function canvasesInView() {
  return [...document.querySelectorAll("canvas")]
    .filter((canvas) => { const { top, bottom } = canvas.getBoundingClientRect(); return bottom > 0 && top < innerHeight; })
    .map((canvas) => canvas.id);
}

// Summary of one slider sweep.
function sliderFigures(sweep) {
  return {
    moves: sweep.positions,
    redraws: sweep.draws.length,
    drawMedianMs: quantile(sweep.draws, 0.5),
    drawP95Ms: quantile(sweep.draws, 0.95),
    paintMedianMs: quantile(sweep.paint, 0.5),
    paintP95Ms: quantile(sweep.paint, 0.95),
  };
}

// Waits until the page has drawn with `timingsKey` and then drawn nothing more for two seconds
// (a lab whose data arrive in parts draws once per part), at most a minute.
async function settleDraws(page, timingsKey) {
  const deadline = Date.now() + 60_000;
  let count = -1;
  for (;;) {
    const now = await page.evaluate((key) => window.calibra.timings[key].length, timingsKey);
    if ((now > 0 && now === count) || Date.now() > deadline) return;
    count = now;
    await new Promise((resolve) => setTimeout(resolve, 2000));
  }
}

// Runs `work` on a phone-class device: 390×844 CSS px at device scale 3, the CPU slowed 4×
// (CDP); then the desktop again, at the top of the page.
async function onPhone(context, page, work) {
  const cdp = await context.newCDPSession(page);
  await cdp.send("Emulation.setDeviceMetricsOverride", { width: 390, height: 844, deviceScaleFactor: 3, mobile: true });
  await cdp.send("Emulation.setCPUThrottlingRate", { rate: 4 });
  try {
    return await work();
  } finally {
    await page.evaluate(() => scrollTo(0, 0));
    await cdp.send("Emulation.setCPUThrottlingRate", { rate: 1 });
    await cdp.send("Emulation.clearDeviceMetricsOverride");
    await cdp.detach();
  }
}

// Sweeps each block's slider across its range with the block on screen: `[name, selector of what
// is brought on screen, slider id, timings key, preparation in the page or null]`.
async function sweepBlocks(page, blocks) {
  const figures = {};
  for (const [name, selector, id, timingsKey, prepare] of blocks) {
    if (prepare) await page.evaluate(prepare);
    await page.evaluate((selector) => document.querySelector(selector).scrollIntoView({ block: "center" }), selector);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const range = await page.evaluate((id) => { const input = document.getElementById(id); return [Number(input.min), Number(input.max), Number(input.step) || 1]; }, id);
    const steps = Math.round((range[1] - range[0]) / range[2]);
    const values = sweepPositions(MOVES, steps).map((i) => String(range[0] + i * range[2]));
    figures[name] = { ...sliderFigures(await page.evaluate(sweepSlider, { id, values, timingsKey })), onScreen: await page.evaluate(canvasesInView) };
  }
  return figures;
}

const EXPERIMENT_RUNS = 5;

// Cold visits, a fresh profile each, whose median is the first chart's figure: on a 2-core
// machine one visit's first chart moves with whatever else runs there (453–646 ms for one build
// within minutes), by more than a run of the bench should rest on. Every visit's value is
// printed.
const FIRST_CHART_VISITS = 5;

// One cold visit in a fresh profile, until its first chart is painted: its time.
async function firstChartVisit(site) {
  const browser = await launchBrowser({ serviceWorkers: "allow" });
  try {
    const page = await browser.context.newPage();
    await page.goto(site.url);
    // Polled by a timer, as waitForInference polls: polled every animation frame (playwright's
    // default), the check itself ran in each of the page's frames.
    await page.waitForFunction(() => (window.calibra?.timings.firstChart ?? null) !== null, null, { timeout: 120_000, polling: 100 });
    return await page.evaluate(() => window.calibra.timings.firstChart);
  } finally {
    await browser.close();
  }
}

// One cold visit (a fresh profile: no cache) with the browser reporting `cores` logical cores,
// from which the page picks its number of inference workers: how inference scales with them.
async function coldInference(site, cores) {
  const browser = await launchBrowser({ serviceWorkers: "allow" });
  try {
    const page = await browser.context.newPage();
    await page.addInitScript((reported) => {
      Object.defineProperty(Navigator.prototype, "hardwareConcurrency", { get: () => reported });
    }, cores);
    await page.addInitScript(instrumentWorkers);
    await page.goto(site.url);
    await waitForInference(page, 600_000);
    const { timings, bench } = await page.evaluate(() => ({ timings: window.calibra.timings, bench: window.__bench }));
    const windowMs = timings.inferenceDone[0] - bench.firstRequest;
    return { cores, workers: bench.workers, windowMs, imagesPerSecond: 10_000 / (windowMs / 1000), doneMs: timings.inferenceDone[0] };
  } finally {
    await browser.close();
  }
}

// A blog reader's slow link: 5 Mbit/s both ways, 100 ms of latency.
const SLOW_LINK = { mbits: 5, latencyMs: 100 };

// Records every response `context` receives: its path, status and bytes as transferred.
function recordResponses(context) {
  const responses = [];
  context.on("requestfinished", async (request) => {
    const sizes = await request.sizes().catch(() => null);
    const response = await request.response().catch(() => null);
    if (sizes && response) {
      responses.push({ path: new URL(request.url()).pathname, status: response.status(), body: sizes.responseBodySize, headers: sizes.responseHeadersSize });
    }
  });
  return responses;
}

// The responses' bytes (body + headers) by file, largest first, and their total.
function bytesByFile(responses) {
  const byFile = new Map();
  for (const r of responses) byFile.set(r.path, (byFile.get(r.path) ?? 0) + r.body + r.headers);
  const files = [...byFile].map(([file, size]) => ({ file, bytes: size })).sort((a, b) => b.bytes - a.bytes);
  return { total: files.reduce((sum, f) => sum + f.bytes, 0), requests: responses.length, files };
}

// One cold visit over SLOW_LINK, the site served gzipped from site/.
async function slowLinkVisit() {
  const site = await serveDirectory(SITE_DIR, { gzip: true });
  const browser = await launchBrowser({ serviceWorkers: "allow" });
  try {
    const responses = recordResponses(browser.context);
    const page = await browser.context.newPage();
    const cdp = await browser.context.newCDPSession(page);
    await cdp.send("Network.enable");
    const bytesPerSecond = (SLOW_LINK.mbits * 1e6) / 8;
    await cdp.send("Network.emulateNetworkConditions", {
      offline: false, latency: SLOW_LINK.latencyMs, downloadThroughput: bytesPerSecond, uploadThroughput: bytesPerSecond,
    });
    await page.goto(site.url);
    await waitForInference(page, 600_000);
    const timings = await page.evaluate(() => window.calibra.timings);
    await new Promise((resolve) => setTimeout(resolve, 200));
    return { ...SLOW_LINK, firstChartMs: timings.firstChart, inferenceDoneMs: timings.inferenceDone[0], transfer: bytesByFile(responses) };
  } finally {
    await browser.close();
    await site.close();
  }
}

// One run of the bench: every figure, as `printRun` prints them.
async function measure() {
  const site = await openSite();
  const browser = await launchBrowser({ serviceWorkers: "allow" });
  const { context } = browser;
  const responses = recordResponses(context);
  try {
    const page = context.pages()[0] ?? (await context.newPage());
    await page.addInitScript(instrumentWorkers);
    await page.goto(site.url);
    await waitForInference(page, 600_000);
    const visit = await page.evaluate(() => ({
      ...window.calibra.timings,
      bench: window.__bench,
      hardwareConcurrency: navigator.hardwareConcurrency,
      userAgent: navigator.userAgent,
      pageRate: document.getElementById("progress-text").textContent,
    }));
    const sweep = await page.evaluate(sweepSlider, { id: "temperature", values: sweepPositions(MOVES, 1000), timingsKey: "draws" });
    // The same sweep with the smooth reliability diagram on screen (and its bootstrap band
    // computed), the slider in its sticky bar above it.
    await page.locator("#smooth-reliability").scrollIntoViewIfNeeded();
    await page.waitForFunction(() => window.calibra.timings.draws.length > 0 && document.getElementById("smooth-reliability").width > 300, null, { timeout: 30_000 });
    const onScreen = await page.evaluate(canvasesInView);
    const smoothSweep = await page.evaluate(sweepSlider, { id: "temperature", values: sweepPositions(MOVES, 1000), timingsKey: "draws" });
    await page.evaluate(() => scrollTo(0, 0));
    // The conformal lab draws only on screen: bring it in, then move α (0.01 to 0.30).
    await page.locator("#conformal-lab").scrollIntoViewIfNeeded();
    await page.waitForFunction(() => window.calibra.timings.conformalDraws.length > 0, null, { timeout: 30_000 });
    const alphas = sweepPositions(MOVES, 29).map((i) => ((i + 1) / 100).toFixed(2));
    const alphaSweep = await page.evaluate(sweepSlider, { id: "alpha", values: alphas, timingsKey: "conformalDraws" });
    const experiments = [];
    for (let run = 0; run < EXPERIMENT_RUNS; run++) {
      await page.evaluate(() => { delete window.calibra.timings.experiment; });
      await page.click("#run-experiment");
      experiments.push(await page.evaluate(() => window.calibra.timings.experiment));
    }
    // A phone-class device: 390×844 CSS px at device scale 3, the CPU slowed 4× (CDP), the
    // reliability diagram in view; then the desktop again.
    const { phoneOnScreen, phoneSweep, phoneBlocks } = await onPhone(context, page, async () => {
      await page.evaluate(() => document.getElementById("reliability").scrollIntoView({ block: "center" }));
      await new Promise((resolve) => setTimeout(resolve, 1000));
      const phoneOnScreen = await page.evaluate(canvasesInView);
      const phoneSweep = await page.evaluate(sweepSlider, { id: "temperature", values: sweepPositions(MOVES, 1000), timingsKey: "draws" });
      // The same device, the blocks added since: the T slider with an edge case of the
      // estimators table chosen (a softmax pass, a smooth-ECE search and the estimators on its
      // rows each frame) and the table on screen, then the cumulative-differences plot; with
      // the network's own images, the CORP diagram and the cumulative-differences plot on
      // screen; then the sliders of the conformal lab (α, PAC δ, the risk level), each with the
      // chart it moves on screen.
      const phoneBlocks = await sweepBlocks(page, [
        ["edge case (a confidence of exactly 1.0), estimators table", "#estimators", "temperature", "draws", () => document.querySelector('#estimator-case input[value="confidence_one"]').click()],
        ["edge case (a confidence of exactly 1.0), cumulative-differences plot", "#cumulative-differences", "temperature", "draws", null],
        ["CORP reliability diagram", "#corp-reliability", "temperature", "draws", () => document.querySelector('#estimator-case input[value="network"]').click()],
        ["cumulative-differences plot", "#cumulative-differences", "temperature", "draws", null],
        ["α slider, conformal lab", "#conformal-lab canvas", "alpha", "conformalDraws", null],
        ["PAC δ slider, conformal lab", "#pac-delta", "pac-delta", "conformalDraws", null],
        ["risk slider, selective classification", "#risk-coverage", "selective-risk", "conformalDraws", null],
        // The score's parameters, each with its score chosen, then the page's default score.
        ["RAPS λ slider, conformal lab", "#conformal-lab canvas", "raps-lambda", "conformalDraws", () => { const score = document.getElementById("score"); score.value = "raps"; score.dispatchEvent(new Event("change", { bubbles: true })); }],
        ["RAPS k_reg slider, conformal lab", "#conformal-lab canvas", "k-reg", "conformalDraws", null],
        ["SAPS λ slider, conformal lab", "#conformal-lab canvas", "saps-lambda", "conformalDraws", () => { const score = document.getElementById("score"); score.value = "saps"; score.dispatchEvent(new Event("change", { bubbles: true })); }],
      ]);
      await page.evaluate(() => { const score = document.getElementById("score"); score.value = "aps"; score.dispatchEvent(new Event("change", { bubbles: true })); });
      return { phoneOnScreen, phoneSweep, phoneBlocks };
    });
    // Let the last requestfinished handlers record their sizes; the switch's, the later labs'
    // and the revisit's are not counted.
    await new Promise((resolve) => setTimeout(resolve, 200));
    const coldResponses = responses.slice();
    // A switch to the second network, which no worker has loaded yet; then back.
    const switchMs = await page.evaluate(async () => {
      const select = document.getElementById("model");
      select.value = select.options[1].value;
      const started = performance.now();
      select.dispatchEvent(new Event("change", { bubbles: true }));
      while (!(1 in window.calibra.timings.inferenceDone)) await new Promise((resolve) => setTimeout(resolve, 20));
      return window.calibra.timings.inferenceDone[1] - started;
    });
    await page.selectOption("#model", "ce");
    // The shift and τ labs' data (their logits, the adaptive stream, the p-values), computed
    // once at full speed; then, on the phone-class device, the shift lab's γ (which replays the
    // stream of 5,000 images) and the τ lab's FDR level, each with its chart on screen.
    for (const [selector, timingsKey] of [["#aci-stream", "shiftDraws"], ["#ood-pvalues", "oodDraws"]]) {
      await page.locator(selector).scrollIntoViewIfNeeded();
      await settleDraws(page, timingsKey);
    }
    Object.assign(phoneBlocks, await onPhone(context, page, () => sweepBlocks(page, [
      ["γ slider, adaptive conformal (replays the stream)", "#aci-stream", "aci-gamma", "shiftDraws", null],
      ["FDR slider, conformal p-values", "#ood-pvalues", "ood-fdr", "oodDraws", null],
      ["OOD share slider, conformal p-values", "#ood-pvalues", "ood-share", "oodDraws", null],
    ])));
    // A revisit in the same profile: the files come from the service worker, the logits from
    // the logits cache.
    await page.evaluate(() => window.calibra.cacheSettled());
    await page.evaluate(() => window.calibra.offlineKept?.());
    // A new navigation (not a reload, which would restore the conformal lab's scroll position).
    await page.goto(site.url);
    await waitForInference(page, 600_000);
    const revisit = await page.evaluate(() => ({
      doneMs: window.calibra.timings.inferenceDone[0],
      firstChartMs: window.calibra.timings.firstChart,
      fromCache: !document.getElementById("cache-note").hidden,
      inferred: window.__bench.firstLogits !== null,
    }));
    await page.close();

    const firstCharts = [];
    for (let i = 0; i < FIRST_CHART_VISITS; i++) firstCharts.push(await firstChartVisit(site));
    // Worker scaling: the page runs one worker a core (at most four).
    const scaling = [];
    for (const cores of [1, 2]) scaling.push(await coldInference(site, cores));
    const slowLink = await slowLinkVisit();
    const wasm = (dir) => {
      const bytes = readFileSync(path.join(SITE_DIR, dir, "calibra_bg.wasm"));
      return { module: `${dir}/calibra_bg.wasm`, raw: bytes.length, gzip: gzipSync(bytes, { level: 9 }).length };
    };
    const inferenceMs = visit.inferenceDone[0] - visit.bench.firstRequest;
    const results = {
      firstChartMs: quantile(firstCharts, 0.5),
      firstChartVisitsMs: firstCharts,
      inferenceDoneMs: visit.inferenceDone[0],
      inferenceWindowMs: inferenceMs,
      imagesPerSecond: 10_000 / (inferenceMs / 1000),
      // After the first batch: without the workers' start-up (wasm compile, model load).
      imagesPerSecondSteady: (10_000 - 250) / ((visit.bench.lastLogits - visit.bench.firstLogits) / 1000),
      workers: visit.bench.workers,
      slider: sliderFigures(sweep),
      smoothSlider: { ...sliderFigures(smoothSweep), onScreen },
      phoneSlider: { ...sliderFigures(phoneSweep), onScreen: phoneOnScreen },
      phoneBlocks,
      alphaSlider: sliderFigures(alphaSweep),
      switchMs,
      revisit,
      slowLink,
      scaling,
      experiment: { runs: experiments.length, medianMs: quantile(experiments, 0.5), maxMs: Math.max(...experiments) },
      wasm: ["pkg", "pkg-bootstrap", "pkg-worker", "pkg-odin", "pkg-own-logits"].map(wasm),
      transfer: bytesByFile(coldResponses),
      machine: {
        nproc: nproc(),
        hardwareConcurrency: visit.hardwareConcurrency,
        cpu: cpuModel(),
        load: os.loadavg().map((l) => l.toFixed(2)).join(" "),
        chromium: chromiumVersion(),
        flags: chromiumArgs().join(" "),
        node: process.version,
      },
    };

    return results;
  } finally {
    await browser.close();
    await site.close();
  }
}

// The headline figures of every run: each one's median and range over the runs.
function spread(runs) {
  const figures = {
    "time to first chart (each run: the median of its cold visits)": (r) => r.firstChartMs,
    "all 10,000 images inferred": (r) => r.inferenceDoneMs,
    "slider redraw p95": (r) => r.slider.drawP95Ms,
    "phone-class slider redraw p95": (r) => r.phoneSlider.drawP95Ms,
    "revisit, every logit in": (r) => r.revisit.doneMs,
    "slow link, first chart": (r) => r.slowLink.firstChartMs,
    "slow link, all images": (r) => r.slowLink.inferenceDoneMs,
  };
  return Object.entries(figures).map(([name, read]) => {
    const values = runs.map(read);
    return { name, medianMs: quantile(values, 0.5), minMs: Math.min(...values), maxMs: Math.max(...values), valuesMs: values };
  });
}

// One run's full table, and the bytes of its cold visit by file.
function printRun(results) {
  const inferenceMs = results.inferenceWindowMs;
  const s = results.slider;
  const a = results.alphaSlider;
  const m = results.smoothSlider;
  const p = results.phoneSlider;
  const rows = [
    [`time to first chart, painted (from navigation start; median of ${FIRST_CHART_VISITS} cold visits)`, `${ms(results.firstChartMs)} (${results.firstChartVisitsMs.map(ms).join(", ")})`],
    ["all 10,000 images inferred (from navigation start)", ms(results.inferenceDoneMs)],
    ["inference throughput", `${group(results.imagesPerSecond)} images/s over ${(inferenceMs / 1000).toFixed(1)} s from the model request to the last logits; ${group(results.imagesPerSecondSteady)} images/s after the first batch (${results.workers} worker${results.workers === 1 ? "" : "s"})`],
    [`slider redraw, wasm call + drawing (${s.redraws} redraws, ${s.moves} moves)`, `median ${ms(s.drawMedianMs)}, p95 ${ms(s.drawP95Ms)}`],
    ["slider input event → next painted frame", `median ${ms(s.paintMedianMs)}, p95 ${ms(s.paintP95Ms)}`],
    [`the same with the smooth diagram on screen (canvases in view: ${m.onScreen.join(", ")}; ${m.redraws} redraws)`, `median ${ms(m.drawMedianMs)}, p95 ${ms(m.drawP95Ms)}; to the painted frame: median ${ms(m.paintMedianMs)}, p95 ${ms(m.paintP95Ms)}`],
    [`the same on a phone-class device: 390×844 at device scale 3, CPU throttled 4× (canvases in view: ${p.onScreen.join(", ")}; ${p.redraws} redraws)`, `median ${ms(p.drawMedianMs)}, p95 ${ms(p.drawP95Ms)}; to the painted frame: median ${ms(p.paintMedianMs)}, p95 ${ms(p.paintP95Ms)}`],
    ...Object.entries(results.phoneBlocks).map(([name, b]) => [`phone-class, ${name} (canvases in view: ${b.onScreen.join(", ")}; ${b.redraws} redraws)`, `median ${ms(b.drawMedianMs)}, p95 ${ms(b.drawP95Ms)}; to the painted frame: median ${ms(b.paintMedianMs)}, p95 ${ms(b.paintP95Ms)}`]),
    [`α slider redraw, conformal lab: wasm call + 4 charts (${a.redraws} redraws, ${a.moves} moves)`, `median ${ms(a.drawMedianMs)}, p95 ${ms(a.drawP95Ms)}`],
    ["α slider input event → next painted frame (with readouts, table and gallery)", `median ${ms(a.paintMedianMs)}, p95 ${ms(a.paintP95Ms)}`],
    ...results.scaling.map((run) => [`cold visit with ${run.cores} core${run.cores === 1 ? "" : "s"} reported: ${run.workers} inference worker${run.workers === 1 ? "" : "s"}`, `${group(run.imagesPerSecond)} images/s over ${(run.windowMs / 1000).toFixed(1)} s; all 10,000 images ${ms(run.doneMs)} from navigation start`]),
    [`inference, two workers against one`, `${(results.scaling[1].imagesPerSecond / results.scaling[0].imagesPerSecond).toFixed(2)}× the images/s`],
    ["switch to a network not yet seen: from the change to all 10,000 images inferred", ms(results.switchMs)],
    ["revisit (same profile): all 10,000 images' logits in (from navigation start), then the first chart painted", `${ms(results.revisit.doneMs)}, first chart ${ms(results.revisit.firstChartMs)}; ${results.revisit.fromCache && !results.revisit.inferred ? "from the logits cache, no inference" : "inferred again (the cache did not answer)"}`],
    [`coverage experiment, 1,000 random splits + chart (${results.experiment.runs} runs)`, `median ${ms(results.experiment.medianMs)}, max ${ms(results.experiment.maxMs)}`],
    ...results.wasm.map((w) => [`wasm module \`${w.module}\``, `${bytes(w.raw)} raw, ${bytes(w.gzip)} gzip -9`]),
    ["transferred on a cold first visit", `${bytes(results.transfer.total)} in ${results.transfer.requests} responses (uncompressed server)`],
    [`slow link, cold visit: ${SLOW_LINK.mbits} Mbit/s, ${SLOW_LINK.latencyMs} ms latency (CDP), served gzipped`, `first chart ${ms(results.slowLink.firstChartMs)}, all 10,000 images ${ms(results.slowLink.inferenceDoneMs)}; ${bytes(results.slowLink.transfer.total)} in ${results.slowLink.transfer.requests} responses`],
    ["machine", `${results.machine.nproc} cores (${results.machine.cpu}), load ${results.machine.load}`],
    ["browser", `${results.machine.chromium}, headless, --disable-gpu`],
  ];
  console.log("| measure | value |");
  console.log("| --- | --- |");
  for (const [name, value] of rows) console.log(`| ${name} | ${value} |`);
  console.log();
  console.log("Bytes of a cold first visit by file (body + headers; uncompressed server, then served gzipped):");
  console.log();
  console.log("| file | uncompressed | gzipped |");
  console.log("| --- | ---: | ---: |");
  const gzippedBytes = new Map(results.slowLink.transfer.files.map((f) => [f.file, f.bytes]));
  for (const { file, bytes: size } of results.transfer.files) {
    console.log(`| \`${file}\` | ${bytes(size)} | ${gzippedBytes.has(file) ? bytes(gzippedBytes.get(file)) : "not fetched"} |`);
  }
}

const runs = [];
for (let run = 0; run < RUNS; run++) {
  if (!JSON_OUTPUT) console.error(`bench: run ${run + 1} of ${RUNS}`);
  runs.push(await measure());
}
if (JSON_OUTPUT) {
  console.log(JSON.stringify({ spread: spread(runs), runs }, null, 2));
} else {
  console.log(`The headline figures over ${RUNS} run${RUNS === 1 ? "" : "s"} of the whole bench, one after the other:`);
  console.log();
  console.log("| measure | median | range | each run |");
  console.log("| --- | ---: | ---: | --- |");
  for (const f of spread(runs)) console.log(`| ${f.name} | ${ms(f.medianMs)} | ${ms(f.minMs)}–${ms(f.maxMs)} | ${f.valuesMs.map(ms).join(", ")} |`);
  console.log();
  console.log("The last run in full:");
  console.log();
  printRun(runs[runs.length - 1]);
}
