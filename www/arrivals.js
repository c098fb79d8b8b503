// @ts-check
// Each batch of logits (or ODIN scores) as it arrives from the pool or the cache: kept in Rust,
// counted, stored in the cache once its job is complete, and the redraw it asks for.
import { showError } from "./dom.js";
import { timings } from "./measurements.js";
import { isShifted } from "./test-images.js";

/** @typedef {import("./messages.js").LogitsAnswer} LogitsAnswer */
/** @typedef {import("./messages.js").OdinAnswer} OdinAnswer */

export class Arrivals {
  /**
   * @param {{ page: any, images: import("./test-images.js").ImageSets, pool: import("./inference-pool.js").InferencePool,
   *   frames: import("./frame.js").Frames, progress: import("./progress.js").Progress,
   *   cache: import("./cached-logits.js").CachedLogits, model: () => number }} parts
   *   the page's wasm handle, the image sets, the pool, the frames, the progress row, the
   *   cache and the chosen network's index
   */
  constructor({ page, images, pool, frames, progress, cache, model }) {
    this.page = page;
    this.images = images;
    this.pool = pool;
    this.frames = frames;
    this.progress = progress;
    this.cache = cache;
    this.model = model;
    /** @type {Map<number, number>} rows of each model whose test-set logits have arrived, as Rust counted them */
    this.rows = new Map();
    /** @type {Map<number, Float32Array>} each model's last layer, until its first batch hands it to Rust */
    this.lastLayers = new Map();
    /** @type {Set<number>} the models whose logits Rust has taken, on any image set */
    this.taken = new Set();
    /** @type {() => void} resolves firstSetComplete */
    this.setComplete = () => {};
    /** Resolves once a network's logits on every test image are in (the shown one's, on a first visit). */
    this.firstSetComplete = new Promise((resolve) => {
      this.setComplete = () => resolve(undefined);
    });
  }

  /**
   * Keeps a model's last layer (a worker sends it before the model's first inferred logits),
   * for the feature detectors; Rust takes it with the model's first batch, the labs' data being
   * there by then.
   * @param {number} model
   * @param {Float32Array} values
   */
  keepLastLayer(model, values) {
    this.lastLayers.set(model, values);
    // Logits from the cache may come first (found by the weights' digest, which the worker
    // sends before it builds the model): a frame then asks again whether the detectors can run.
    if (!this.taken.has(model)) return;
    try {
      this.setLastLayer(model);
    } catch (error) {
      showError(`Inference returned bad values: ${error.message}`);
      return;
    }
    this.frames.schedule();
  }

  /** Hands Rust `model`'s last layer, if it has come and Rust has not had it yet. */
  setLastLayer(/** @type {number} */ model) {
    const lastLayer = this.lastLayers.get(model);
    if (!lastLayer) return;
    this.page.set_last_layer(model, lastLayer);
    this.lastLayers.delete(model);
  }

  /** Rows of `model`'s test-set logits in so far. */
  of(/** @type {number} */ model) {
    return this.rows.get(model) ?? 0;
  }

  /** Takes a batch. */
  take(/** @type {LogitsAnswer | OdinAnswer} */ message) {
    const { page, images, frames } = this;
    const limits = images.limits;
    let count;
    try {
      if (message.status === "odin") {
        count = page.add_odin(message.model, message.set, message.start, message.scores);
      } else {
        count = page.add_logits(message.model, message.set, message.start, message.logits);
        this.taken.add(message.model);
        this.setLastLayer(message.model);
        // Logits from the cache come without their features, which follow (takeFeatures).
        if (message.features.length) page.add_features(message.model, message.set, message.start, message.features);
      }
    } catch (error) {
      showError(`Inference returned bad values: ${error.message}`);
      return;
    }
    const cached = message.status === "logits" && message.cached;
    if (message.status === "odin" || message.set !== "test") {
      const complete = message.status === "logits" && count === images.count(message.set);
      if (complete && !cached) this.keep(message.model, message.set);
      // A corrupted copy's pixels (31 MB for a few copies) are made again if ever needed.
      if (complete && isShifted(message.set) && !this.pool.queues(message.set)) images.drop(message.set);
      if (count === images.count(message.set)) frames.schedule();
      else frames.scheduleStreaming(limits.streaming_redraw_ms);
      return;
    }
    const first = !this.rows.has(message.model);
    this.rows.set(message.model, count);
    const all = count === images.count();
    const shown = message.model === this.model();
    // The shown network's batches redraw its labs, the first one and the last one at once;
    // another's test logits matter once complete (the τ and shift labs compare the networks on
    // them).
    if (all || (first && shown)) frames.schedule();
    else if (shown) frames.scheduleStreaming(limits.streaming_redraw_ms);
    if (all && !cached) this.keep(message.model, "test");
    if (all) this.setComplete();
    if (all && !(message.model in timings.inferenceDone)) {
      timings.inferenceDone[message.model] = performance.now();
      performance.mark(`calibra:inference-done:${limits.models[message.model].network}`);
    }
    // The progress row moves with the frames the batches ask for, which count the same images:
    // rewritten after each batch, its layout and paint took the page's thread while the workers
    // needed the cores. The last batch marks the page done in the task
    // that asks for its frame.
    if (all && shown) this.progress.show(count);
  }

  /**
   * Takes the features of `model` on `set`, all of them, read from the cache after their logits.
   * @param {number} model
   * @param {string} set
   * @param {Float32Array} features
   */
  takeFeatures(model, set, features) {
    try {
      this.page.add_features(model, set, 0, features);
    } catch (error) {
      showError(`The features kept in this browser are bad: ${error.message}`);
      return;
    }
    this.frames.schedule();
  }

  /** Stores the logits of `model` on `set`, all arrived, in the cache, with their features (but a corrupted copy's, which no lab reads). */
  keep(/** @type {number} */ model, /** @type {string} */ set) {
    if (!this.cache.available) return;
    this.cache.keep(model, set, this.page.logits(model, set), isShifted(set) ? null : this.page.features(model, set));
  }
}
