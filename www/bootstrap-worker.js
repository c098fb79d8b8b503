// Bootstrap worker: computes the temperature lab's bootstrap intervals (about a second per
// temperature) off the page's thread, so that a slider frame stays short.
//
// Protocol (module worker; every message is a plain object):
//   page -> worker  {type: "data", model, split, classes, logits, labels}
//                   the shown network's evaluation half: logits Float32Array [n, classes],
//                   labels Uint32Array [n] (both buffers transferred)
//   page -> worker  {type: "intervals", request}   request: {model, split, temperature, bins,
//                   binning}, for the data last sent for that model and split
//   worker -> page  {status: "intervals", request, intervals}
//   worker -> page  {status: "error", message}     a readable message, never an object
import init, { Bootstrap } from "./pkg/calibra.js";

const ready = init();
// The last evaluation half sent, and the model and split it belongs to.
let data = null;

// Runs one message and answers it; any failure is reported as a message string.
async function handle(message) {
  await ready;
  if (message.type === "data") {
    data = { model: message.model, split: message.split, rows: new Bootstrap(message.logits, message.labels, message.classes) };
  } else if (message.type === "intervals") {
    const { request } = message;
    if (!data || data.model !== request.model || data.split !== request.split) {
      throw new Error(`no evaluation half of model ${request.model}, split ${request.split} to resample`);
    }
    postMessage({ status: "intervals", request, intervals: data.rows.intervals(request) });
  }
}

onmessage = (event) => {
  handle(event.data).catch((error) => postMessage({ status: "error", message: String(error?.message ?? error) }));
};
