// @ts-check
// "Your own model": the reader's logits, labels and class-names files, read in a worker of their
// own (own-logits-worker.js, whose module has the command-line tool's parsers) and shown in the
// first two labs instead of the test images, and the way back to the test images.
import { $ } from "./dom.js";

/** @typedef {import("./messages.js").ChosenFile} ChosenFile */
/** @typedef {import("./messages.js").OwnLogitsAnswer} OwnLogitsAnswer */
/** @typedef {import("./messages.js").OwnLogitsReply} OwnLogitsReply */
/** @typedef {import("./messages.js").OwnLogitsRequest} OwnLogitsRequest */

const FILE_INPUTS = ["own-logits-file", "own-labels-file", "own-names-file"];

/** The file chosen in the input `id`, if any. */
const chosen = (/** @type {string} */ id) => /** @type {HTMLInputElement} */ ($(id)).files[0];

/**
 * Reads a reader's logits files in a worker, ended once it answers, so that its memory (the
 * files and the numbers read) goes with it.
 * @param {ChosenFile} logits
 * @param {ChosenFile} labels
 * @param {ChosenFile | null} names
 * @returns {Promise<OwnLogitsAnswer>}
 */
function readOwnFiles(logits, labels, names) {
  const worker = new Worker(new URL("./own-logits-worker.js", import.meta.url), { type: "module" });
  return /** @type {Promise<OwnLogitsAnswer>} */ (new Promise((resolve, reject) => {
    worker.onmessage = (/** @type {MessageEvent<OwnLogitsReply>} */ { data }) => (data.status === "own-logits" ? resolve(data) : reject(new Error(data.message)));
    worker.onerror = (event) => reject(new Error(navigator.onLine
      ? `the worker that reads them failed: ${event.message || "it could not start"}`
      : "the module that reads them has not been downloaded yet, and you are offline; choose them again once the network is back"));
    const transfer = [logits, labels, names].filter(Boolean).map((file) => file.bytes.buffer);
    /** @type {OwnLogitsRequest} */
    const message = { type: "own-logits", logits, labels, names };
    worker.postMessage(message, transfer);
  }).finally(() => worker.terminate()));
}

export class OwnData {
  /**
   * @param {{ load_own_logits(logits: Float32Array, labels: Uint32Array, about: object): void, show_test_images(): void }} page
   * @param {{ [key: string]: any }} timings where the read's times go
   * @param {(description: string | null) => void} onShown told when the labs switch data
   */
  constructor(page, timings, onShown) {
    this.page = page;
    this.timings = timings;
    this.onShown = onShown;
    /** @type {string | null} the sentence describing the reader's logits while the labs show them */
    this.description = null;
    // Counts the reader's file choices: a read that a later choice overtook is dropped.
    this.loads = 0;
  }

  /** Wires the logits, labels and names inputs, and the way back to the test images. */
  wire() {
    for (const id of FILE_INPUTS) $(id).addEventListener("change", () => this.load());
    // A file chosen by mistake (a wrong class-names file) can be taken back; the rest are read again.
    for (const button of document.querySelectorAll(".file-remove")) {
      button.addEventListener("click", () => {
        /** @type {HTMLInputElement} */ ($(/** @type {HTMLElement} */ (button).dataset.clears)).value = "";
        this.load();
      });
    }
    for (const button of document.querySelectorAll(".own-logits-back")) button.addEventListener("click", () => this.showTestImages());
    $("own-logits-show").addEventListener("click", () => {
      $("temperature-lab").scrollIntoView({ block: "start" });
      $("temperature").focus({ preventScroll: true });
    });
  }

  /**
   * Reads the chosen files once logits and labels are both chosen; files the worker refuses
   * leave the labs as they were, and its message (which file, which line, what) is shown.
   */
  async load() {
    const [logits, labels, names] = FILE_INPUTS.map(chosen);
    const status = $("own-logits-status");
    status.classList.remove("error");
    if (!logits && !labels) {
      status.textContent = this.description ? `Showing ${this.description}.` : "No files yet: the labs show the test images.";
      return;
    }
    if (!logits || !labels) {
      status.textContent = `Choose ${logits ? "a labels" : "a logits"} file too.`;
      return;
    }
    status.textContent = `Reading ${[logits, labels, names].filter(Boolean).map((file) => file.name).join(", ")}…`;
    const started = performance.now();
    const load = ++this.loads;
    let description;
    try {
      const read = async (/** @type {File | undefined} */ file) => file && { name: file.name, bytes: new Uint8Array(await file.arrayBuffer()) };
      const files = await Promise.all([read(logits), read(labels), read(names)]);
      if (load !== this.loads) return;
      const readAt = performance.now();
      const table = await readOwnFiles(files[0], files[1], files[2] ?? null);
      if (load !== this.loads) return;
      this.page.load_own_logits(table.logits, table.labels, table.about);
      description = table.about.description;
      this.timings.ownLogits = { started, read: readAt, parsed: performance.now(), drawn: null, rivals: null };
    } catch (error) {
      // A read that a later choice overtook says nothing, its refusal included.
      if (load === this.loads) {
        status.textContent = `Cannot use these files: ${error.message ?? error}`;
        status.classList.add("error");
      }
      return;
    }
    this.show(description);
  }

  /** Shows the test images again in the first two labs. */
  showTestImages() {
    this.loads++;
    this.page.show_test_images();
    for (const id of FILE_INPUTS) /** @type {HTMLInputElement} */ ($(id)).value = "";
    this.show(null);
  }

  /** Switches the first two labs between the test images (null) and the reader's logits. */
  show(/** @type {string | null} */ description) {
    this.description = description;
    document.body.classList.toggle("own-data", Boolean(description));
    for (const note of document.querySelectorAll(".own-data-note")) /** @type {HTMLElement} */ (note).hidden = !description;
    for (const button of document.querySelectorAll(".own-logits-back")) /** @type {HTMLElement} */ (button).hidden = !description;
    $("own-logits-show").hidden = !description;
    for (const span of document.querySelectorAll(".own-data-description")) span.textContent = description ?? "";
    $("own-logits-status").textContent = description ? `Showing ${description}.` : "No files yet: the labs show the test images.";
    $("own-logits-status").classList.remove("error");
    this.onShown(description);
  }
}
