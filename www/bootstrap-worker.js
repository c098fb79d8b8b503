// @ts-check
// The page's worker for the slow parts of the labs: the bootstrap intervals (about a second per
// temperature), the rivals' fits (seconds on a reader's largest files), the feature
// detectors' fits and scores (about a second a network) and the LogitNorm lab's comparison of
// one temperature with normalised temperature scaling (tens of milliseconds a network), off the
// page's thread, so that a slider frame stays short. Its code is a module of its own
// (pkg-bootstrap/), which the page's module, the one the first chart waits for, does not carry.
//
// Protocol (module worker; every message is a plain object):
//   page -> worker  {type: "data", model, split, classes, calibration_logits, calibration_labels,
//                   evaluation_logits, evaluation_labels}
//                   the shown network's halves: logits Float32Array [n, classes], labels
//                   Uint32Array [n] (every buffer transferred)
//   page -> worker  {type: "intervals" | "rivals" | "anatomy", request}   for the data last
//                   sent for the request's model and split; an interval request is {model,
//                   split, temperature, bins, binning}, a rivals request the same (temperature:
//                   the lab's fitted T), an anatomy request {model, split, bins, binning}
//   page -> worker  {type: "difference", request, chosen_in, chosen_out, reference_in,
//                   reference_out}   the τ lab's paired bootstrap: both networks' scores
//                   (Float64Array) on the test (_in) and OOD (_out) images, transferred; the
//                   request is {chosen, reference, set, score, temperature}
//   page -> worker  {type: "features", request, calibration, calibration_labels, evaluation,
//                   mnist, gaussian, uniform, last_layer}   the LogitNorm lab's feature
//                   detectors of one network on one split (request {model, split}): features
//                   Float32Array [n, 128], labels Uint32Array, the last layer Float32Array
//                   (weight [10, 128] then bias [10]), transferred
//   page -> worker  {type: "ranking", request, scores, rows_in, rows_out}   the LogitNorm lab's
//                   ranking of every score on both networks: each candidate's rows_in ID then
//                   rows_out OOD scores end to end (Float64Array, transferred)
//   worker -> page  {status: "intervals", request, intervals}
//   worker -> page  {status: "rivals", request, rivals}
//   worker -> page  {status: "anatomy", request, anatomy}   the anatomy chart's curves and
//                   mistaken fits (about a second: 363 evaluations of a half)
//   worker -> page  {status: "difference", request, difference}   {fpr95, auroc}, each
//                   {estimate, lower, upper}
//   worker -> page  {status: "features", request, knn_neighbours, scores}   scores:
//                   Float64Array, each detector's scores of the evaluation half then of each OOD
//                   set (buffer transferred)
//   worker -> page  {status: "ranking", request, ranking}   {ranked, lead}: the candidates by
//                   decreasing AUROC with their intervals, and the first's paired lead
//   page -> worker  {type: "normalized", request, model, split, classes, calibration_logits,
//                   calibration_labels, evaluation_logits, evaluation_labels}   one network's
//                   halves (as "data", transferred) and the request {model, split, bins,
//                   binning}: one temperature against normalised temperature scaling
//   worker -> page  {status: "normalized", request, comparison}   {temperature,
//                   normalized_temperature, plain, normalized}, each of the last two {ece, nll}
//                   with {estimate, lower, upper}
//   worker -> page  {status: "error", message}     a readable message, never an object
import init, { Bootstrap, feature_scores, paired_difference, rank_detectors } from "./pkg-bootstrap/calibra.js";

/** @typedef {import("./messages.js").BootstrapRequest} BootstrapRequest */

/**
 * Posts an answer to the page, typed as the page's bootstrap-client.js reads it.
 * @param {import("./messages.js").BootstrapAnswer} reply
 * @param {Transferable[]} [transfer]
 */
const answer = (reply, transfer = []) => postMessage(reply, transfer);

const ready = init();
// The last halves sent, and the model and split they belong to.
let data = null;

/**
 * One network's halves in Rust, from a message that carries them.
 * @param {import("./messages.js").Halves} message
 */
const halvesOf = (message) => new Bootstrap(message.classes, message.calibration_logits, message.calibration_labels, message.evaluation_logits, message.evaluation_labels);

// Runs one message and answers it; any failure is reported as a message string.
async function handle(/** @type {BootstrapRequest} */ message) {
  await ready;
  if (message.type === "difference") {
    const difference = paired_difference(message.chosen_in, message.chosen_out, message.reference_in, message.reference_out);
    answer({ status: "difference", request: message.request, difference });
    return;
  }
  if (message.type === "ranking") {
    answer({ status: "ranking", request: message.request, ranking: rank_detectors(message.scores, message.rows_in, message.rows_out) });
    return;
  }
  if (message.type === "features") {
    const { knn_neighbours, scores } = feature_scores(message.calibration, message.calibration_labels, message.evaluation, message.mnist, message.gaussian, message.uniform, message.last_layer);
    answer({ status: "features", request: message.request, knn_neighbours, scores }, [scores.buffer]);
    return;
  }
  if (message.type === "normalized") {
    const halves = halvesOf(message);
    try {
      answer({ status: "normalized", request: message.request, comparison: halves.temperature_comparison(message.request) });
    } finally {
      halves.free();
    }
    return;
  }
  if (message.type === "data") {
    const halves = halvesOf(message);
    data?.halves.free();
    data = { model: message.model, split: message.split, halves };
    return;
  }
  const { request } = message;
  if (!data || data.model !== request.model || data.split !== request.split) {
    throw new Error(`no halves of model ${request.model}, split ${request.split} to compute ${message.type} on`);
  }
  if (message.type === "intervals") {
    answer({ status: "intervals", request, intervals: data.halves.intervals(request) });
  } else if (message.type === "rivals") {
    answer({ status: "rivals", request, rivals: data.halves.rivals(request) });
  } else if (message.type === "anatomy") {
    answer({ status: "anatomy", request, anatomy: data.halves.anatomy(request) });
  }
}

onmessage = (event) => {
  handle(event.data).catch((error) => answer({ status: "error", message: String(error?.message ?? error) }));
};
