// @ts-check
// What a frame's readouts (Page.render's answer) set going outside the page's module: the work
// they ask of the inference pool and of the bootstrap worker, the galleries and the reader's
// picture they show, and the timings the benchmark reads. Rust decides what each frame needs;
// this hands it on.
import { $ } from "./dom.js";
import { afterPaint } from "./frame.js";
import { showOodGalleries, showShiftThumbnails } from "./gallery.js";
import { timings } from "./measurements.js";

export class Readouts {
  /**
   * @param {{ pool: import("./inference-pool.js").InferencePool, bootstrap: import("./bootstrap-client.js").Bootstrap,
   *   images: import("./test-images.js").ImageSets, frames: import("./frame.js").Frames,
   *   gallery: import("./gallery.js").Gallery, ownPicture: import("./own-picture.js").OwnPicture,
   *   ownData: import("./own-data.js").OwnData, arrivals: import("./arrivals.js").Arrivals,
   *   offline: import("./offline.js").Offline, imageSide: number }} parts
   *   the pool, the bootstrap worker's client, the image sets, the frames, the gallery, the
   *   reader's picture and logits, the arrivals, the offline store and the images' side
   */
  constructor({ pool, bootstrap, images, frames, gallery, ownPicture, ownData, arrivals, offline, imageSide }) {
    this.pool = pool;
    this.bootstrap = bootstrap;
    this.images = images;
    this.frames = frames;
    this.gallery = gallery;
    this.ownPicture = ownPicture;
    this.ownData = ownData;
    this.arrivals = arrivals;
    this.offline = offline;
    this.imageSide = imageSide;
    /** @type {{ model: number, set: string }[]} the ODIN scores the τ lab's button would compute (from the last frame) */
    this.odinNeeds = [];
    // Whether a frame has drawn the first chart (timings.firstChart follows once it is painted).
    this.firstChartDrawn = false;
  }

  /**
   * Acts on one frame's readouts: `wanted` is what the frame asked to draw, `millis` how long
   * its render call took, `galleryState` the state's gallery settings.
   * @param {any} wanted
   * @param {any} readouts
   * @param {number} millis
   * @param {any} galleryState
   */
  take(wanted, readouts, millis, galleryState) {
    const { dirty } = this.frames;
    if (wanted.own_image) {
      dirty.own = false;
      if (readouts.own_image) this.ownPicture.show(readouts.own_image);
    }
    if (wanted.ood) this.takeOod(readouts, millis);
    if (wanted.shift) this.takeShift(readouts, millis);
    if (readouts.waiting) return;
    if (readouts.drawn.length > 0) this.pool.allowGrowth();
    for (const lab of readouts.drawn) dirty[lab] = false;
    if (readouts.drawn.includes("temperature")) this.takeTemperature(readouts, millis);
    if (readouts.drawn.includes("conformal")) timings.conformalDraws.push(millis);
    if (readouts.gallery) {
      dirty.gallery = false;
      this.gallery.show(readouts.gallery, galleryState);
    }
    if (readouts.explanation) this.gallery.explain(readouts.explanation);
  }

  /** The τ lab's logits, and the worker's computations it waits for. @param {any} readouts @param {number} millis */
  takeOod(readouts, millis) {
    for (const { model, set } of readouts.needs) this.pool.request(model, set, "logits", "ood-lab");
    this.odinNeeds = readouts.odin_needs;
    if (!readouts.drawn.includes("ood")) return;
    this.frames.dirty.ood = false;
    timings.oodDraws.push(millis);
    showOodGalleries(readouts.ood_galleries, (set) => this.images.get(set), this.imageSide);
    // The lesson's paired difference: a second of bootstrap, so the worker computes it.
    if (readouts.difference_request) this.bootstrap.request("difference", [readouts.difference_request]);
    // The feature detectors' fits: a second a network, so the worker computes them.
    if (readouts.feature_requests.length) this.bootstrap.request("features", readouts.feature_requests);
    // Every score ranked with its intervals: a second of bootstrap.
    if (readouts.ranking_request) this.bootstrap.request("ranking", [readouts.ranking_request]);
    // One T against normalised temperature scaling, a network at a time.
    if (readouts.normalized_requests.length) this.bootstrap.request("normalized", readouts.normalized_requests);
  }

  /** The shift lab's logits and thumbnails. @param {any} readouts @param {number} millis */
  takeShift(readouts, millis) {
    for (const { model, set } of readouts.shift_needs) this.pool.request(model, set, "logits", "shift-lab");
    if (!readouts.drawn.includes("shift")) return;
    this.frames.dirty.shift = false;
    timings.shiftDraws.push(millis);
    // Drawn once every test image is in (a frame follows their arrival).
    if (this.images.rowsIn("test") === this.images.count()) showShiftThumbnails(readouts.shift_thumbnails, this.images.get("test"), this.imageSide);
  }

  /** The first lab's worker computations and timings. @param {any} readouts @param {number} millis */
  takeTemperature(readouts, millis) {
    const { ownLogits } = timings;
    if (this.ownData.description && ownLogits && !ownLogits.drawn) ownLogits.drawn = performance.now();
    if (readouts.interval_requests.length) this.bootstrap.requestAtRest(readouts.interval_requests);
    // Asked for at once: the rivals' table waits for them.
    if (readouts.rivals_request) this.bootstrap.request("rivals", [readouts.rivals_request]);
    // Asked for at once too, and only while the chart is on screen: its curves wait for them.
    if (readouts.anatomy_request) this.bootstrap.request("anatomy", [readouts.anatomy_request]);
    timings.draws.push(millis);
    // The first chart counts once it is on the screen, not once it is drawn on its canvas; the
    // test images in by then tell whether their reading waited for it.
    if (!this.firstChartDrawn && this.frames.onScreen.has("reliability")) {
      this.firstChartDrawn = true;
      afterPaint(() => {
        timings.firstChart = performance.now();
        timings.firstChartImages = this.images.testRows;
        performance.mark("calibra:first-chart");
        // The service worker once every test image is inferred: its registration and the
        // sweep's hashing and copying took a core from the inference workers (a first visit is
        // not slowed; docs/benchmarks.md).
        this.arrivals.firstSetComplete.then(() => this.offline.register());
      });
    }
    $("render-time").textContent = `(computed and drawn in ${millis.toFixed(1)} ms)`;
  }
}
