// calibra's page: loads the data, streams logits from inference workers into the Rust lab, and
// redraws at most once per animation frame. All numbers come from Rust; this file only wires.
import init, { Lab, class_names, parse_images, parse_labels } from "./pkg/calibra.js";
import { $, clearError, fitCanvas, setMetric, showError } from "./dom.js";
import { ConformalLab, CONFORMAL_DEFAULTS, readConformalHash } from "./conformal.js";

const MODELS = [
  { key: "ce", url: "assets/models/fmnist-ce.safetensors" },
  { key: "logitnorm", url: "assets/models/fmnist-logitnorm.safetensors" },
];
const IMAGES_URL = "assets/fashion-mnist/t10k-images-idx3-ubyte.gz";
const LABELS_URL = "assets/fashion-mnist/t10k-labels-idx1-ubyte.gz";
const PIXELS = 28 * 28;
const BATCH = 250;
const T_MIN = 0.05;
const T_MAX = 20;
const SLIDER_STEPS = 1000;
const DEFAULTS = { model: "ce", t: 1, bins: 15, binning: "width", split: 0, ...CONFORMAL_DEFAULTS };

// The states the text's buttons show ("fitted": the temperature fitted on this split).
const PRESETS = {
  aps_raw_t1: { model: "ce", score: "aps", randomized: false, t: 1 },
  aps_raw_cold: { model: "ce", score: "aps", randomized: false, t: 0.3 },
};

// The whole view in one object, mirrored to location.hash so a view is a shareable link.
const state = { ...DEFAULTS };

// Benchmarks and tests read timings from here (see scripts/bench).
const timings = { draws: [], conformalDraws: [], firstChart: null, inferenceDone: {} };
window.calibra = { state, timings };

let lab = null;
let pixels = null;
let conformal = null;
let renderPending = false;
// Which labs need a redraw: the temperature feeds both. A lab off screen stays dirty and is
// redrawn when it scrolls into view, so a slider costs only the charts the reader can see.
const dirty = { temperature: false, conformal: false };
const visible = { temperature: true, conformal: false };

// Parses the hash into state, keeping defaults for missing or invalid entries.
function readHash() {
  const params = new URLSearchParams(location.hash.slice(1));
  const next = { ...DEFAULTS };
  const problems = [];
  if (params.has("model")) {
    const model = params.get("model");
    if (MODELS.some((m) => m.key === model)) next.model = model;
    else problems.push(`unknown model "${model}"`);
  }
  if (params.has("t")) {
    const t = Number(params.get("t"));
    if (Number.isFinite(t) && t >= T_MIN && t <= T_MAX) next.t = t;
    else problems.push(`temperature "${params.get("t")}" is not in [${T_MIN}, ${T_MAX}]`);
  }
  if (params.has("bins")) {
    const bins = Number(params.get("bins"));
    if (Number.isInteger(bins) && bins >= 5 && bins <= 30) next.bins = bins;
    else problems.push(`bins "${params.get("bins")}" is not a whole number from 5 to 30`);
  }
  if (params.has("binning")) {
    const binning = params.get("binning");
    if (binning === "width" || binning === "mass") next.binning = binning;
    else problems.push(`binning "${binning}" is not "width" or "mass"`);
  }
  if (params.has("split")) {
    const split = Number(params.get("split"));
    if (Number.isInteger(split) && split >= 0 && split < 2 ** 32) next.split = split;
    else problems.push(`split "${params.get("split")}" is not a seed from 0 to 4294967295`);
  }
  readConformalHash(params, next, problems);
  if (problems.length) showError(`This link's settings were partly ignored: ${problems.join("; ")}.`);
  return next;
}

// Writes state to the hash without adding a history entry per slider step.
function writeHash() {
  const params = new URLSearchParams({
    model: state.model,
    t: String(Number(state.t.toPrecision(6))),
    bins: String(state.bins),
    binning: state.binning,
    split: String(state.split),
    alpha: String(state.alpha),
    score: state.score,
    randomized: state.randomized ? "1" : "0",
    raps_lambda: String(state.raps_lambda),
    k_reg: String(state.k_reg),
    saps_lambda: String(state.saps_lambda),
    mondrian: state.mondrian ? "1" : "0",
    gallery: state.gallery,
  });
  history.replaceState(null, "", `#${params}`);
}

// Slider position <-> temperature on a log scale from T_MIN to T_MAX.
const sliderToTemperature = (position) => T_MIN * (T_MAX / T_MIN) ** (position / SLIDER_STEPS);
const temperatureToSlider = (t) => Math.round((SLIDER_STEPS * Math.log(t / T_MIN)) / Math.log(T_MAX / T_MIN));

// Writes T beside its slider, and as the slider's spoken value (its position is not T).
function showTemperature() {
  const text = state.t.toFixed(3);
  setMetric($("temperature-value"), "temperature", state.t, text);
  $("temperature").setAttribute("aria-valuetext", `T = ${text}`);
}

// Writes the number of bins beside its slider and as the slider's spoken value.
function showBins() {
  $("bins-value").textContent = String(state.bins);
  $("bins").setAttribute("aria-valuetext", `${state.bins} bins`);
}

// Puts state into the controls.
function syncControls() {
  $("model").value = state.model;
  $("temperature").value = String(temperatureToSlider(state.t));
  showTemperature();
  $("bins").value = String(state.bins);
  showBins();
  $("binning").value = state.binning;
  $("split-seed").textContent = String(state.split);
  conformal?.syncControls();
}

const FORMATS = {
  accuracy: (v) => `${(100 * v).toFixed(2)}%`,
  ece: (v) => v.toFixed(4),
  mce: (v) => v.toFixed(4),
  nll: (v) => v.toFixed(4),
  brier: (v) => v.toFixed(4),
};

// Fills the readout table from the summary Rust returned.
function showSummary(summary) {
  const columns = [["", summary.at_temperature], ["_t1", summary.at_one], ["_fitted", summary.at_fitted]];
  for (const [suffix, metrics] of columns) {
    for (const [name, format] of Object.entries(FORMATS)) {
      const cell = document.querySelector(`[data-metric="${name}${suffix}"]`);
      setMetric(cell, name + suffix, metrics[name], format(metrics[name]));
    }
  }
  setMetric(document.querySelector('[data-metric="mean_confidence"]'), "mean_confidence", summary.mean_confidence, FORMATS.accuracy(summary.mean_confidence));
  setMetric(document.querySelector('[data-metric="ece_floor"]'), "ece_floor", summary.ece_floor, FORMATS.ece(summary.ece_floor));
  $("confidence-verdict").textContent = summary.verdict;
  const fitted = summary.fitted_temperature;
  const fitLabel = document.querySelector('#fit [data-metric="fitted_temperature"]');
  setMetric(fitLabel, "fitted_temperature", fitted, fitted.toFixed(3) + (summary.fitted_bound_hit ? " (bound)" : ""));
  $("fit").disabled = false;
  const marker = $("fitted-marker");
  marker.hidden = false;
  marker.style.setProperty("--position", String(temperatureToSlider(fitted) / SLIDER_STEPS));
  $("evaluation-size").textContent = summary.n_evaluation.toLocaleString("en");
  $("split-sizes").textContent = `${summary.n_calibration.toLocaleString("en")} calibration / ${summary.n_evaluation.toLocaleString("en")} evaluation images`;
}

// Asks for one redraw on the next animation frame; repeated asks in a frame collapse.
function scheduleRender(parts = ["temperature", "conformal"]) {
  for (const part of parts) dirty[part] = true;
  if (renderPending) return;
  renderPending = true;
  requestAnimationFrame(render);
}

// Redraws what changed: one wasm call per lab.
function render() {
  renderPending = false;
  if (!lab || lab.arrived(modelIndex(state.model)) === 0) return;
  if (dirty.temperature && visible.temperature) {
    renderTemperature();
    dirty.temperature = false;
  }
  if (dirty.conformal && visible.conformal) {
    conformal.render();
    dirty.conformal = false;
  }
}

// Tracks which labs are on screen (with a margin, so charts are ready as they scroll in).
function observeVisibility() {
  const sections = { "temperature-lab": "temperature", "conformal-lab": "conformal" };
  const observer = new IntersectionObserver((entries) => {
    for (const entry of entries) visible[sections[entry.target.id]] = entry.isIntersecting;
    scheduleRender([]);
  }, { rootMargin: "300px 0px" });
  for (const id of Object.keys(sections)) observer.observe($(id));
}

// Keeps each lab's --slider-bar-height at the height of its sticky slider bar, which style.css
// gives focused controls as scroll margin so that they never land under the bar.
function trackSliderBars() {
  const observer = new ResizeObserver((entries) => {
    for (const entry of entries) {
      entry.target.closest(".lab").style.setProperty("--slider-bar-height", `${entry.borderBoxSize[0].blockSize}px`);
    }
  });
  for (const bar of document.querySelectorAll(".slider-bar")) observer.observe(bar);
}

// One wasm call recomputes the temperature lab and redraws its charts.
function renderTemperature() {
  const canvases = ["reliability", "histogram", "classwise"].map($);
  const scale = Math.max(...canvases.map(fitCanvas));
  const started = performance.now();
  let summary;
  try {
    summary = lab.draw_temperature(state.t, state.bins, state.binning, ...canvases, scale);
  } catch (error) {
    // Before both halves of the split have a row the lab is not ready: not an error.
    if (!String(error.message).includes("wait for inference")) showError(`Cannot draw: ${error.message}`);
    return;
  }
  const millis = performance.now() - started;
  timings.draws.push(millis);
  if (timings.firstChart === null) {
    timings.firstChart = performance.now();
    performance.mark("calibra:first-chart");
  }
  $("render-time").textContent = `(computed and drawn in ${millis.toFixed(1)} ms)`;
  showSummary(summary);
}

const modelIndex = (key) => MODELS.findIndex((m) => m.key === key);

// A pool of inference workers sharing one image set: batches go to whichever worker is free.
class InferencePool {
  constructor(size, onBatch, onError) {
    this.onBatch = onBatch;
    this.workers = [];
    this.queue = [];
    this.loaded = new Set();
    this.failed = new Set();
    for (let i = 0; i < size; i++) {
      const worker = new Worker(new URL("./worker.js", import.meta.url), { type: "module" });
      const slot = { worker, busy: 0 };
      worker.onmessage = (event) => this.receive(slot, event.data);
      worker.onerror = (event) => onError(`The inference worker failed: ${event.message || "could not start (is WebAssembly enabled?)"}`);
      this.workers.push(slot);
    }
    this.onError = onError;
  }

  // Queues every batch of model `index` not yet requested; the active model goes first.
  request(index) {
    if (this.loaded.has(index)) return;
    this.loaded.add(index);
    for (const slot of this.workers) slot.worker.postMessage({ type: "load", model: index, url: MODELS[index].url });
    const batches = [];
    for (let start = 0; start < pixels.length / PIXELS; start += BATCH) batches.push({ model: index, start });
    this.queue.push(...batches);
    this.pump();
  }

  // Moves the batches of `index` to the front of the queue.
  prioritise(index) {
    this.queue.sort((a, b) => (b.model === index) - (a.model === index));
  }

  // Keeps two batches in flight per worker, so none idles between messages.
  pump() {
    for (const slot of this.workers) {
      while (slot.busy < 2 && this.queue.length) {
        const { model, start } = this.queue.shift();
        const end = Math.min(start + BATCH, pixels.length / PIXELS);
        const batch = pixels.slice(start * PIXELS, end * PIXELS);
        slot.worker.postMessage({ type: "infer", model, start, pixels: batch }, [batch.buffer]);
        slot.busy += 1;
      }
    }
  }

  // A failure stops that model's remaining batches, so its first message is the one shown.
  receive(slot, message) {
    if (message.status === "logits") {
      slot.busy -= 1;
      this.onBatch(message);
      this.pump();
    } else if (message.status === "error") {
      if (this.failed.has(message.model)) return;
      if (message.model !== undefined) {
        this.failed.add(message.model);
        this.queue = this.queue.filter((batch) => batch.model !== message.model);
      }
      this.onError(`Inference failed: ${message.message}`, message.model);
    }
  }
}

// Progress of each model's inference, for the progress bar.
const progress = new Map();

function onBatch(message) {
  const arrived = lab.add_logits(message.model, message.start, message.logits);
  const entry = progress.get(message.model);
  const total = pixels.length / PIXELS;
  if (message.model === modelIndex(state.model)) {
    const seconds = (performance.now() - entry.started) / 1000;
    $("progress").value = arrived;
    $("progress-label").textContent = `Running the ${state.model === "ce" ? "cross-entropy" : "LogitNorm"} network on the test images…`;
    $("progress-text").textContent = `${arrived.toLocaleString("en")} / ${total.toLocaleString("en")} images · ${Math.round(arrived / seconds).toLocaleString("en")} images/s`;
    scheduleRender();
  }
  if (arrived === total && !(message.model in timings.inferenceDone)) {
    timings.inferenceDone[message.model] = performance.now();
    performance.mark(`calibra:inference-done:${MODELS[message.model].key}`);
    updateStatus();
  }
}

// Hides the progress row once the shown model is complete; marks the page for tests.
function updateStatus() {
  const index = modelIndex(state.model);
  const done = lab.arrived(index) === pixels.length / PIXELS;
  document.querySelector(".status").classList.toggle("done", done);
  document.body.dataset.inference = done ? "done" : "running";
  if (!done) {
    if (!progress.has(index)) progress.set(index, { started: performance.now() });
    $("progress").value = lab.arrived(index);
  }
}

// Applies a model choice: computes its logits if needed, then redraws.
function selectModel(pool) {
  const index = modelIndex(state.model);
  lab.select_model(index);
  if (!progress.has(index)) progress.set(index, { started: performance.now() });
  pool.request(index);
  pool.prioritise(index);
  updateStatus();
  scheduleRender();
}

// A browser without WebAssembly SIMD cannot run the module: say so instead of failing blankly.
function supportsSimd() {
  const probe = new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3, 2, 1, 0, 10, 10, 1, 8, 0, 65, 0, 253, 15, 253, 98, 11]);
  return typeof WebAssembly === "object" && WebAssembly.validate(probe);
}

// Fetches a file as bytes, with a message that names it when it fails.
async function fetchBytes(url) {
  let response;
  try {
    response = await fetch(url);
  } catch (error) {
    throw new Error(`Cannot load ${url}: ${error.message}`);
  }
  if (!response.ok) throw new Error(`Cannot load ${url}: HTTP ${response.status} ${response.statusText}`);
  return new Uint8Array(await response.arrayBuffer());
}

async function main() {
  if (!supportsSimd()) {
    throw new Error("This browser does not support WebAssembly SIMD, which calibra needs. Any current Chrome, Edge, Firefox or Safari (16.4 or later) does.");
  }
  Object.assign(state, readHash());
  syncControls();
  trackSliderBars();
  const [, imageBytes, labelBytes] = await Promise.all([init(), fetchBytes(IMAGES_URL), fetchBytes(LABELS_URL)]);
  pixels = parse_images(imageBytes, IMAGES_URL);
  const labels = parse_labels(labelBytes, LABELS_URL);
  lab = new Lab(labels, MODELS.length);
  lab.set_split(state.split);
  conformal = new ConformalLab({ lab, state, pixels, classNames: class_names(), onChange: () => { writeHash(); scheduleRender(["conformal"]); } });
  conformal.syncControls();
  $("progress").max = labels.length;

  const workers = Math.max(1, Math.min(4, Math.floor((navigator.hardwareConcurrency || 2) / 2)));
  const pool = new InferencePool(workers, onBatch, (message, model) => {
    showError(message);
    if (model === undefined || model === modelIndex(state.model)) document.body.dataset.inference = "failed";
  });
  selectModel(pool);

  $("model").addEventListener("change", () => {
    state.model = $("model").value;
    writeHash();
    selectModel(pool);
  });
  $("temperature").addEventListener("input", () => {
    state.t = sliderToTemperature(Number($("temperature").value));
    showTemperature();
    writeHash();
    scheduleRender();
  });
  $("fit").addEventListener("click", () => {
    state.t = lab.fitted_temperature();
    syncControls();
    writeHash();
    scheduleRender();
  });
  // "See both" buttons in the text: a state to look at, the fitted T read from the lab.
  for (const button of document.querySelectorAll("button.preset")) {
    button.addEventListener("click", () => {
      const { t, ...rest } = PRESETS[button.dataset.preset];
      try {
        state.t = t === "fitted" ? lab.fitted_temperature() : t;
      } catch {
        showError("The fitted temperature is not known yet: wait for inference.");
        return;
      }
      const model = state.model;
      Object.assign(state, rest);
      syncControls();
      writeHash();
      if (state.model !== model) selectModel(pool);
      scheduleRender();
    });
  }
  $("reset-temperature").addEventListener("click", () => {
    state.t = 1;
    syncControls();
    writeHash();
    scheduleRender();
  });
  $("bins").addEventListener("input", () => {
    state.bins = Number($("bins").value);
    showBins();
    writeHash();
    scheduleRender(["temperature"]);
  });
  $("binning").addEventListener("change", () => {
    state.binning = $("binning").value;
    writeHash();
    scheduleRender(["temperature"]);
  });
  $("new-split").addEventListener("click", () => {
    state.split = (state.split + 1) % 2 ** 32;
    lab.set_split(state.split);
    syncControls();
    writeHash();
    scheduleRender();
  });
  window.addEventListener("hashchange", () => {
    const previous = { ...state };
    clearError();
    Object.assign(state, readHash());
    syncControls();
    if (state.split !== previous.split) lab.set_split(state.split);
    if (state.model !== previous.model) selectModel(pool);
    scheduleRender();
  });
  // Charts follow the page's width (not its height, which the charts themselves change).
  let width = 0;
  new ResizeObserver(([entry]) => {
    if (entry.contentRect.width !== width) {
      width = entry.contentRect.width;
      scheduleRender();
    }
  }).observe(document.body);
  observeVisibility();
  writeHash();
}

main().catch((error) => {
  showError(error instanceof Error ? error.message : String(error));
  document.body.dataset.inference = "failed";
});
