// @ts-check
// Each network's logits between visits, as the page uses the store of logits-cache.js: keyed
// by the SHA-256 of the network's weights and of the images (of the file the test images are
// read from, of the pixels of a set the page makes), fed back as one batch when the store holds
// them, kept once a job's logits are all in.
import { $ } from "./dom.js";
import * as logitsCache from "./logits-cache.js";
import { isShifted } from "./test-images.js";

/** @typedef {import("./messages.js").LogitsAnswer} LogitsAnswer */

export class CachedLogits {
  /**
   * @param {import("./test-images.js").ImageSets} images
   * @param {(model: number) => Promise<string | null> | undefined} weightsDigest the digest of a
   *   network's weights (null where the browser has no crypto.subtle), once a worker loaded it
   */
  constructor(images, weightsDigest) {
    this.images = images;
    this.weightsDigest = weightsDigest;
    /** @type {(answer: LogitsAnswer) => void} where the logits found go, as a batch (without their features) */
    this.onBatch = () => {};
    /** @type {(model: number, set: string, features: Float32Array) => void} where the features of logits found go, read after them */
    this.onFeatures = () => {};
    /** @type {(model: number, set: string) => void} told when the features of logits found are gone from the store */
    this.onFeaturesLost = () => {};
    /** Resolves when the features of logits found may be read: once the first frame with logits is painted. */
    this.featuresDue = Promise.resolve();
    /** @type {() => void} told once logits found have gone to onBatch, and once the store has answered for a network's test-set logits */
    this.onAnswered = () => {};
    /** @type {Set<number>} the networks whose test-set logits the store has answered for */
    this.answered = new Set();
    // Whether the store holds anything: asked of IndexedDB once, as the page starts (not again
    // before the first batch), and true once this visit keeps logits.
    /** @type {Promise<boolean>} */
    this.holdsAny = Promise.resolve(false);
    // Whether it has answered that it holds nothing (a first visit), and has kept nothing since:
    // a request for logits then skips the cache at once, so that the first batch goes to the
    // worker before the page wires itself.
    this.heldNone = false;
    /** @type {Record<string, Promise<string>>} the SHA-256 of each image set: of its file (digestFile), or of its pixels */
    this.imageDigests = {};
    /** @type {Map<string, Promise<string | null>>} the key of each job ("model:set") */
    this.keys = new Map();
    /** @type {Map<number, number>} when each model's test-set logits were stored, for those from the cache */
    this.since = new Map();
    /** Resolves once the logits last kept are stored (tests wait for it). */
    this.lastKeep = Promise.resolve();
  }

  /**
   * Whether the store may hold logits, as the hint says at once (holdsAny is the store's own
   * answer, which comes later).
   */
  get mayHold() {
    return logitsCache.available && logitsCache.keptBefore();
  }

  /** Whether this browser can keep logits (IndexedDB and crypto.subtle). */
  get available() {
    return logitsCache.available;
  }

  /** Asks the store whether it holds anything (a revisit), while the page's module compiles. */
  start() {
    this.holdsAny = logitsCache.holdsAny();
    this.holdsAny.then((holds) => {
      this.heldNone = !holds;
      // Nothing kept after all (the hint outlived its database): no note will show.
      if (!holds) document.documentElement.classList.remove("logits-kept");
    });
  }

  /**
   * Takes the digest of the whole file the images of `set` are read from, as it arrives (the
   * bytes fetched, still gzipped, from a clone of `response`: the page reads the body itself):
   * the set's key. Kept logits are then found before the images are unzipped.
   * @param {string} set
   * @param {Promise<Response>} response
   */
  digestFile(set, response) {
    if (!logitsCache.available) return;
    const digest = response.then((whole) => whole.clone().arrayBuffer()).then((bytes) => logitsCache.sha256(new Uint8Array(bytes)));
    // A download that fails is the page's to report, by the request that reads it.
    digest.catch(() => {});
    this.imageDigests[set] = digest;
  }

  /**
   * The key of `model`'s logits on `set`, from the digest of its weights and of the images:
   * of the file they are read from where digestFile took it, otherwise of the pixels, once
   * they are all in; resolves to null where there is no key.
   * @param {number} model
   * @param {string} set
   */
  keyOf(model, set) {
    const job = `${model}:${set}`;
    if (!this.keys.has(job)) {
      this.keys.set(job, (async () => {
        const weights = await this.weightsDigest(model);
        if (!weights) return null;
        this.imageDigests[set] ??= logitsCache.sha256(this.images.get(set));
        return logitsCache.cacheKey(weights, await this.imageDigests[set], this.images.limits.classes);
      })());
    }
    return this.keys.get(job);
  }

  /**
   * Feeds the logits of `model` on `set` from the store when it holds them for these weights
   * and these images; resolves whether it did. While the test images are still downloading,
   * the store is first asked whether it holds anything of these weights: if not, the answer is
   * no at once, and inference starts on the images already in.
   * @param {number} model
   * @param {string} set
   */
  async feed(model, set) {
    const fed = await this.feedFromStore(model, set);
    if (set === "test") this.answered.add(model);
    if (fed || set === "test") this.onAnswered();
    return fed;
  }

  /**
   * feed's lookup: feeds the logits when the store holds them, and resolves whether it did.
   * @param {number} model
   * @param {string} set
   */
  async feedFromStore(model, set) {
    if (!logitsCache.available) return false;
    // A store that holds nothing (a first visit) lets inference start at once, before the
    // network's weights are in; while the images download, so does one that holds nothing for
    // this network.
    if (!(await this.holdsAny)) return false;
    const weights = await this.weightsDigest(model);
    if (!weights) return false;
    const count = this.images.count(set);
    if (this.images.rowsIn(set) < count && !(await logitsCache.holdsAny(weights))) return false;
    const key = await this.keyOf(model, set);
    const hit = await logitsCache.lookup(key);
    if (!hit || hit.logits.length !== count * this.images.limits.classes) return false;
    // A corrupted copy's features are not kept; every other set's are.
    const withFeatures = !isShifted(set);
    if (withFeatures && !hit.features) return false;
    if (set === "test") this.since.set(model, hit.stored);
    this.onBatch({ status: "logits", model, set, start: 0, count, logits: hit.logits, features: new Float32Array(0), cached: true });
    if (withFeatures) this.feedFeatures(model, set, key, count);
    return true;
  }

  /**
   * Feeds the features kept under `key` once they are due (after the first frame with logits);
   * their logits went to onBatch already.
   * @param {number} model
   * @param {string} set
   * @param {string} key
   * @param {number} count the set's images
   */
  async feedFeatures(model, set, key, count) {
    await this.featuresDue;
    const features = await logitsCache.lookupFeatures(key);
    if (features?.length === count * logitsCache.FEATURES) this.onFeatures(model, set, features);
    else this.onFeaturesLost(model, set);
  }

  /**
   * Stores `logits`, all of `model`'s on `set`, and their `features` (null for none), under
   * their job's key.
   * @param {number} model
   * @param {string} set
   * @param {Float32Array} logits
   * @param {Float32Array | null} features
   */
  keep(model, set, logits, features) {
    // The images' digest is taken now, while they are here: a corrupted copy's are dropped next.
    this.imageDigests[set] ??= logitsCache.sha256(this.images.get(set));
    this.lastKeep = this.keyOf(model, set).then((key) => key && logitsCache.keep(key, logits, features));
    this.holdsAny = Promise.resolve(true);
    this.heldNone = false;
  }

  /** Says whether the chosen network's numbers come from the store, and since when. */
  showNote(/** @type {number} */ model) {
    const stored = this.since.get(model);
    $("cache-note").hidden = stored === undefined;
    // Once the store has answered, the space start-workers.js kept for the note goes if the
    // note does not show.
    if (stored !== undefined || this.answered.has(model)) document.documentElement.classList.remove("logits-kept");
    if (stored !== undefined) $("cache-date").textContent = new Date(stored).toLocaleString("en-GB", { dateStyle: "medium", timeStyle: "short" });
  }

  /** Forgets `model`'s stored logits. */
  async forget(/** @type {number} */ model) {
    const prefix = `${model}:`;
    const keys = await Promise.all([...this.keys].filter(([job]) => job.startsWith(prefix)).map(([, key]) => key));
    await logitsCache.forget(keys.filter(Boolean));
  }
}
