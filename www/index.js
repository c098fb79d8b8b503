// calibra's page: loads the data, streams logits from inference workers into Rust, and asks
// Rust for one render per animation frame. Rust owns the state (Page holds it: a link, a control
// and a button change it there, through Page.read_hash, Page.control and Page.action), its
// defaults, ranges and validation, every number and every sentence; this file only wires
// events, workers and the DOM.
import init, { Page, idx_image_count, limits as readLimits, noise_pixels, parse_mnist, shifted_pixels, shifted_rows } from "./pkg/calibra.js";
import { $, applyPatches, clearControlError, clearError, showControlError, showError } from "./dom.js";
import { showEmbed } from "./embed.js";
import { addFigureMenus, download } from "./figure-menu.js";
import { Gallery, showOodGalleries, thumbnail } from "./gallery.js";
import * as logitsCache from "./logits-cache.js";
import { OwnImageInput } from "./own-image.js";

const IMAGES_URL = "assets/fashion-mnist/t10k-images-idx3-ubyte.gz";
const LABELS_URL = "assets/fashion-mnist/t10k-labels-idx1-ubyte.gz";
// The same file's header and first batch of images, written by scripts/build-site.
const FIRST_IMAGES_URL = "assets/fashion-mnist/t10k-images-first-batch-idx3-ubyte.gz";
// The most bytes of a download handed to the gzip decoder at once (see unzipped).
const UNZIP_PIECE = 64 * 1024;
const MNIST_URL = "assets/mnist-ood-images-idx3-ubyte.gz";
// Test images corrupted per call when the shift lab makes a corrupted copy (about 10–20 ms).
const CORRUPTION_CHUNK = 1000;
// How long the slider rests before its bootstrap intervals are asked for (requestIntervalsAtRest).
const INTERVAL_REST_MS = 250;
// Least time between two writes of the link's hash (writeHash). In headless Chromium 156 each
// history.replaceState took about 11 ms of the browser process's own thread, once per slider
// move; and Chromium ignores a page's history changes past 200 in 10 seconds, which a slider
// dragged at 60 frames a second passes, so the link could miss the last position.
const HASH_WRITE_MS = 200;

// Benchmarks and tests read timings and wasm call counts from here (see scripts/bench):
// calls.frames holds the number of wasm calls each animation frame made, calls.named the calls
// of each method.
const timings = { draws: [], conformalDraws: [], oodDraws: [], shiftDraws: [], corruptions: [], intervals: [], firstChart: null, firstChartImages: null, inferenceDone: {} };
const calls = { total: 0, frames: [], named: {} };
window.calibra = {
  timings,
  calls,
  get state() { return state; },
  // Whether a state's hash is still to be written into the address (writeHash).
  get hashPending() { return pendingHash !== null; },
  get limits() { return limits; },
  // How many of the test images are in (see streamTestImages).
  get testImagesIn() { return testImages.rows; },
  // The 28×28 the networks read of the reader's picture, once there is one.
  get ownPixels() { return ownPixels && Array.from(ownPixels); },
  // The logits the page computed for model `index` on image set `set`, once all have arrived:
  // the tests compare the page's numbers with the command-line tool's on exactly these.
  logits: (index, set) => Array.from(page.logits(index, set)),
  // Resolves once the logits last handed to the cache are stored (tests wait for it before
  // they load the page again).
  cacheSettled: () => lastKeep,
};

let limits = null;
// The page state as Rust last returned it, to read (its fields are the hash's keys); Rust's Page
// holds the state itself, and no call takes it back.
let state = null;
let page = null;
// Whether the page has read the test labels, and so holds the labs' data.
let labelsRead = false;
// Pixels of each image set by name: "test" from the start (filled as the file arrives, see
// streamTestImages), the OOD sets once a job needs them.
const images = {};
// The test images' download: how many images are whole so far, and a promise that resolves once
// all are (and rejects, with a message, on a broken file).
const testImages = { rows: 0, complete: null };
// Resolves once a frame with the shown network's logits is painted, or once inference has
// failed: on a first visit the rest of the test images are fetched then (see main). Its resolver
// is dropped once a frame has asked for it, so that later frames do not ask again.
let showFirstLogits = null;
const firstLogitsShown = new Promise((resolve) => {
  showFirstLogits = resolve;
});
const loadingImages = {};
let gallery = null;
let pool = null;
let bootstrap = null;
let intervalTimer = null;
let renderPending = false;
// The controls' patches of the states applied since the last frame, written after that frame's
// drawing: written at once, they would make the frame's first canvas text recompute the
// document's style, which the browser then computes again for the readouts' patches.
let pendingPatches = [];
// When the last frame was drawn, and the timer of a batch's redraw waiting for its turn.
let lastRender = -Infinity;
let streamingRender = null;
// Whether a frame has drawn the first chart (timings.firstChart follows once it is painted).
let firstChartDrawn = false;
// Which labs need a redraw. A lab off screen stays dirty and is redrawn when it scrolls into
// view, so a slider costs only the charts the reader can see.
const dirty = { temperature: false, conformal: false, gallery: false, ood: false, shift: false, own: false };
const visible = { temperature: true, conformal: false, gallery: false, ood: false, shift: false, own: false };
// The figures on screen (canvas ids): a frame draws only these, and one scrolling into view
// asks for its lab again.
const figuresOnScreen = new Set();
// The observer of the labs' and figures' visibility (observeVisibility).
let visibilityObserver = null;
// Rows of each model whose test-set logits have arrived, as Rust counted them.
const arrived = new Map();
// The ODIN scores the τ lab's button would compute (from the last frame).
let odinNeeds = [];
// The SHA-256 of each image set's pixels, for the logits cache's keys.
const imageDigests = {};
// The cache key of each logits job ("model:set"; a promise, see cacheKeyOf), and when each
// model's test-set logits were stored, for the models whose logits came from the cache.
const cacheKeys = new Map();
const cachedSince = new Map();
let lastKeep = Promise.resolve();
// Whether the logits cache holds anything: asked of IndexedDB once, as the page starts (not
// again before the first batch), and true once this visit keeps logits.
let cacheHoldsAny = null;
// Whether it has answered that it holds nothing (a first visit), and has kept nothing since: a
// request for logits then skips the cache at once, so that the first batch goes to the worker
// before the page wires itself.
let cacheHeldNone = false;
// The reader's own picture as they gave it (prepared again when the invert choice changes), the
// 28×28 Rust made of it, and the networks' logits asked for on it, by request number.
// The sentence describing the reader's own logits while the first two labs show them.
let ownData = null;
// Counts the reader's file choices: a read that a later choice overtook is dropped.
let ownLoads = 0;
let ownPicture = null;
let ownPixels = null;
const ownRequests = new Map();
let ownRequestCount = 0;

// Counts every call into the wasm module's Page, for the one-call-per-frame check.
function counted(target) {
  return new Proxy(target, {
    get(object, key) {
      const value = Reflect.get(object, key);
      if (typeof value !== "function") return value;
      return (...args) => {
        calls.total += 1;
        calls.named[key] = (calls.named[key] ?? 0) + 1;
        return value.apply(object, args);
      };
    },
  });
}

const modelIndex = () => limits.model_index[state.model];
// A corrupted copy holds as many images as the test set, also once its pixels are released.
const imageCount = (set = "test") => (imageSet(set) ?? images.test).length / limits.image_side ** 2;
const isShifted = (set) => set.startsWith("shift-");

// The pixels of an image set that has been loaded.
const imageSet = (set) => images[set];
// How many images of a set are whole: the test images count up as they arrive, and a set not
// loaded (or a corrupted copy dropped) has none.
const rowsIn = (set) => (set === "test" ? testImages.rows : images[set] ? imageCount(set) : 0);

// Loads an image set the first time a job needs it: the MNIST digits are fetched (so a reader
// who never opens the τ lab never downloads them), a noise set is drawn in Rust from its seed,
// a corrupted copy of the test images is made in Rust.
function loadImages(set) {
  const make = () => (isShifted(set) ? corruptedCopy(set) : noise_pixels(set));
  loadingImages[set] ??= (set === "mnist"
    ? fetchUnzipped(MNIST_URL).then((bytes) => parse_mnist(bytes, MNIST_URL))
    : Promise.resolve().then(make)
  ).then((pixels) => {
    images[set] = pixels;
  });
  return loadingImages[set];
}

// The corrupted copy `set` of the test images, made in Rust CORRUPTION_CHUNK images at a time
// with the page's thread given back in between (the whole copy takes 100–200 ms).
async function corruptedCopy(set) {
  await testImages.complete;
  const size = limits.image_side ** 2;
  const count = imageCount();
  const copy = new Uint8Array(images.test.length);
  let busy = 0;
  for (let first = 0; first < count; first += CORRUPTION_CHUNK) {
    const end = Math.min(first + CORRUPTION_CHUNK, count);
    const started = performance.now();
    copy.set(shifted_pixels(images.test.subarray(first * size, end * size), first, set), first * size);
    busy += performance.now() - started;
    await new Promise((resolve) => setTimeout(resolve, 0));
  }
  timings.corruptions.push({ set, millis: busy });
  return copy;
}

// Takes a state Rust returned ({state, hash, patches}): writes the link, follows a model change,
// and asks for a frame, which shows its controls' patches once it has drawn.
function apply(next) {
  const previous = state;
  state = next.state;
  // Intervals asked for in the last state would be computed on its data: its next frame asks anew.
  clearTimeout(intervalTimer);
  pendingPatches.push(...next.patches);
  writeHash(next.hash);
  showView(next.article_hash);
  if (pool && previous && state.model !== previous.model) selectModel();
  scheduleRender();
}

// The hash not yet written, the timer that writes it, when the last write was, and the
// address's hash as this page last saw it (after its own write, or a hashchange).
let pendingHash = null;
let hashTimer = null;
let lastHashWrite = -Infinity;
let knownHash = null;

// Writes `hash` into the address: at once when the last write is HASH_WRITE_MS old, otherwise
// when it is (the latest hash asked for by then), so the link always ends on the last state.
function writeHash(hash) {
  pendingHash = hash;
  const wait = lastHashWrite + HASH_WRITE_MS - performance.now();
  if (wait <= 0) flushHash();
  else hashTimer ??= setTimeout(flushHash, wait);
}

// Writes the hash waiting to be written, if any. A hash that changed since the page last saw
// it (a link followed, the address edited) is not overwritten: its hashchange, still to come,
// applies that state and writes its hash.
function flushHash() {
  clearTimeout(hashTimer);
  hashTimer = null;
  if (pendingHash === null) return;
  if (knownHash === null || location.hash === knownHash) {
    history.replaceState(null, "", `#${pendingHash}`);
    knownHash = location.hash;
    lastHashWrite = performance.now();
  }
  pendingHash = null;
}

// The address of this view, its hash up to date (the figure menus' "Copy link").
function currentLink() {
  flushHash();
  return location.href;
}

// Shows the article, one figure (the embed view) or presentation mode, as the state says;
// `articleHash` is the article's hash in the embed view (its link back).
function showView(articleHash) {
  const articleHref = articleHash ? `./#${articleHash}` : "./";
  showEmbed({ figureId: state.embed, articleHref, present: state.present, figures: limits.figures });
}

// In presentation mode, keys move between figures; a control keeps its own keys (a slider its
// arrows), and Space on a button presses that button.
const PRESENTATION_KEYS = {
  ArrowRight: "next-figure", PageDown: "next-figure", " ": "next-figure",
  ArrowLeft: "previous-figure", PageUp: "previous-figure", Escape: "end-presentation",
};
function onPresentationKey(event) {
  const action = PRESENTATION_KEYS[event.key];
  if (!state?.present || !action || event.altKey || event.ctrlKey || event.metaKey) return;
  if (event.target.closest("input, select, textarea") || (event.key === " " && event.target.closest("button, summary"))) return;
  event.preventDefault();
  try {
    apply(page.action(action));
  } catch (error) {
    showError(error.message);
  }
}

// Reads the hash through Rust; ignored entries are reported, the rest kept.
function readHash() {
  const next = page.read_hash(location.hash);
  if (next.rejected.length) showError(`This link's settings were partly ignored: ${next.rejected.join("; ")}.`);
  return next;
}

// Brings the figure or table a "Try this" line names into view (smoothly unless the reader asks
// for reduced motion) and marks it for a moment.
function showFigure(element) {
  const smooth = !matchMedia("(prefers-reduced-motion: reduce)").matches;
  const target = element.closest("figure") ?? element;
  target.scrollIntoView({ behavior: smooth ? "smooth" : "auto", block: "center" });
  target.classList.remove("shown-by-preset");
  void target.offsetWidth; // restarts the mark's animation when the same button is pressed again
  target.classList.add("shown-by-preset");
  setTimeout(() => target.classList.remove("shown-by-preset"), 1600);
}

// Asks for one render on the next animation frame; repeated asks in a frame collapse.
function scheduleRender() {
  dirty.temperature = dirty.conformal = dirty.gallery = dirty.ood = dirty.shift = dirty.own = true;
  if (renderPending) return;
  renderPending = true;
  requestAnimationFrame(frame);
}

// The redraw an arriving batch asks for: at once, or limits.streaming_redraw_ms after the last
// frame, whichever is later (the workers need the cores more than the chart needs every batch).
function scheduleStreamingRender() {
  if (streamingRender !== null) return;
  const wait = lastRender + limits.streaming_redraw_ms - performance.now();
  if (wait <= 0) return scheduleRender();
  streamingRender = setTimeout(() => {
    streamingRender = null;
    scheduleRender();
  }, wait);
}

// The animation frame: draws what is on screen, and says when the shown network's first logits
// are painted (firstLogitsShown).
function frame() {
  renderPending = false;
  if (!labelsRead) return;
  render();
  if (showFirstLogits && arrived.has(modelIndex())) {
    afterPaint(showFirstLogits);
    showFirstLogits = null;
  }
}

// Runs `callback` once the frame being drawn is painted: a message posted from a frame's
// callback is handled after that frame's style, layout and paint (a timeout may be clamped).
// Messages run in the order they were posted.
function afterPaint(callback) {
  const channel = new MessageChannel();
  channel.port1.onmessage = callback;
  channel.port2.postMessage(null);
}

// One wasm call recomputes and redraws the labs on screen and returns the readouts.
function render() {
  // What the observer has seen and not yet told: Chromium tells it in a task of its own, which
  // on a busy page came frames late, and the first logits' frame then drew no chart.
  noteVisibility(visibilityObserver.takeRecords());
  lastRender = performance.now();
  // This frame draws every batch in so far: a batch's redraw still waiting is not needed.
  clearTimeout(streamingRender);
  streamingRender = null;
  const callsBefore = calls.total;
  const wanted = {
    temperature: dirty.temperature && visible.temperature,
    conformal: dirty.conformal && visible.conformal,
    gallery: dirty.gallery && visible.gallery,
    ood: dirty.ood && visible.ood,
    shift: dirty.shift && visible.shift,
    own_image: dirty.own && visible.own,
    explain: gallery.selectedRow,
    figures: [...figuresOnScreen],
  };
  const started = performance.now();
  let readouts;
  let millis;
  try {
    readouts = page.render(wanted);
    millis = performance.now() - started;
  } catch (error) {
    showError(`Cannot draw: ${error.message}`);
    return;
  } finally {
    calls.frames.push(calls.total - callsBefore);
    const patches = pendingPatches;
    pendingPatches = [];
    applyPatches(patches);
  }
  applyPatches(readouts.patches);
  // With the reader's logits shown, the labs' rows are theirs; the bar follows the test images.
  showProgress(ownData ? arrived.get(modelIndex()) ?? 0 : readouts.arrived);
  if (wanted.own_image) {
    dirty.own = false;
    if (readouts.own_image) showOwnAnswers(readouts.own_image);
  }
  if (wanted.ood) {
    for (const { model, set } of readouts.needs) pool.request(model, set);
    odinNeeds = readouts.odin_needs;
    if (readouts.drawn.includes("ood")) {
      dirty.ood = false;
      timings.oodDraws.push(millis);
      showOodGalleries(readouts.ood_galleries, imageSet, limits.image_side);
      // The lesson's paired difference: a second of bootstrap, so the worker computes it.
      if (readouts.difference_request) bootstrapWorker().request("difference", [readouts.difference_request]);
    }
  }
  if (wanted.shift) {
    for (const { model, set } of readouts.shift_needs) pool.request(model, set);
    if (readouts.drawn.includes("shift")) {
      dirty.shift = false;
      timings.shiftDraws.push(millis);
      showShiftThumbnails(readouts.shift_thumbnails);
    }
  }
  if (readouts.waiting) return;
  if (readouts.drawn.length > 0) pool.allowGrowth();
  for (const lab of readouts.drawn) dirty[lab] = false;
  if (readouts.drawn.includes("temperature")) {
    if (ownData && timings.ownLogits && !timings.ownLogits.drawn) timings.ownLogits.drawn = performance.now();
    if (readouts.interval_requests.length) requestIntervalsAtRest(readouts.interval_requests);
    // Asked for at once: the rivals' table waits for them.
    if (readouts.rivals_request) bootstrapWorker().request("rivals", [readouts.rivals_request]);
    timings.draws.push(millis);
    // The first chart counts once it is on the screen, not once it is drawn on its canvas; the
    // test images in by then tell whether their reading waited for it.
    if (!firstChartDrawn && figuresOnScreen.has("reliability")) {
      firstChartDrawn = true;
      afterPaint(() => {
        timings.firstChart = performance.now();
        timings.firstChartImages = testImages.rows;
        performance.mark("calibra:first-chart");
      });
    }
    $("render-time").textContent = `(computed and drawn in ${millis.toFixed(1)} ms)`;
  }
  if (readouts.drawn.includes("conformal")) timings.conformalDraws.push(millis);
  if (readouts.gallery) {
    dirty.gallery = false;
    gallery.show(readouts.gallery, state.gallery);
  }
  if (readouts.explanation) gallery.explain(readouts.explanation);
}

// Asks the bootstrap worker for a frame's intervals once the slider has rested for
// INTERVAL_REST_MS: while it moves, the worker would take a core from the frames (on two cores
// it lifted the slider frame's p95 from 12 to 19 ms) for temperatures already left behind. The
// worker starts at the first request, once inference is done, so it never competes with it.
function requestIntervalsAtRest(requests) {
  clearTimeout(intervalTimer);
  intervalTimer = setTimeout(() => bootstrapWorker().request("intervals", requests), INTERVAL_REST_MS);
}

// The bootstrap worker, started at its first request.
function bootstrapWorker() {
  bootstrap ??= new BootstrapWorker(onBootstrapAnswer, (message) => showError(`The bootstrap worker failed: ${message}`));
  return bootstrap;
}

// Keeps intervals, rivals or a paired difference the bootstrap worker computed and redraws the
// lab that shows them.
function onBootstrapAnswer(type, request, answer) {
  try {
    if (type === "intervals") page.add_intervals(request, answer);
    else if (type === "rivals") page.add_rivals(request, answer);
    else page.add_difference(request, answer);
  } catch (error) {
    showError(error.message);
    return;
  }
  if (type === "difference") {
    dirty.ood = true;
    scheduleRender();
    return;
  }
  if (type === "intervals") timings.intervals.push(performance.now());
  else if (ownData && timings.ownLogits && !timings.ownLogits.rivals) timings.ownLogits.rivals = performance.now();
  dirty.temperature = true;
  if (!renderPending) {
    renderPending = true;
    requestAnimationFrame(frame);
  }
}

// Tracks which labs and figures are on screen (with a margin, so charts are ready as they
// scroll in).
function observeVisibility() {
  visibilityObserver = new IntersectionObserver((entries) => {
    noteVisibility(entries);
    if (!renderPending) {
      renderPending = true;
      requestAnimationFrame(frame);
    }
  }, { rootMargin: "300px 0px" });
  for (const id of [...Object.keys(LAB_ELEMENTS), ...limits.figures.map((figure) => figure.id)]) visibilityObserver.observe($(id));
}

// The elements whose visibility stands for their lab's.
const LAB_ELEMENTS = { "temperature-lab": "temperature", "conformal-lab": "conformal", gallery: "gallery", "shift-lab": "shift", "ood-lab": "ood", "own-image": "own" };

// Notes what the visibility observer saw: a lab on or off screen, a figure on or off screen (one
// coming on screen asks for its lab).
function noteVisibility(entries) {
  for (const { target, isIntersecting } of entries) {
    const lab = LAB_ELEMENTS[target.id];
    if (lab !== undefined) {
      visible[lab] = isIntersecting;
    } else if (isIntersecting) {
      figuresOnScreen.add(target.id);
      dirty[limits.figures.find((figure) => figure.id === target.id).lab] = true;
    } else {
      figuresOnScreen.delete(target.id);
    }
  }
}

// Tells Rust each chart canvas's content box whenever a layout changes it, and asks for a
// frame: a frame then draws at these sizes without reading the layout itself.
function observeCanvasSizes() {
  const observer = new ResizeObserver((entries) => {
    for (const { target, contentBoxSize: [box] } of entries) page.canvas_resized(target.id, box.inlineSize, box.blockSize);
    scheduleRender();
  });
  for (const { id } of limits.figures) observer.observe($(id));
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

// Gives each control its range from Rust's fields, and wires it: a move goes through Rust,
// which validates it and returns the next state.
function wireControls() {
  for (const slider of limits.sliders) {
    const element = $(slider.control);
    element.min = String(slider.min);
    element.max = String(slider.max);
    element.step = String(slider.step);
  }
  for (const field of limits.fields) {
    if (!field.control) continue;
    const element = $(field.control);
    const event = element.type === "range" ? "input" : "change";
    element.addEventListener(event, () => {
      const value = element.type === "checkbox" ? String(element.checked) : element.value;
      try {
        apply(page.control(field.control, value));
        clearControlError(element);
      } catch (error) {
        showControlError(element, error.message);
      }
    });
  }
  for (const button of document.querySelectorAll("button[data-action]")) {
    button.addEventListener("click", () => {
      try {
        apply(page.action(button.dataset.action));
      } catch (error) {
        showError(error.message);
        return;
      }
      if (button.dataset.shows) showFigure($(button.dataset.shows));
    });
  }
  const repetitions = $("repetitions");
  repetitions.min = String(limits.repetitions.min);
  repetitions.max = String(limits.repetitions.max);
  repetitions.value = String(limits.repetitions.default);
  $("run-experiment").addEventListener("click", runExperiment);
  $("recompute").addEventListener("click", recompute);
  $("compute-odin").addEventListener("click", () => {
    timings.odinStarted = performance.now();
    for (const { model, set } of odinNeeds) pool.request(model, set, "odin");
    scheduleRender();
  });
  $("evaluate-all").addEventListener("click", () => {
    limits.models.forEach((_, model) => {
      pool.request(model, "test");
      pool.request(model, state.ood);
    });
  });
}

// The "your own image" section: its inputs, the invert choice and the IDX download.
function wireOwnImage() {
  new OwnImageInput({ onPicture: takeOwnPicture, onCleared: clearOwnPicture, onError: showOwnProblem });
  $("own-invert").addEventListener("change", () => {
    if (ownPicture) takeOwnPicture(ownPicture);
  });
  $("own-download").addEventListener("click", () => {
    try {
      download(new Blob([page.own_image_idx()]), "calibra-own-image-idx3-ubyte");
    } catch (error) {
      showOwnProblem(error.message);
    }
  });
}

// "Your own model": the logits, labels and names inputs, and the way back to the test images.
function wireOwnLogits() {
  for (const id of ["own-logits-file", "own-labels-file", "own-names-file"]) $(id).addEventListener("change", loadOwnLogits);
  // A file chosen by mistake (a wrong class-names file) can be taken back; the rest are read again.
  for (const button of document.querySelectorAll(".file-remove")) {
    button.addEventListener("click", () => {
      $(button.dataset.clears).value = "";
      loadOwnLogits();
    });
  }
  for (const button of document.querySelectorAll(".own-logits-back")) button.addEventListener("click", showTestImages);
  $("own-logits-show").addEventListener("click", () => {
    $("temperature-lab").scrollIntoView({ block: "start" });
    $("temperature").focus({ preventScroll: true });
  });
}

// Reads the chosen files in a worker once logits and labels are both chosen; files it refuses
// leave the labs as they were, and its message (which file, which line, what) is shown.
async function loadOwnLogits() {
  const [logits, labels, names] = ["own-logits-file", "own-labels-file", "own-names-file"].map((id) => $(id).files[0]);
  const status = $("own-logits-status");
  status.classList.remove("error");
  if (!logits && !labels) {
    status.textContent = ownData ? `Showing ${ownData}.` : "No files yet: the labs show the test images.";
    return;
  }
  if (!logits || !labels) {
    status.textContent = `Choose ${logits ? "a labels" : "a logits"} file too.`;
    return;
  }
  status.textContent = `Reading ${[logits, labels, names].filter(Boolean).map((file) => file.name).join(", ")}…`;
  const started = performance.now();
  const load = ++ownLoads;
  let description;
  try {
    const read = async (file) => file && { name: file.name, bytes: new Uint8Array(await file.arrayBuffer()) };
    const files = await Promise.all([read(logits), read(labels), read(names)]);
    if (load !== ownLoads) return;
    const readAt = performance.now();
    const table = await readOwnFiles(...files);
    if (load !== ownLoads) return;
    page.load_own_logits(table.logits, table.labels, table.about);
    description = table.about.description;
    timings.ownLogits = { started, read: readAt, parsed: performance.now(), drawn: null, rivals: null };
  } catch (error) {
    // A read that a later choice overtook says nothing, its refusal included.
    if (load === ownLoads) {
      status.textContent = `Cannot use these files: ${error.message ?? error}`;
      status.classList.add("error");
    }
    return;
  }
  showData(description);
}

// Reads a reader's logits files in a worker of their own (own-logits-worker.js, whose module
// has the parsers), ended once it answers, so that its memory (the files and the numbers read)
// goes with it.
function readOwnFiles(logits, labels, names) {
  const worker = new Worker(new URL("./own-logits-worker.js", import.meta.url), { type: "module" });
  return new Promise((resolve, reject) => {
    worker.onmessage = ({ data }) => (data.status === "own-logits" ? resolve(data) : reject(new Error(data.message)));
    worker.onerror = (event) => reject(new Error(`the worker that reads them failed: ${event.message || "it could not start"}`));
    const transfer = [logits, labels, names].filter(Boolean).map((file) => file.bytes.buffer);
    worker.postMessage({ type: "own-logits", logits, labels, names }, transfer);
  }).finally(() => worker.terminate());
}

// Shows the test images again in the first two labs.
function showTestImages() {
  ownLoads++;
  page.show_test_images();
  for (const id of ["own-logits-file", "own-labels-file", "own-names-file"]) $(id).value = "";
  showData(null);
}

// Switches the first two labs between the test images (null) and the reader's logits.
function showData(description) {
  ownData = description;
  document.body.classList.toggle("own-data", Boolean(description));
  for (const note of document.querySelectorAll(".own-data-note")) note.hidden = !description;
  for (const button of document.querySelectorAll(".own-logits-back")) button.hidden = !description;
  $("own-logits-show").hidden = !description;
  for (const span of document.querySelectorAll(".own-data-description")) span.textContent = description ?? "";
  $("own-logits-status").textContent = description ? `Showing ${description}.` : "No files yet: the labs show the test images.";
  $("own-logits-status").classList.remove("error");
  // The bootstrap worker holds the halves of the data shown before: a new one starts with the
  // next request, and no interval or rival computed on the old data can arrive.
  clearTimeout(intervalTimer);
  bootstrap?.worker.terminate();
  bootstrap = null;
  $("explanation").hidden = true;
  if (!description) showProgress(arrived.get(modelIndex()) ?? 0);
  scheduleRender();
}

// Makes a picture the reader's image through Rust; one it refuses clears the answers about the
// last one, which would otherwise sit under its error. Its closest test images are searched
// among all of them, so it waits until they are in.
async function takeOwnPicture(picture) {
  let pixels;
  try {
    await testImages.complete;
    pixels = page.set_own_image(picture.rgba, picture.width, picture.height, $("own-invert").value, images.test);
  } catch (error) {
    clearOwnPicture();
    showOwnProblem(`Cannot use ${picture.name}: ${error.message}.`);
    return;
  }
  ownPicture = picture;
  ownPixels = pixels;
  ownRequests.clear();
  $("own-status").textContent = `Showing ${picture.name}.`;
  $("own-download").disabled = false;
  $("own-seen").replaceChildren(thumbnailAsRead(pixels, 0, `the 28×28 the networks read of ${picture.name}`));
  scheduleRender();
}

// Forgets the reader's picture: an empty pad, or one refused, has no answers.
function clearOwnPicture() {
  page.clear_own_image();
  ownPicture = null;
  ownPixels = null;
  ownRequests.clear();
  $("own-status").textContent = "No picture yet.";
  $("own-download").disabled = true;
  $("own-seen").replaceChildren();
  dirty.own = true;
  scheduleRender();
}

// Says what went wrong with a picture, where the reader is looking.
function showOwnProblem(message) {
  $("own-status").textContent = message;
}

// The shift lab's evaluation images, clean and as the shown severity corrupts them (made in
// Rust for these rows alone, as they are in the corrupted copy the network classifies).
function showShiftThumbnails({ rows, set }) {
  const key = `${rows.join(",")}:${set}`;
  // Drawn once every test image is in (a frame follows their arrival).
  if ($("shift-clean").dataset.key === key || rowsIn("test") < imageCount()) return;
  $("shift-clean").dataset.key = key;
  const side = limits.image_side;
  const strip = (pixels, label) => rows.map((row, index) => thumbnailAsRead(pixels, index, `${label} test image ${row}`));
  const clean = new Uint8Array(rows.length * side * side);
  rows.forEach((row, index) => clean.set(images.test.subarray(row * side * side, (row + 1) * side * side), index * side * side));
  $("shift-clean").replaceChildren(...strip(clean, "clean"));
  $("shift-corrupted").replaceChildren(...(set ? strip(shifted_rows(images.test, new Uint32Array(rows), set), "corrupted") : []));
  $("shift-corrupted-row").hidden = !set;
}

// Image `row` of `pixels` as the network reads it, bright on black, named `label`.
function thumbnailAsRead(pixels, row, label) {
  const canvas = thumbnail(pixels, row, limits.image_side, { asRead: true });
  canvas.setAttribute("role", "img");
  canvas.setAttribute("aria-label", label);
  return canvas;
}

// Asks for the networks' logits the section still needs, and shows the closest test images.
function showOwnAnswers({ needs, neighbours }) {
  for (const model of needs) {
    if ([...ownRequests.values()].some((request) => request.model === model && request.pixels === ownPixels)) continue;
    ownRequestCount += 1;
    ownRequests.set(ownRequestCount, { model, pixels: ownPixels });
    pool.classifyOwn(model, ownPixels, ownRequestCount);
  }
  const key = neighbours.map((n) => n.row).join(",");
  const strip = $("own-neighbours");
  if (strip.dataset.rows === key) return;
  strip.dataset.rows = key;
  strip.replaceChildren(...neighbours.map(({ row, caption }) => {
    const figure = document.createElement("figure");
    const canvas = thumbnailAsRead(images.test, row, `test image ${row}`);
    const text = document.createElement("figcaption");
    text.textContent = `#${row}: ${caption}`;
    figure.append(canvas, text);
    return figure;
  }));
}

// Keeps a network's logits on the reader's picture (Rust drops those of a picture replaced).
function onOwnLogits(message) {
  const request = ownRequests.get(message.start);
  if (!request) return;
  try {
    page.add_own_logits(request.model, request.pixels, message.logits);
  } catch (error) {
    showOwnProblem(`Inference returned bad values: ${error.message}`);
    return;
  }
  scheduleRender();
}

// R random splits against the Beta law, drawn on demand (well under a second).
function runExperiment() {
  const started = performance.now();
  let result;
  try {
    result = page.run_experiment($("repetitions").value);
  } catch (error) {
    showError(`The coverage experiment failed: ${error.message}`);
    return;
  }
  timings.experiment = performance.now() - started;
  applyPatches(result.patches);
  $("experiment-time").textContent = `(computed and drawn in ${timings.experiment.toFixed(0)} ms)`;
}

// The bootstrap worker: one request at a time, the rivals' before the intervals'; of the
// requests of a kind that come meanwhile only the last frame's wait (a dragged slider asks at
// every T it passes, and only where it rests matters).
class BootstrapWorker {
  constructor(onAnswer, onError) {
    this.worker = new Worker(new URL("./bootstrap-worker.js", import.meta.url), { type: "module" });
    this.busy = false; // the message being computed, as JSON, or false
    this.waiting = { rivals: [], difference: [], intervals: [] };
    this.sent = null; // "model:split" of the halves the worker holds
    this.worker.onmessage = (event) => {
      this.busy = false;
      const { status } = event.data;
      if (status === "error") onError(event.data.message);
      else onAnswer(status, event.data.request, event.data[status]);
      this.next();
    };
    this.worker.onerror = (event) => onError(event.message || "could not start");
  }

  // Replaces the waiting requests of one `type` ("rivals", "difference" or "intervals") with a
  // frame's (less the one being computed).
  request(type, requests) {
    this.waiting[type] = requests.filter((request) => JSON.stringify({ type, request }) !== this.busy);
    this.next();
  }

  // Sends the next waiting request, with the halves first if the worker lacks them.
  next() {
    const type = Object.keys(this.waiting).find((kind) => this.waiting[kind].length > 0);
    if (this.busy || type === undefined) return;
    const request = this.waiting[type].shift();
    if (type === "difference") {
      // Both networks' scores on the test and OOD images go with the request (transferred).
      let scores;
      try {
        scores = page.difference_scores(request);
      } catch {
        return this.next(); // the views are gone (another temperature): a later frame asks again
      }
      const message = { type, request, ...scores };
      this.busy = JSON.stringify({ type, request });
      this.worker.postMessage(message, Object.values(scores).map((values) => values.buffer));
      return;
    }
    const key = `${request.model}:${request.split}`;
    if (this.sent !== key) {
      const halves = page.halves();
      if (`${halves.model}:${halves.split}` !== key) return this.next();
      const buffers = ["calibration_logits", "calibration_labels", "evaluation_logits", "evaluation_labels"].map((name) => halves[name].buffer);
      this.worker.postMessage({ type: "data", ...halves }, buffers);
      this.sent = key;
    }
    const message = { type, request };
    this.busy = JSON.stringify(message);
    this.worker.postMessage(message);
  }
}

// A pool of inference workers sharing the image sets: batches go to whichever worker is free.
// A job is one model's logits (or ODIN scores) on one image set.
class InferencePool {
  // `workers`: start-workers.js's workers started at once, how many more may start `later`,
  // and the function that starts one.
  constructor({ early, later, start }, onBatch, onOwn, onError) {
    this.onBatch = onBatch;
    this.onOwn = onOwn;
    this.onError = onError;
    this.workers = [];
    this.later = later;
    this.startWorker = start;
    this.mayGrow = false;
    this.queue = [];
    this.requested = new Set();
    this.loaded = new Set();
    this.failed = new Set();
    // Each loaded model's weights digest, from the first worker that has loaded it.
    this.digests = new Map();
    this.digestArrived = new Map();
    // Each model's weights: settles once the first worker has them (or has failed to load them).
    this.weights = new Map();
    this.weightsArrived = new Map();
    this.weightsSettled = new Set();
    for (const worker of early) this.add(worker);
  }

  // Takes over a started worker and has it load every network already asked for.
  add({ worker, failure }) {
    const slot = { worker, busy: 0 };
    worker.onmessage = (event) => this.receive(slot, event.data);
    // The first uncaught error (its start failed; run errors come back as messages).
    failure.then((event) => {
      this.onError(`The inference worker failed: ${event.message || "could not start (is WebAssembly enabled?)"}`);
      for (const arrived of this.weightsArrived.values()) arrived();
    });
    this.workers.push(slot);
    for (const model of this.loaded) this.postLoad(slot, model);
  }

  // The page has drawn: from now on the pool starts its later workers once images are queued.
  allowGrowth() {
    if (this.mayGrow) return;
    this.mayGrow = true;
    this.pump();
  }

  // Queues every batch of a job not yet requested; the workers load the model's weights once.
  request(model, set, kind = "logits") {
    const key = `${model}:${set}:${kind}`;
    if (this.requested.has(key) || this.failed.has(model)) return;
    this.requested.add(key);
    this.load(model);
    const enqueue = () => {
      const total = imageCount(set);
      for (let start = 0, size = limits.first_batch; start < total; start += size, size = limits.batch) {
        this.queue.push({ model, set, kind, start, count: Math.min(size, total - start) });
      }
      this.pump();
    };
    // Logits come from the cache when it holds them for these weights and images. The images
    // are loaded before each step, not once: a corrupted copy's pixels are dropped when another
    // network's logits on it complete, which can happen while the cache is asked.
    const withImages = (next) => (images[set] ? next() : loadImages(set).then(next));
    if (kind === "logits" && cacheHeldNone && images[set]) return enqueue();
    Promise.resolve(withImages(() => kind === "logits" && fromCache(model, set, this.digests.get(model))))
      .then((cached) => cached || withImages(enqueue))
      .catch((error) => showError(error.message));
  }

  // Has every worker fetch and load `model`'s weights, once: at its first request, or ahead
  // of it while the page is still starting.
  load(model) {
    if (this.loaded.has(model)) return;
    this.loaded.add(model);
    this.digests.set(model, new Promise((resolve) => this.digestArrived.set(model, resolve)));
    this.weights.set(model, new Promise((resolve) => this.weightsArrived.set(model, () => {
      this.weightsSettled.add(model);
      resolve();
    })));
    for (const slot of this.workers) this.postLoad(slot, model);
  }

  // Asks one worker to fetch and load `model`'s weights; its messages run in order, so the
  // batches posted after this one wait for the weights.
  postLoad(slot, model) {
    slot.worker.postMessage({ type: "load", model, url: limits.models[model].url, classes: limits.classes });
  }

  // Resolves once a worker's download of the weights of `model` (already asked to load) is a
  // round trip from its end, or over, or has failed.
  weightsIn(model) {
    return this.weights.get(model);
  }

  // Whether weightsIn(model) has resolved.
  hasWeights(model) {
    return this.weightsSettled.has(model);
  }

  // Asks the least busy worker for the logits of `model` (loaded: its test logits are in) on
  // the reader's 28×28 `pixels`; the answer comes back to onOwn with `start` = `request`.
  classifyOwn(model, pixels, request) {
    const slot = this.workers.reduce((best, candidate) => (candidate.busy < best.busy ? candidate : best));
    const copy = pixels.slice();
    slot.worker.postMessage({ type: "infer", model, set: "own", start: request, pixels: copy }, [copy.buffer]);
    slot.busy += 1;
  }

  // Moves the test-set batches of `model` to the front of the queue.
  prioritise(model) {
    const first = (job) => job.model === model && job.set === "test" && job.kind === "logits";
    this.queue.sort((a, b) => first(b) - first(a));
  }

  // Keeps two batches in flight per worker, so none idles between messages.
  // A batch goes out once its images are whole (the test images arrive as they download).
  pump() {
    if (this.mayGrow && this.queue.length > 0) {
      for (; this.later > 0; this.later -= 1) this.add(this.startWorker());
    }
    const size = limits.image_side ** 2;
    const ready = ({ set, start, count }) => start + count <= rowsIn(set);
    for (const slot of this.workers) {
      while (slot.busy < 2) {
        const next = this.queue.findIndex(ready);
        if (next < 0) break;
        const { model, set, kind, start, count } = this.queue.splice(next, 1)[0];
        const batch = imageSet(set).slice(start * size, (start + count) * size);
        slot.worker.postMessage({ type: kind === "odin" ? "odin" : "infer", model, set, start, pixels: batch }, [batch.buffer]);
        slot.busy += 1;
      }
    }
  }

  // A failure stops that model's remaining batches, so its first message is the one shown.
  receive(slot, message) {
    if (message.status === "fetched") {
      this.weightsArrived.get(message.model)?.();
    } else if (message.status === "ready") {
      this.digestArrived.get(message.model)?.(message.digest);
    } else if (message.set === "own") {
      slot.busy -= 1;
      this.onOwn(message);
      this.pump();
    } else if (message.status === "logits" || message.status === "odin") {
      slot.busy -= 1;
      this.onBatch(message);
      this.pump();
    } else if (message.status === "error") {
      if (this.failed.has(message.model)) return;
      if (message.model !== undefined) {
        this.failed.add(message.model);
        this.weightsArrived.get(message.model)?.();
        this.queue = this.queue.filter((batch) => batch.model !== message.model);
      }
      this.onError(`Inference failed: ${message.message}`, message.model);
    }
  }
}

// When each model's inference started, for the images/s figure.
const started = new Map();

// The cache key of `model`'s logits on `set`, from the digest of its weights (which
// `weightsDigest` resolves to; null where the browser has no crypto.subtle) and of the images,
// once they are all in; resolves to null where there is no key.
function cacheKeyOf(model, set, weightsDigest) {
  const job = `${model}:${set}`;
  if (!cacheKeys.has(job)) {
    cacheKeys.set(job, (async () => {
      const weights = await weightsDigest;
      if (!weights) return null;
      if (set === "test") await testImages.complete;
      imageDigests[set] ??= logitsCache.sha256(imageSet(set));
      return logitsCache.cacheKey(weights, await imageDigests[set], limits.classes);
    })());
  }
  return cacheKeys.get(job);
}

// Feeds the logits of `model` on `set` from the cache when it holds them for these weights
// and these images; resolves whether it did. While the test images are still downloading, the
// cache is first asked whether it holds anything of these weights: if not, the answer is no at
// once, and inference starts on the images already in.
async function fromCache(model, set, weightsDigest) {
  if (!logitsCache.available) return false;
  // A cache that holds nothing (a first visit) lets inference start at once, before the
  // network's weights are in; while the images download, so does one that holds nothing for
  // this network.
  if (!(await cacheHoldsAny)) return false;
  const weights = await weightsDigest;
  if (!weights) return false;
  if (rowsIn(set) < imageCount(set) && !(await logitsCache.holdsAny(weights))) return false;
  const key = await cacheKeyOf(model, set, weightsDigest);
  const hit = await logitsCache.lookup(key);
  if (!hit || hit.logits.length !== imageCount(set) * limits.classes) return false;
  if (set === "test") cachedSince.set(model, hit.stored);
  onBatch({ status: "logits", model, set, start: 0, count: imageCount(set), logits: hit.logits, cached: true });
  showCacheNote();
  return true;
}

// Says whether the chosen network's numbers come from the cache, and since when.
function showCacheNote() {
  const stored = cachedSince.get(modelIndex());
  $("cache-note").hidden = stored === undefined;
  if (stored !== undefined) $("cache-date").textContent = new Date(stored).toLocaleString("en-GB", { dateStyle: "medium", timeStyle: "short" });
}

// Forgets the chosen network's cached logits and loads the page again, which infers them anew.
async function recompute() {
  const prefix = `${modelIndex()}:`;
  const keys = await Promise.all([...cacheKeys].filter(([job]) => job.startsWith(prefix)).map(([, key]) => key));
  await logitsCache.forget(keys.filter(Boolean));
  location.reload();
}

function onBatch(message) {
  let count;
  try {
    count = message.status === "odin"
      ? page.add_odin(message.model, message.set, message.start, message.scores)
      : page.add_logits(message.model, message.set, message.start, message.logits);
  } catch (error) {
    showError(`Inference returned bad values: ${error.message}`);
    return;
  }
  if (message.status === "odin" || message.set !== "test") {
    const complete = message.status === "logits" && count === imageCount(message.set);
    if (complete && !message.cached) keepLogits(message.model, message.set);
    // A corrupted copy's pixels (31 MB for a few copies) are made again if ever needed.
    if (complete && isShifted(message.set) && !pool.queue.some((batch) => batch.set === message.set)) {
      delete images[message.set];
      delete loadingImages[message.set];
    }
    if (count === imageCount(message.set)) scheduleRender();
    else scheduleStreamingRender();
    return;
  }
  const first = !arrived.has(message.model);
  arrived.set(message.model, count);
  // The shown network's batches redraw its labs, the first one and the last one at once;
  // another's test logits matter once complete (the τ and shift labs compare the networks on
  // them).
  if (count === imageCount() || (first && message.model === modelIndex())) scheduleRender();
  else if (message.model === modelIndex()) scheduleStreamingRender();
  if (count === imageCount() && !message.cached) keepLogits(message.model, "test");
  if (count === imageCount() && !(message.model in timings.inferenceDone)) {
    timings.inferenceDone[message.model] = performance.now();
    performance.mark(`calibra:inference-done:${limits.models[message.model].network}`);
  }
  // The progress row moves with the frames the batches ask for, which count the same images:
  // rewritten after each batch, its layout and paint took about a tenth of a second of the
  // page's thread while the workers needed the cores. The last batch marks the page done in
  // the task that asks for its frame.
  if (count === imageCount() && message.model === modelIndex()) showProgress(count);
}

// Stores the logits of `model` on `set`, all arrived, in the cache under their job's key.
function keepLogits(model, set) {
  if (!logitsCache.available) return;
  const logits = page.logits(model, set);
  // The images' digest is taken now, while they are here: a corrupted copy's are dropped next.
  imageDigests[set] ??= logitsCache.sha256(imageSet(set));
  lastKeep = cacheKeyOf(model, set, pool.digests.get(model)).then((key) => key && logitsCache.keep(key, logits));
  cacheHoldsAny = Promise.resolve(true);
  cacheHeldNone = false;
}

// The progress row of the chosen model; hidden, and the page marked for tests, once complete.
// Every frame asks; only a change of network, count or download is written (formatting the
// counts took a throttled phone-class slider frame about 0.7 ms).
let progressShown = null;
// Writes the progress row's counts ("10,000"). Made while the page waits for its module: the
// browser's first number formatting took 12–28 ms (Chromium, 2 cores), and the first progress
// row is written on the way to the first chart.
let countFormat = null;
const formatCount = (count) => countFormat.format(count);
// A failure that stops every network's numbers (the test images, an inference worker), whichever
// network is shown; one network's own failures are the pool's.
let inferenceBroken = false;
function showProgress(count) {
  const total = imageCount();
  const network = !pool.hasWeights(modelIndex());
  const failed = inferenceBroken || pool.failed.has(modelIndex());
  const shown = `${modelIndex()} ${count} ${total} ${testImages.rows} ${network} ${failed}`;
  if (shown === progressShown) return;
  progressShown = shown;
  const done = count === total;
  // Screen readers hear when inference ends, not every batch.
  if (done && document.body.dataset.inference !== "done") $("status-announce").textContent = `All ${formatCount(total)} test images are classified.`;
  document.querySelector(".status").classList.toggle("done", done);
  // Later batches and images do not make a failed page look as if it were still running.
  document.body.dataset.inference = done ? "done" : failed ? "failed" : "running";
  $("progress").max = total;
  $("progress").value = count;
  const seconds = (performance.now() - started.get(modelIndex())) / 1000;
  const parts = network ? ["downloading the network"] : [];
  if (count > 0) parts.push(`${formatCount(count)} / ${formatCount(total)} images · ${formatCount(Math.round(count / seconds))} images/s`);
  // After the images counted above, "downloaded" needs no noun (and the row keeps to one line on
  // a desktop screen); after "downloading the network" alone, it does.
  if (testImages.rows < total) parts.push(`${formatCount(testImages.rows)} / ${formatCount(total)} ${count > 0 ? "" : "images "}downloaded`);
  if (!done) $("progress-text").textContent = parts.join(" · ");
}

// Starts (or moves to the front) the chosen model's inference.
function selectModel() {
  const index = modelIndex();
  if (!started.has(index)) started.set(index, performance.now());
  pool.request(index, "test");
  pool.prioritise(index);
  showProgress(arrived.get(index) ?? 0);
  // The row says when the network is in, though no frame may come then.
  pool.weightsIn(index).then(() => {
    if (index === modelIndex()) showProgress(arrived.get(index) ?? 0);
  });
  showCacheNote();
}

// A browser without WebAssembly SIMD cannot run the module: say so instead of failing blankly.
function supportsSimd() {
  const probe = new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3, 2, 1, 0, 10, 10, 1, 8, 0, 65, 0, 253, 15, 253, 98, 11]);
  return typeof WebAssembly === "object" && WebAssembly.validate(probe);
}

// Fetches a file, with a message that names it when it fails.
async function fetchOk(url) {
  let response;
  try {
    response = await fetch(url);
  } catch (error) {
    throw new Error(`Cannot load ${url}: ${error.message}`);
  }
  if (!response.ok) throw new Error(`Cannot load ${url}: HTTP ${response.status} ${response.statusText}`);
  return response;
}

// Fetches a gzipped file (an IDX file) and unzips it: the page's module has no gzip decoder.
async function fetchUnzipped(url) {
  const body = await unzipped(await fetchOk(url));
  try {
    return new Uint8Array(await new Response(body).arrayBuffer());
  } catch (error) {
    throw new Error(`Cannot unzip ${url}: ${error.message}`);
  }
}

// The body of `response` unzipped as it arrives: through the browser's DecompressionStream when
// it starts with gzip's magic bytes, as it is when a host already unzipped it
// (Content-Encoding).
async function unzipped(response) {
  const reader = response.body.getReader();
  const first = await reader.read();
  let rest = first.done ? null : first.value;
  const gzipped = rest !== null && rest[0] === 0x1f && rest[1] === 0x8b;
  // Passed on in pieces of at most UNZIP_PIECE bytes: the browser hands over all that has
  // arrived (locally, megabytes at once), and a piece is unzipped whole before anything comes
  // out of it, so the images at its start waited about 20 ms for the rest of it.
  const body = new ReadableStream({
    async pull(controller) {
      if (rest === null) {
        const { done, value } = await reader.read();
        if (done) return controller.close();
        rest = value;
      }
      controller.enqueue(rest.subarray(0, UNZIP_PIECE));
      rest = rest.length > UNZIP_PIECE ? rest.subarray(UNZIP_PIECE) : null;
    },
    cancel: (reason) => reader.cancel(reason),
  });
  return gzipped ? body.pipeThrough(new DecompressionStream("gzip")) : body;
}

// Reads the test images as they arrive, so that the first batches are inferred while the rest
// downloads. `first` is FIRST_IMAGES_URL unzipped (the header and the first batch's images, a
// small file asked for at once), or null where it could not be had; `response` resolves to
// IMAGES_URL's response (the whole gzipped IDX file, asked for when main says). The header,
// checked by Rust, tells how many images there are; the pixels are copied in place and
// testImages.rows counts the whole images, each new one offered to the workers. Resolves with
// the pixels (still filling) once a header is in; testImages.complete resolves once every image
// is, and rejects where the two files disagree.
async function streamTestImages(response, first) {
  const size = limits.image_side ** 2;
  const early = first !== null && first.length >= limits.images_header;
  let file = early ? null : await openIdx(await response, IMAGES_URL);
  const header = early ? first.subarray(0, limits.images_header) : file.header;
  const count = idx_image_count(header, early ? FIRST_IMAGES_URL : IMAGES_URL);
  const pixels = new Uint8Array(count * size);
  const prefix = early ? first.subarray(header.length, header.length + Math.min(first.length - header.length, pixels.length)) : pixels.subarray(0, 0);
  pixels.set(prefix);
  testImages.rows = Math.floor(prefix.length / size);
  let written = 0;
  // Bytes past the last image are ignored, as Rust's IDX parser ignores them.
  const add = (chunk) => {
    const taken = Math.min(chunk.length, pixels.length - written);
    const before = written;
    pixels.set(chunk.subarray(0, taken), written);
    written += taken;
    if (before < prefix.length && written >= prefix.length && !equalBytes(pixels.subarray(0, prefix.length), prefix)) {
      throw new Error(`${FIRST_IMAGES_URL} does not hold the first images of ${IMAGES_URL}: the site is built from two different files`);
    }
    const rows = Math.floor(written / size);
    if (rows <= testImages.rows) return;
    testImages.rows = rows;
    pool.pump();
    // Until the first logits, the download is the news; then the frames carry the row.
    if (labelsRead && !arrived.has(modelIndex())) showProgress(0);
  };
  testImages.complete = (async () => {
    file ??= await openIdx(await response, IMAGES_URL);
    if (!equalBytes(file.header, header)) throw new Error(`${FIRST_IMAGES_URL} and ${IMAGES_URL} have different headers: the site is built from two different files`);
    if (file.rest) add(file.rest);
    for (;;) {
      const { done, value } = await file.read();
      if (done) break;
      add(value);
    }
    if (written < pixels.length) throw new Error(`${IMAGES_URL} ends after ${formatCount(testImages.rows)} of the ${formatCount(count)} images its header declares`);
  })();
  return pixels;
}

// Opens the gzipped IDX file of `response` (from `url`) and reads its header: resolves with
// the header, the bytes read past it (or null) and `read`, which gives the next unzipped piece.
async function openIdx(response, url) {
  const reader = (await unzipped(response)).getReader();
  // A broken gzip stream rejects a read: say which file.
  const read = () => reader.read().catch((error) => {
    throw new Error(`Cannot unzip ${url}: ${error.message}`);
  });
  const header = new Uint8Array(limits.images_header);
  let filled = 0;
  let rest = null;
  while (filled < header.length) {
    const { done, value } = await read();
    if (done) throw new Error(`${url} ends inside its header`);
    const taken = Math.min(value.length, header.length - filled);
    header.set(value.subarray(0, taken), filled);
    filled += taken;
    if (taken < value.length) rest = value.subarray(taken);
  }
  return { header, rest, read };
}

// Whether `first`, the small file unzipped (or null), holds the IDX header and the whole first
// batch.
const holdsFirstBatch = (first) =>
  first !== null && first.length >= limits.images_header + limits.first_batch * limits.image_side ** 2;

// Whether two byte arrays hold the same bytes.
const equalBytes = (a, b) => a.length === b.length && a.every((byte, i) => byte === b[i]);

// Resolves once the article is parsed (index.js loads asynchronously, from the head).
const articleParsed = new Promise((resolve) => {
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", resolve, { once: true });
  else resolve();
});

async function main() {
  if (!supportsSimd()) {
    throw new Error("This browser does not support WebAssembly SIMD, which calibra needs. Any current Chrome, Edge, Firefox or Safari (16.4 or later) does.");
  }
  // The script runs as soon as it has loaded, while the article is still being parsed: the
  // downloads, the workers and the page's module start before the page touches the article.
  const labels = fetchUnzipped(LABELS_URL);
  // The first batch's images come in a file of their own, asked for at once (a few tens of
  // kilobytes: on a slow link they hardly slow the weights): the first batch then waits for
  // the network alone. Where that file cannot be had, the whole one serves, a little later.
  const firstImages = fetchUnzipped(FIRST_IMAGES_URL).catch(() => null);
  pool = new InferencePool(window.calibraWorkers, onBatch, onOwnLogits, async (message, model) => {
    // No frame will draw the first batch's logits: the rest of the test images come in anyway.
    showFirstLogits?.();
    if (model === undefined) inferenceBroken = true;
    await articleParsed;
    showError(message);
    if (model === undefined || model === modelIndex()) document.body.dataset.inference = "failed";
  });
  const pageModule = init();
  // Whether this browser kept logits (a revisit), asked while the page's module compiles.
  cacheHoldsAny = logitsCache.holdsAny();
  cacheHoldsAny.then((holds) => {
    cacheHeldNone = !holds;
  });
  await articleParsed;
  trackSliderBars();
  countFormat = new Intl.NumberFormat("en");
  await pageModule;
  limits = readLimits();
  page = counted(new Page());
  const first = readHash();
  state = first.state;
  writeHash(first.hash);
  applyPatches(first.patches);
  showView(first.article_hash);
  // Known before the first logits come, so that their frame draws the charts on screen.
  observeVisibility();
  pool.load(modelIndex());
  // On a first visit the whole file of test images (4.1 MiB) is fetched once the first batch's
  // logits are on screen: the first chart needs all of the network's weights but only the first
  // batch's images, which come with the small file, and on two cores the big file's download
  // and unzipping competed with the first batch and its frame (twelve cold visits each,
  // alternating: first chart painted at 509 against 585 ms; all images 1.62 against 1.64 s). On
  // a slow link the file then follows the weights after the first batch's run and a round trip
  // (at 5 Mbit/s its last image came about 0.2 s later, 9.7 s). Where the small file cannot
  // serve, the whole one is fetched once the weights are a round trip from in (on a slow link
  // the two would share it). A revisit, with logits kept, has both in the browser's cache and
  // fetches them at once.
  const wholeFile = (async () => {
    if (!(await cacheHoldsAny)) {
      if (holdsFirstBatch(await firstImages)) await firstLogitsShown;
      else await pool.weightsIn(modelIndex());
    }
    return fetchOk(IMAGES_URL);
  })();
  images.test = await streamTestImages(wholeFile, await firstImages);
  // Once all are in, a frame draws what waited for them (the shift lab's thumbnails).
  testImages.complete.then(scheduleRender, (error) => {
    inferenceBroken = true;
    showError(error.message);
    document.body.dataset.inference = "failed";
  });
  page.set_labels(await labels, LABELS_URL);
  labelsRead = true;
  // Inference asks for the page's thread only to send batches: it starts before the page wires.
  selectModel();
  observeCanvasSizes();
  gallery = new Gallery({ pixels: images.test, limits, onSelect: scheduleRender });
  wireControls();
  addFigureMenus({ figures: limits.figures, page, embedHash: (figure) => page.view_hash(figure), link: currentLink, onError: showError });
  wireOwnImage();
  wireOwnLogits();
  scheduleRender();

  document.addEventListener("keydown", onPresentationKey);
  // A reload or a closed tab keeps the last state's link.
  window.addEventListener("pagehide", flushHash);
  window.addEventListener("hashchange", () => {
    knownHash = location.hash;
    clearError();
    apply(readHash());
  });
  // Charts follow the page's width (not its height, which the charts themselves change).
  let width = 0;
  new ResizeObserver(([entry]) => {
    if (entry.contentRect.width !== width) {
      width = entry.contentRect.width;
      scheduleRender();
    }
  }).observe(document.body);
}

main().catch(async (error) => {
  await articleParsed;
  showError(error instanceof Error ? error.message : String(error));
  document.body.dataset.inference = "failed";
});
