// Inference worker: owns one copy of a model and turns batches of pixels into logits.
//
// Protocol (module worker; every message is a plain object):
//   page -> worker  {type: "load", model, url, classes}   fetch and load a .safetensors model
//   page -> worker  {type: "infer", model, job, start, pixels}
//                   pixels: Uint8Array [n, 28, 28] (its buffer transferred); start: first row
//   worker -> page  {status: "ready", model}
//   worker -> page  {status: "logits", model, job, start, count, logits, millis}
//                   logits: Float32Array [count, 10] (buffer transferred)
//   worker -> page  {status: "error", model, message}     a readable message, never an object
// Rows are addressed by `start`, so several workers can share one image set.
import init, { Model } from "./pkg/calibra.js";

const ready = init();
const models = new Map();

// Runs one message and answers it; any failure is reported as a message string.
async function handle(message) {
  await ready;
  if (message.type === "load") {
    const response = await fetch(message.url);
    if (!response.ok) throw new Error(`cannot fetch ${message.url}: HTTP ${response.status}`);
    const weights = new Uint8Array(await response.arrayBuffer());
    models.set(message.model, { model: new Model(weights), classes: message.classes });
    postMessage({ status: "ready", model: message.model });
  } else if (message.type === "infer") {
    const loaded = models.get(message.model);
    if (!loaded) throw new Error(`model ${message.model} is not loaded in this worker`);
    const started = performance.now();
    const logits = loaded.model.logits(message.pixels);
    const count = logits.length / loaded.classes;
    postMessage(
      { status: "logits", model: message.model, job: message.job, start: message.start, count, logits, millis: performance.now() - started },
      [logits.buffer],
    );
  } else {
    throw new Error(`unknown message type ${message.type}`);
  }
}

// Messages are handled one at a time, in order, so batches queue behind a model load.
let queue = Promise.resolve();
onmessage = (event) => {
  queue = queue
    .then(() => handle(event.data))
    .catch((error) => postMessage({ status: "error", model: event.data.model, message: error instanceof Error ? error.message : String(error) }));
};
