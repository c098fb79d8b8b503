// @ts-check
// Inference worker: owns one copy of a model and turns batches of pixels into logits.
//
// Protocol (module worker; every message is a plain object):
//   page -> worker  {type: "prefetch", url, warm}       start-workers.js, before the page knows
//                   which network it shows: fetch these weights now, for a "load" of the same
//                   url to take over, and with `warm` warm the code up meanwhile (no answer; a
//                   failure is the load's to report)
//   page -> worker  {type: "load", model, url, classes}   fetch and load a .safetensors model
//   page -> worker  {type: "infer" | "odin", model, set, start, pixels}
//                   pixels: Uint8Array [n, 28, 28] (its buffer transferred); start: first row
//                   of image set `set` ("test", "mnist", "gaussian", "uniform", or a corrupted
//                   copy of the test images such as "shift-rotation-3")
//   worker -> page  {status: "fetched", model}          the weights' last bytes are about a round
//                   trip away, or in (the page then says the network is in; where the first
//                   batch's images have no file of their own, it fetches the test images,
//                   which would share a slow link with the weights: asked for then, their first
//                   bytes follow the weights' last)
//   worker -> page  {status: "last-layer", model, last_layer}
//                   as soon as the model is loaded, before any of its logits: Float32Array, the
//                   weight [10, 128] then the bias [10] (buffer transferred), which the
//                   feature-based OOD detectors read
//   worker -> page  {status: "ready", model, digest}
//                   digest: the SHA-256 of the weights in hex (the logits cache's key), or null
//                   where the browser has no crypto.subtle; sent once the weights are in, before
//                   or after the last layer and the model's first logits
//   worker -> page  {status: "logits", model, set, start, count, logits, features, millis}
//                   logits: Float32Array [count, 10]; features: Float32Array [count, 128], the
//                   penultimate activations (both views of one buffer, transferred)
//   worker -> page  {status: "odin", model, set, start, count, scores, millis}
//                   scores: Float64Array [count], ODIN's score of each image (buffer transferred)
//   worker -> page  {status: "retrying", model, attempt, of}
//                   the weights' download failed or was cut, and is tried again (attempt 1 to
//                   `of`); attempt 0: a cut download goes on (download.js)
//   worker -> page  {status: "unfetched", model, what, message, offline}
//                   the network did not deliver `what` ("network": the weights; "odin": the
//                   ODIN module) after its tries; `offline`: navigator.onLine was false. The
//                   page offers a retry, which sends "load" again (the ODIN module is fetched
//                   again at the next ODIN batch).
//   worker -> page  {status: "error", model, message}     a readable message, never an object
// Rows are addressed by `start`, so several workers can share one image set.
import init, { Model, warm_up } from "./pkg-worker/calibra.js";
import { DownloadError, download } from "./download.js";
import { available as cacheAvailable, sha256 } from "./logits-cache.js";

/** @typedef {import("./messages.js").InferenceRequest} InferenceRequest */
/** @typedef {import("./messages.js").InferenceAnswer} InferenceAnswer */

/**
 * Posts an answer to the page, typed as the page's InferencePool reads it.
 * @param {InferenceAnswer} reply
 * @param {Transferable[]} [transfer]
 */
const answer = (reply, transfer = []) => postMessage(reply, transfer);

// Penultimate features per image (the first dense layer's units).
const FEATURES = 128;

const ready = init();
// Whether the module's code has been warmed up (see the "load" message).
let warmed = false;
const models = new Map();
// The ODIN module (the same crate with ODIN's backward pass), fetched at the first ODIN batch, and
// its copy of each model.
let odinModule = null;
const odinModels = new Map();

// The ODIN module's copy of model `index`, loaded from the same weights. A module the network
// did not deliver is asked for again at the next batch.
async function odinModel(index) {
  if (!odinModels.has(index)) {
    odinModule ??= import("./pkg-odin/calibra.js").then(async (module) => {
      await module.default();
      return module;
    }).catch((error) => {
      odinModule = null;
      throw new DownloadError("the ODIN module (pkg-odin/)", error);
    });
    const module = await odinModule;
    odinModels.set(index, new module.Model(loadedModel(index).weights));
  }
  return odinModels.get(index);
}

// Runs one message and answers it; any failure is reported as a message string. `weights`: a
// load's download, started as the message arrived (startLoad).
async function handle(/** @type {InferenceRequest} */ message, /** @type {Promise<Uint8Array> | null} */ weights) {
  if (message.type === "prefetch") {
    prefetch(message.url);
    // The page's "load" comes once its own module has compiled: the code warms up meanwhile
    // (see "load"), and the load finds it warm.
    if (!message.warm) return;
    await ready;
    if (!warmed) warm_up();
    warmed = true;
  } else if (message.type === "load") {
    let downloaded = false;
    weights.then(() => { downloaded = true; }, () => {});
    await ready;
    // While the first weights download, the code runs once on a blank network, so that the
    // first batch finds it compiled and optimised.
    if (!warmed && !downloaded) warm_up();
    warmed = true;
    const bytes = await /** @type {Promise<Uint8Array>} */ (weights);
    const model = new Model(bytes);
    models.set(message.model, { model, weights: bytes, classes: message.classes });
    const lastLayer = model.last_layer();
    answer({ status: "last-layer", model: message.model, last_layer: lastLayer }, [lastLayer.buffer]);
  } else if (message.type === "infer") {
    const loaded = loadedModel(message.model);
    const started = performance.now();
    const both = loaded.model.features_and_logits(message.pixels);
    const count = both.length / (FEATURES + loaded.classes);
    const features = both.subarray(0, count * FEATURES);
    const logits = both.subarray(count * FEATURES);
    answer(
      { status: "logits", model: message.model, set: message.set, start: message.start, count, logits, features, millis: performance.now() - started },
      [both.buffer],
    );
  } else if (message.type === "odin") {
    const started = performance.now();
    const model = await odinModel(message.model);
    const scores = model.odin(message.pixels);
    answer(
      { status: "odin", model: message.model, set: message.set, start: message.start, count: scores.length, scores, millis: performance.now() - started },
      [scores.buffer],
    );
  } else {
    throw new Error(`unknown message type ${/** @type {{ type: unknown }} */ (message).type}`);
  }
}

// The bytes of `url`. Calls `nearlyIn` once, when the bytes still to come would take one round
// trip (the request's wait for its response) at the rate they have come so far, counted from
// the request: a request sent then starts to arrive as this one ends, and a slow link neither
// idles between the two nor carries both at once for long. Where the length is not known (or
// the bytes come in one piece, as from a cache), that is when all are in; where a host
// compresses the file, its length is the compressed one, and the call comes a little early.
// `onRetry` is told of each new try (see download.js).
async function fetchBytes(url, nearlyIn, onRetry) {
  const asked = performance.now();
  const response = await download(url, onRetry);
  if (!response.ok) throw new Error(`cannot fetch ${url}: HTTP ${response.status}`);
  const roundTrip = performance.now() - asked;
  const length = Number(response.headers.get("Content-Length")) || Infinity;
  const chunks = [];
  let received = 0;
  let told = false;
  for (const reader = response.body.getReader(); ;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    received += value.length;
    const perMillisecond = received / (performance.now() - asked);
    if (!told && (length - received) / perMillisecond <= roundTrip) {
      told = true;
      nearlyIn();
    }
  }
  if (!told) nearlyIn();
  const bytes = new Uint8Array(received);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.length;
  }
  return bytes;
}

// The download start-workers.js asked for ("prefetch"), until a "load" takes it over: whether
// its last bytes are nearly in, and whom to tell once they are, and of a new try.
/** @type {{ url: string, bytes: Promise<Uint8Array>, nearlyIn: boolean, tell: { nearlyIn: () => void, onRetry: (attempt: number, of: number) => void } | null } | null} */
let prefetched = null;

// Starts the download of `url` as the prefetched one.
function prefetch(/** @type {string} */ url) {
  /** @type {NonNullable<typeof prefetched>} */
  const early = { url, bytes: Promise.resolve(new Uint8Array()), nearlyIn: false, tell: null };
  early.bytes = fetchBytes(
    url,
    () => {
      early.nearlyIn = true;
      early.tell?.nearlyIn();
    },
    (attempt, of) => early.tell?.onRetry(attempt, of),
  );
  // A failure is reported by the load that takes the download over.
  early.bytes.catch(() => {});
  prefetched = early;
}

// The bytes of `url` as fetchBytes gives them: the prefetched download where it is of `url`,
// taken over once (a second load, such as the page's retry, asks anew), otherwise a new one.
function weightsOf(url, nearlyIn, onRetry) {
  const early = prefetched;
  prefetched = null;
  if (early?.url !== url) return fetchBytes(url, nearlyIn, onRetry);
  early.tell = { nearlyIn, onRetry };
  if (early.nearlyIn) nearlyIn();
  return early.bytes;
}

// The model loaded under `index`, or an error that says it is not.
function loadedModel(index) {
  const loaded = models.get(index);
  if (!loaded) throw new Error(`model ${index} is not loaded in this worker`);
  return loaded;
}

// A load's download starts as its message arrives, not behind the messages before it (the
// prefetch's warm-up), and does not wait for the module to compile; once the weights are in,
// their digest goes to the page at once ("ready"): a revisit finds its kept logits by it, and
// need not wait for the model to be built. Returns the weights' bytes.
function startLoad(/** @type {import("./messages.js").LoadRequest} */ message) {
  const weights = weightsOf(
    message.url,
    () => answer({ status: "fetched", model: message.model }),
    (attempt, of) => answer({ status: "retrying", model: message.model, attempt, of }),
  );
  // A failed download is the load's to report (handle).
  weights.then((bytes) => {
    const digest = cacheAvailable ? sha256(bytes) : Promise.resolve(null);
    digest.then(
      (digest) => answer({ status: "ready", model: message.model, digest }),
      (error) => answer({ status: "error", model: message.model, message: `cannot hash the weights: ${error.message}` }),
    );
  }, () => {});
  return weights;
}

// Messages are handled one at a time, in order, so batches queue behind a model load.
let queue = Promise.resolve();
onmessage = (event) => {
  /** @type {InferenceRequest} */
  const message = event.data;
  const weights = message.type === "load" ? startLoad(message) : null;
  queue = queue
    .then(() => handle(message, weights))
    .catch((error) => {
      const { model, type } = event.data;
      if (error instanceof DownloadError) {
        answer({ status: "unfetched", model, what: type === "odin" ? "odin" : "network", message: error.message, offline: error.offline });
      } else {
        answer({ status: "error", model, message: error instanceof Error ? error.message : String(error) });
      }
    });
};
