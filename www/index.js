// @ts-check
// calibra's page: loads the data, streams logits from inference workers into Rust, and asks
// Rust for one render per animation frame. Rust owns the state (Page holds it: a link, a control
// and a button change it there, through Page.read_hash, Page.control and Page.action), its
// defaults, ranges and validation, every number and every sentence; this file only wires the
// page's modules: the downloads (assets.js, test-images.js), the workers (inference-pool.js,
// bootstrap-client.js), the logits kept between visits (cached-logits.js), the frames
// (frame.js), the link (hash.js), the controls (controls.js) and the reader's own data
// (own-data.js, own-picture.js).
import init, { Page, limits as readLimits } from "./pkg/calibra.js";
import { FIRST_IMAGES_URL, LABELS_URL, fetchOk, fetchUnzipped, IMAGES_URL } from "./assets.js";
import { Bootstrap } from "./bootstrap-client.js";
import { Arrivals } from "./arrivals.js";
import { CachedLogits } from "./cached-logits.js";
import { setSliderRanges, trackSliderBars, wireControls, wireExperiment, wirePresentationKeys } from "./controls.js";
import { wireWorstSlab } from "./controls.js";
import { $, applyPatches, articleParsed, clearError, showError } from "./dom.js";
import { showEmbed } from "./embed.js";
import { addFigureMenus } from "./figure-menu.js";
import { Frames, afterPaint } from "./frame.js";
import { Gallery } from "./gallery.js";
import { HashWriter } from "./hash.js";
import { InferencePool } from "./inference-pool.js";
import { onJump } from "./lab-index.js";
import { calls, counted, timings } from "./measurements.js";
import { Offline } from "./offline.js";
import { OwnData } from "./own-data.js";
import { OwnPicture } from "./own-picture.js";
import { Progress } from "./progress.js";
import { Readouts } from "./readouts.js";
import { ImageSets } from "./test-images.js";

/** @typedef {import("./controls.js").Next} Next */

/** @type {ReturnType<typeof readLimits>} */
let limits = null;
// The page state as Rust last returned it, to read (its fields are the hash's keys); Rust's Page
// holds the state itself, and no call takes it back.
/** @type {any} */
let state = null;
/** @type {Page} */
let page = null;
// Whether the page has read the test labels, and so holds the labs' data.
let labelsRead = false;
const images = new ImageSets(timings);
const hash = new HashWriter();
const frames = new Frames(frame);
const cache = new CachedLogits(images, (model) => pool.digests.get(model));
/** @type {InferencePool} */
let pool = null;
/** @type {Progress} */
let progress = null;
/** @type {Gallery} */
let gallery = null;
/** @type {Bootstrap} */
let bootstrap = null;
/** @type {OwnData} */
let ownData = null;
/** @type {OwnPicture} */
let ownPicture = null;
// Resolves once a frame with the shown network's logits is painted, or once inference has
// failed: on a first visit the rest of the test images are fetched then (see main). Its resolver
// is dropped once a frame has asked for it, so that later frames do not ask again.
/** @type {(() => void) | null} */
let showFirstLogits = null;
const firstLogitsShown = new Promise((resolve) => {
  showFirstLogits = () => resolve(undefined);
});
// The controls' patches of the states applied since the last frame, written after that frame's
// drawing: written at once, they would make the frame's first canvas text recompute the
// document's style, which the browser then computes again for the readouts' patches.
/** @type {object[]} */
let pendingPatches = [];
/** @type {Arrivals} */
let arrivals = null;
/** @type {Offline} */
let offline = null;
/** @type {Readouts} */
let handOff = null;

window.calibra = {
  timings,
  calls,
  get state() { return state; },
  // Whether a state's hash is still to be written into the address (HashWriter).
  get hashPending() { return hash.pending !== null; },
  get limits() { return limits; },
  // How many of the test images are in (see ImageSets.streamTest).
  get testImagesIn() { return images.testRows; },
  // The 28×28 the networks read of the reader's picture, once there is one.
  get ownPixels() { return ownPicture?.pixels && Array.from(ownPicture.pixels); },
  // The logits the page computed for model `index` on image set `set`, once all have arrived:
  // the tests compare the page's numbers with the command-line tool's on exactly these.
  logits: (index, set) => Array.from(page.logits(index, set)),
  // The current split's calibration rows, on which the feature detectors are fitted.
  calibrationRows: () => Array.from(page.calibration_rows()),
  // Resolves once the logits last handed to the cache are stored (tests wait for it before
  // they load the page again).
  cacheSettled: () => cache.lastKeep,
  // Resolves once the service worker is registered and keeps what the page has fetched (tests
  // wait for it before they go offline).
  offlineKept: () => offline.register().then((registration) => registration && offline.sweep()),
};

const modelIndex = () => limits.model_index[state.model];

/**
 * Takes a state Rust returned: writes the link, follows a model change, and asks for a frame,
 * which shows its controls' patches once it has drawn.
 * @param {Next} next
 */
function apply(next) {
  const previous = state;
  state = next.state;
  // Intervals asked for in the last state would be computed on its data: its next frame asks anew.
  bootstrap?.cancelIntervals();
  pendingPatches.push(...next.patches);
  hash.write(next.hash);
  showView(next.article_hash);
  if (pool && previous && state.model !== previous.model) selectModel();
  frames.schedule();
}

// Shows the article, one figure (the embed view) or presentation mode, as the state says;
// `articleHash` is the article's hash in the embed view (its link back).
function showView(/** @type {string | undefined} */ articleHash) {
  const articleHref = articleHash ? `./#${articleHash}` : "./";
  showEmbed({ figureId: state.embed, articleHref, present: state.present, figures: limits.figures });
}

// Reads the hash through Rust; ignored entries are reported, the rest kept.
function readHash() {
  const next = page.read_hash(location.hash);
  if (next.rejected.length) showError(`This link's settings were partly ignored: ${next.rejected.join("; ")}.`);
  return next;
}

// The animation frame: draws what is on screen, and says when the shown network's first logits
// are painted (firstLogitsShown).
function frame() {
  if (!labelsRead) return;
  render();
  if (showFirstLogits && arrivals.rows.has(modelIndex())) {
    afterPaint(showFirstLogits);
    showFirstLogits = null;
  }
}

// One wasm call recomputes and redraws the labs on screen and returns the readouts.
function render() {
  const wanted = frames.begin(gallery.selectedRow);
  const callsBefore = calls.total;
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
  progress.show(ownData.description ? arrivals.of(modelIndex()) : readouts.arrived);
  handOff.take(wanted, readouts, millis, state.gallery);
  // After take, which marks the labs drawn clean: end may mark one dirty again.
  frames.end(wanted, readouts);
}

// Redraws the lab that shows an answer of the bootstrap worker.
function onBootstrapAnswer(/** @type {string} */ type) {
  if (type === "difference" || type === "features" || type === "ranking" || type === "normalized") {
    frames.dirty.ood = true;
    frames.schedule();
    return;
  }
  if (type === "intervals") timings.intervals.push(performance.now());
  else if (type === "rivals" && ownData.description && timings.ownLogits && !timings.ownLogits.rivals) timings.ownLogits.rivals = performance.now();
  frames.dirty.temperature = true;
  frames.request();
}

// The labs switched between the test images and the reader's logits.
function onDataShown(/** @type {string | null} */ description) {
  bootstrap.end();
  $("explanation").hidden = true;
  if (!description) progress.show(arrivals.of(modelIndex()));
  frames.schedule();
}

// Starts (or moves to the front) the chosen model's inference.
function selectModel() {
  const index = modelIndex();
  progress.start(index);
  pool.request(index, "test", "logits", "temperature-lab");
  pool.prioritise(index);
  progress.show(arrivals.of(index));
  // The row says when the network is in, though no frame may come then.
  pool.weightsIn(index).then(() => {
    if (index === modelIndex()) progress.show(arrivals.of(index));
  });
  cache.showNote(index);
}

// Wires the buttons that ask the pool or the cache for work.
function wireInferenceButtons() {
  // Forgets the chosen network's cached logits and loads the page again, which infers them anew.
  $("recompute").addEventListener("click", () => cache.forget(modelIndex()).then(() => location.reload()));
  $("compute-odin").addEventListener("click", () => {
    timings.odinStarted = performance.now();
    for (const { model, set } of handOff.odinNeeds) pool.request(model, set, "odin", "ood-lab");
    frames.schedule();
  });
  $("evaluate-all").addEventListener("click", () => {
    limits.models.forEach((_, model) => {
      pool.request(model, "test", "logits", "ood-lab");
      pool.request(model, state.ood, "logits", "ood-lab");
    });
  });
}

// A browser without WebAssembly SIMD cannot run the module: say so instead of failing blankly.
function supportsSimd() {
  const probe = new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3, 2, 1, 0, 10, 10, 1, 8, 0, 65, 0, 253, 15, 253, 98, 11]);
  return typeof WebAssembly === "object" && WebAssembly.validate(probe);
}

// Resolves once the page knows which network it shows and has asked the workers for it.
let markNetworkAsked = () => {};
const networkAsked = new Promise((resolve) => {
  markNetworkAsked = () => resolve(undefined);
});

// The response of the whole file of test images (4.1 MiB). On a first visit it is asked for
// once the first batch's logits are on screen: the first chart needs all of the network's
// weights but only the first batch's images, which come with the small file (`firstImages`),
// and on two cores the big file's download and unzipping competed with the first batch and its
// frame. On a slow link the file then follows the weights after the first batch's run and a
// round trip. Where the small file cannot serve, the whole one is asked for once the weights
// are a round trip from in (on a slow link the two would share it). A revisit (the hint that
// logits were kept) has it in the browser's cache and asks for it at once, before the page's
// module is in: the kept logits' key holds the file's digest, and they wait for it.
async function fetchWholeFile(/** @type {Promise<Uint8Array | null>} */ firstImages) {
  if (!cache.mayHold) {
    await networkAsked;
    if (images.holdsFirstBatch(await firstImages)) await firstLogitsShown;
    else await pool.weightsIn(modelIndex());
  }
  return fetchOk(IMAGES_URL, (attempt, of) => {
    progress.retry("the test images'", attempt, of);
    if (labelsRead) progress.show(arrivals.of(modelIndex()));
  });
}

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
  pool = new InferencePool(window.calibraWorkers, {
    images,
    cache,
    onBatch: (message) => arrivals.take(message),
    onOwn: (message) => ownPicture?.onLogits(message),
    onLastLayer: (model, values) => arrivals.keepLastLayer(model, values),
    onError: async (message, model) => {
      // No frame will draw the first batch's logits: the rest of the test images come in anyway.
      showFirstLogits?.();
      if (model === undefined) progress.broken = true;
      await articleParsed;
      showError(message);
      if (model === undefined || model === modelIndex()) document.body.dataset.inference = "failed";
    },
    onUnfetched: async () => {
      // As onError: without the shown network (perhaps this one: the page may not know yet
      // which it shows), no frame draws the first batch's logits.
      if (!state || pool.failed.has(modelIndex())) showFirstLogits?.();
      await articleParsed;
      offline.showUnfetched(pool.unfetched.values());
      if (labelsRead) progress.show(arrivals.of(modelIndex()));
    },
    onRetry: (model, attempt, of) => {
      if (state && model !== modelIndex()) return;
      progress.retry("the network's", attempt, of);
      if (labelsRead) progress.show(arrivals.of(model));
    },
  });
  offline = new Offline({
    title: (model) => limits.models[model].title,
    onRetry: () => {
      pool.retry();
      if (!labelsRead) return;
      selectModel();
      frames.schedule();
    },
  });
  progress = new Progress(images, pool, modelIndex);
  cache.onBatch = (message) => arrivals.take(message);
  cache.onFeatures = (model, set, features) => arrivals.takeFeatures(model, set, features);
  // Dropped since their logits were read (by another tab: the store holds ENTRIES sets): the
  // network's entries are forgotten, so that the next visit computes both again.
  cache.onFeaturesLost = (model) => {
    cache.forget(model);
    showError(`The ${limits.models[model].title} network's features, which the feature detectors read, are no longer kept in this browser: reload the page to compute them again.`);
  };
  cache.featuresDue = firstLogitsShown;
  cache.onAnswered = () => cache.showNote(modelIndex());
  const pageModule = init();
  // Whether this browser kept logits (a revisit), asked while the page's module compiles.
  cache.start();
  const wholeFile = fetchWholeFile(firstImages);
  cache.digestFile("test", wholeFile);
  await articleParsed;
  // Each lab's --slider-bar-height restyles the lab: set after the first chart, not before it.
  firstLogitsShown.then(trackSliderBars);
  progress.prepare();
  await pageModule;
  limits = readLimits();
  images.limits = limits;
  setSliderRanges(limits);
  page = counted(new Page());
  arrivals = new Arrivals({ page, images, pool, frames, progress, cache, model: modelIndex });
  bootstrap = new Bootstrap(page, onBootstrapAnswer, showError);
  const first = readHash();
  state = first.state;
  hash.write(first.hash);
  applyPatches(first.patches);
  showView(first.article_hash);
  // Known before the first logits come, so that their frame draws the charts on screen.
  frames.observe(limits.figures, limits.blocks);
  onJump((landed) => frames.holdUntil(landed));
  pool.load(modelIndex());
  markNetworkAsked();
  await images.streamTest(wholeFile, await firstImages, () => {
    pool.pump();
    // Until the first logits, the download is the news; then the frames carry the row.
    if (labelsRead && !arrivals.rows.has(modelIndex())) progress.show(0);
  }, firstLogitsShown);
  // Once all are in, a frame draws what waited for them (the shift lab's thumbnails).
  images.testComplete.then(() => frames.schedule(), (error) => {
    progress.broken = true;
    showError(error.message);
    document.body.dataset.inference = "failed";
  });
  page.set_labels(await labels, LABELS_URL);
  labelsRead = true;
  // Inference asks for the page's thread only to send batches: it starts before the page wires.
  selectModel();
  frames.observeCanvasSizes(page);
  gallery = new Gallery({ images, limits, onSelect: () => frames.schedule() });
  wireControls(page, limits, apply);
  wireExperiment(page, limits, timings);
  wireWorstSlab(page, timings);
  wireInferenceButtons();
  addFigureMenus({ figures: limits.figures, page, embedHash: (figure) => page.view_hash(figure), link: () => hash.link(), onError: showError });
  ownPicture = new OwnPicture({ page, images, pool, onChange: () => frames.schedule() });
  ownPicture.wire();
  ownData = new OwnData(page, timings, onDataShown);
  ownData.wire();
  handOff = new Readouts({ pool, bootstrap, images, frames, gallery, ownPicture, ownData, arrivals, offline, imageSide: limits.image_side });
  offline.wireKeepButton();
  frames.schedule();

  wirePresentationKeys(page, apply, () => state?.present);
  // A reload or a closed tab keeps the last state's link.
  window.addEventListener("pagehide", () => hash.flush());
  window.addEventListener("hashchange", () => {
    hash.seen();
    clearError();
    apply(readHash());
  });
  // Charts follow the page's width (not its height, which the charts themselves change).
  let width = 0;
  new ResizeObserver(([entry]) => {
    if (entry.contentRect.width !== width) {
      width = entry.contentRect.width;
      frames.schedule();
    }
  }).observe(document.body);
}

main().catch(async (error) => {
  await articleParsed;
  showError(error instanceof Error ? error.message : String(error));
  document.body.dataset.inference = "failed";
});
