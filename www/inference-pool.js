// @ts-check
// A pool of inference workers (worker.js) sharing the image sets: batches go to whichever
// worker is free. A job is one model's logits (or ODIN scores) on one image set.
import { showError } from "./dom.js";
import { DownloadError } from "./download.js";

/** @typedef {import("./messages.js").InferenceRequest} InferenceRequest */
/** @typedef {import("./messages.js").InferenceAnswer} InferenceAnswer */
/** @typedef {import("./messages.js").LogitsAnswer} LogitsAnswer */
/** @typedef {import("./messages.js").OdinAnswer} OdinAnswer */
/** @typedef {{ worker: Worker, failure: Promise<ErrorEvent> }} StartedWorker */
/** @typedef {{ worker: Worker, busy: number }} Slot */
/** @typedef {{ model: number, set: string, kind: string, start: number, count: number }} Batch */
/**
 * What the network did not deliver (a network's weights, the ODIN module, an image set) and the
 * labs (their sections' ids) that asked for it.
 * @typedef {{ what: "network" | "odin" | "images", model: number, set: string, offline: boolean, message: string, labs: Set<string> }} Unfetched
 */

/**
 * Posts a message to an inference worker, typed as worker.js reads it.
 * @param {Worker} worker
 * @param {InferenceRequest} message
 * @param {Transferable[]} [transfer]
 */
const post = (worker, message, transfer = []) => worker.postMessage(message, transfer);

/**
 * Whether job `key` ("model:set:kind") needs what the network did not deliver.
 * @param {string} key
 * @param {Omit<Unfetched, "labs">} unfetched
 */
function needs(key, { what, model, set }) {
  const [jobModel, jobSet, kind] = key.split(":");
  if (what === "network") return Number(jobModel) === model;
  return what === "odin" ? kind === "odin" : jobSet === set;
}

export class InferencePool {
  /**
   * @param {{ early: StartedWorker[], later: number, start: () => StartedWorker }} workers
   *   start-workers.js's workers started at once, how many more may start `later`, and the
   *   function that starts one
   * @param {{ images: import("./test-images.js").ImageSets, cache: import("./cached-logits.js").CachedLogits,
   *   onBatch: (answer: LogitsAnswer | OdinAnswer) => void, onOwn: (answer: LogitsAnswer) => void,
   *   onError: (message: string, model?: number) => void, onUnfetched: () => void,
   *   onRetry: (model: number, attempt: number, of: number) => void,
   *   onLastLayer: (model: number, values: Float32Array) => void }} handlers
   *   onUnfetched: `unfetched` changed; onRetry: a worker tries a network's download again
   */
  constructor({ early, later, start }, { images, cache, onBatch, onOwn, onError, onUnfetched, onRetry, onLastLayer }) {
    this.images = images;
    this.cache = cache;
    this.onBatch = onBatch;
    this.onOwn = onOwn;
    this.onError = onError;
    this.onLastLayer = onLastLayer;
    this.onUnfetched = onUnfetched;
    this.onRetry = onRetry;
    // What the network did not deliver, by what it is ("network 3", "odin", "images mnist").
    /** @type {Map<string, Unfetched>} */
    this.unfetched = new Map();
    // The labs that asked for each job ("model:set:kind"), named where something is missing.
    /** @type {Map<string, Set<string>>} */
    this.labs = new Map();
    /** @type {Slot[]} */
    this.workers = [];
    this.later = later;
    this.startWorker = start;
    this.mayGrow = false;
    /** @type {Batch[]} */
    this.queue = [];
    this.requested = new Set();
    this.loaded = new Set();
    this.failed = new Set();
    // Each loaded model's weights digest, from the first worker that has loaded it.
    /** @type {Map<number, Promise<string | null>>} */
    this.digests = new Map();
    this.digestArrived = new Map();
    // Each model's weights: settles once the first worker has them (or has failed to load them).
    /** @type {Map<number, Promise<void>>} */
    this.weights = new Map();
    this.weightsArrived = new Map();
    this.weightsSettled = new Set();
    for (const worker of early) this.add(worker);
  }

  /** Takes over a started worker and has it load every network already asked for. */
  add(/** @type {StartedWorker} */ { worker, failure }) {
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

  /** The page has drawn: from now on the pool starts its later workers once images are queued. */
  allowGrowth() {
    if (this.mayGrow) return;
    this.mayGrow = true;
    this.pump();
  }

  /**
   * Queues every batch of a job not yet requested; the workers load the model's weights once.
   * @param {number} model
   * @param {string} set
   * @param {"logits" | "odin"} kind
   * @param {string} lab the id of the section that needs it
   */
  request(model, set, kind, lab) {
    const key = `${model}:${set}:${kind}`;
    if (!this.labs.has(key)) this.labs.set(key, new Set());
    this.labs.get(key).add(lab);
    if (this.requested.has(key) || this.failed.has(model)) return;
    this.requested.add(key);
    this.load(model);
    const images = this.images;
    const enqueue = () => {
      const total = images.count(set);
      for (let start = 0, size = images.limits.first_batch; start < total; start += size, size = images.limits.batch) {
        this.queue.push({ model, set, kind, start, count: Math.min(size, total - start) });
      }
      this.pump();
    };
    // Logits come from the cache when it holds them for these weights and images. The images
    // are loaded before each step, not once: a corrupted copy's pixels are dropped when another
    // network's logits on it complete, which can happen while the cache is asked.
    const withImages = (/** @type {() => any} */ next) => (images.get(set) ? next() : images.load(set).then(next));
    if (kind === "logits" && this.cache.heldNone && images.get(set)) return enqueue();
    Promise.resolve(withImages(() => kind === "logits" && this.cache.feed(model, set)))
      .then((cached) => cached || withImages(enqueue))
      .catch((error) => {
        if (!(error instanceof DownloadError)) return showError(error.message);
        this.missing({ what: "images", model, set, offline: error.offline, message: error.message });
      });
  }

  /**
   * Notes what the network did not deliver (once per thing), with the labs that asked for it.
   * @param {Omit<Unfetched, "labs">} unfetched
   */
  missing(unfetched) {
    const labs = new Set();
    for (const [key, asking] of this.labs) if (needs(key, unfetched)) asking.forEach((lab) => labs.add(lab));
    this.unfetched.set(`${unfetched.what} ${unfetched.what === "images" ? unfetched.set : unfetched.model}`, { ...unfetched, labs });
    this.onUnfetched();
  }

  /** Asks again, for the labs that asked, for every job that needed what the network did not deliver. */
  retry() {
    const missed = [...this.unfetched.values()];
    this.unfetched.clear();
    this.onUnfetched();
    // Everything is forgotten before anything is asked again: a job can need two missing things
    // (a network and the digits), and must not meet the other's old failure.
    for (const unfetched of missed) {
      if (unfetched.what === "network") {
        this.failed.delete(unfetched.model);
        this.loaded.delete(unfetched.model);
        this.weightsSettled.delete(unfetched.model);
      }
      if (unfetched.what === "images") this.images.drop(unfetched.set);
    }
    const again = [...this.requested].filter((key) => missed.some((unfetched) => needs(key, unfetched)));
    for (const key of again) this.requested.delete(key);
    for (const key of again) {
      const [model, set, kind] = key.split(":");
      for (const lab of this.labs.get(key)) this.request(Number(model), set, kind === "odin" ? "odin" : "logits", lab);
    }
  }

  /**
   * Has every worker fetch and load `model`'s weights, once: at its first request, or ahead
   * of it while the page is still starting.
   * @param {number} model
   */
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

  /**
   * Asks one worker to fetch and load `model`'s weights; its messages run in order, so the
   * batches posted after this one wait for the weights.
   * @param {Slot} slot
   * @param {number} model
   */
  postLoad(slot, model) {
    const { models, classes } = this.images.limits;
    post(slot.worker, { type: "load", model, url: models[model].url, classes });
  }

  /**
   * Resolves once a worker's download of the weights of `model` (already asked to load) is a
   * round trip from its end, or over, or has failed.
   * @param {number} model
   */
  weightsIn(model) {
    return this.weights.get(model);
  }

  /** Whether weightsIn(model) has resolved. */
  hasWeights(/** @type {number} */ model) {
    return this.weightsSettled.has(model);
  }

  /**
   * Asks the least busy worker for the logits of `model` (loaded: its test logits are in) on
   * the reader's 28×28 `pixels`; the answer comes back to onOwn with `start` = `request`.
   * @param {number} model
   * @param {Uint8Array} pixels
   * @param {number} request
   */
  classifyOwn(model, pixels, request) {
    const slot = this.workers.reduce((best, candidate) => (candidate.busy < best.busy ? candidate : best));
    const copy = pixels.slice();
    post(slot.worker, { type: "infer", model, set: "own", start: request, pixels: copy }, [copy.buffer]);
    slot.busy += 1;
  }

  /** Moves the test-set batches of `model` to the front of the queue. */
  prioritise(/** @type {number} */ model) {
    const first = (/** @type {Batch} */ job) => Number(job.model === model && job.set === "test" && job.kind === "logits");
    this.queue.sort((a, b) => first(b) - first(a));
  }

  /** Whether a batch of `set` waits in the queue. */
  queues(/** @type {string} */ set) {
    return this.queue.some((batch) => batch.set === set);
  }

  /**
   * Keeps two batches in flight per worker, so none idles between messages. A batch goes out
   * once its images are whole (the test images arrive as they download).
   */
  pump() {
    if (this.mayGrow && this.queue.length > 0) {
      for (; this.later > 0; this.later -= 1) this.add(this.startWorker());
    }
    const images = this.images;
    const size = images.limits.image_side ** 2;
    const ready = (/** @type {Batch} */ { set, start, count }) => start + count <= images.rowsIn(set);
    for (const slot of this.workers) {
      while (slot.busy < 2) {
        const next = this.queue.findIndex(ready);
        if (next < 0) break;
        const { model, set, kind, start, count } = this.queue.splice(next, 1)[0];
        const batch = images.get(set).slice(start * size, (start + count) * size);
        post(slot.worker, { type: kind === "odin" ? "odin" : "infer", model, set, start, pixels: batch }, [batch.buffer]);
        slot.busy += 1;
      }
    }
  }

  /**
   * Takes a worker's answer. A failure stops that model's remaining batches, so its first
   * message is the one shown.
   * @param {Slot} slot
   * @param {InferenceAnswer} message
   */
  receive(slot, message) {
    if (message.status === "fetched") {
      this.weightsArrived.get(message.model)?.();
    } else if (message.status === "retrying") {
      this.onRetry(message.model, message.attempt, message.of);
    } else if (message.status === "unfetched") {
      if (message.what === "odin") {
        this.queue = this.queue.filter((batch) => batch.kind !== "odin");
        this.missing({ what: "odin", model: message.model, set: "", offline: message.offline, message: message.message });
        return;
      }
      if (this.failed.has(message.model)) return;
      this.failed.add(message.model);
      this.weightsArrived.get(message.model)?.();
      this.queue = this.queue.filter((batch) => batch.model !== message.model);
      this.missing({ what: "network", model: message.model, set: "", offline: message.offline, message: message.message });
    } else if (message.status === "ready") {
      this.digestArrived.get(message.model)?.(message.digest);
    } else if (message.status === "last-layer") {
      this.onLastLayer(message.model, message.last_layer);
    } else if (message.status === "error") {
      if (this.failed.has(message.model)) return;
      if (message.model !== undefined) {
        this.failed.add(message.model);
        this.weightsArrived.get(message.model)?.();
        this.queue = this.queue.filter((batch) => batch.model !== message.model);
      }
      this.onError(`Inference failed: ${message.message}`, message.model);
    } else if (message.set === "own" && message.status === "logits") {
      slot.busy -= 1;
      this.onOwn(message);
      this.pump();
    } else {
      slot.busy -= 1;
      this.onBatch(message);
      this.pump();
    }
  }
}
