// @ts-check
// Files worker: reads one reader's logits files with the command-line tool's parsers (its
// module, pkg-own-logits, carries them and nothing else) and answers once; the page ends it
// then, so that its memory (the files and the numbers read) goes with it.
//
// Protocol (module worker; every message is a plain object):
//   page -> worker  {type: "own-logits", logits, labels, names}
//                   each file {name, bytes: Uint8Array} (buffers transferred); names may be null
//   worker -> page  {status: "own-logits", logits, labels, about}
//                   logits: Float32Array [n, K], labels: Uint32Array [n] (buffers transferred),
//                   about: what the files are (classes, class_names, logits_name, description)
//   worker -> page  {status: "error", message}     a readable message, never an object
import init, { OwnLogitsFiles } from "./pkg-own-logits/calibra.js";

const ready = init();

/**
 * Posts the answer to the page, typed as own-data.js reads it.
 * @param {import("./messages.js").OwnLogitsReply} reply
 * @param {Transferable[]} [transfer]
 */
const answer = (reply, transfer = []) => postMessage(reply, transfer);

onmessage = async (/** @type {MessageEvent<import("./messages.js").OwnLogitsRequest>} */ { data }) => {
  try {
    await ready;
    if (data.type !== "own-logits") throw new Error(`unknown message type ${data.type}`);
    const { logits, labels, names } = data;
    const files = new OwnLogitsFiles(logits.bytes, logits.name, labels.bytes, labels.name, names?.bytes, names?.name);
    const [values, labelValues, about] = [files.take_logits(), files.take_labels(), files.about()];
    files.free();
    answer({ status: "own-logits", logits: values, labels: labelValues, about }, [values.buffer, labelValues.buffer]);
  } catch (error) {
    answer({ status: "error", message: error instanceof Error ? error.message : String(error) });
  }
};
