// @ts-check
// The progress row of the chosen network: its download, the images classified and the test
// images downloaded; hidden, and the page marked for tests, once complete.
import { $ } from "./dom.js";

export class Progress {
  /**
   * @param {import("./test-images.js").ImageSets} images
   * @param {import("./inference-pool.js").InferencePool} pool
   * @param {() => number} model the chosen network's index
   */
  constructor(images, pool, model) {
    this.images = images;
    this.pool = pool;
    this.model = model;
    // A failure that stops every network's numbers (the test images, an inference worker),
    // whichever network is shown; one network's own failures are the pool's.
    this.broken = false;
    /** @type {Map<number, number>} when each model's inference started, for the images/s figure */
    this.started = new Map();
    // Every frame asks; only a change of network, count or download is written (formatting the
    // counts is a visible part of a throttled phone-class slider frame).
    /** @type {string | null} */
    this.shown = null;
    // Writes the counts ("10,000"). Made while the page waits for its module (prepare): the
    // browser's first number formatting is slow, and the first progress row is written on the
    // way to the first chart.
    /** @type {Intl.NumberFormat | null} */
    this.format = null;
    // What a download tried again says ("retrying the test images' download (2 of 3)"), or null.
    /** @type {string | null} */
    this.retrying = null;
  }

  /**
   * Says that `whose` download ("the test images'", "the network's") is tried again, try
   * `attempt` of `of`; attempt 0: it goes on.
   * @param {string} whose
   * @param {number} attempt
   * @param {number} of
   */
  retry(whose, attempt, of) {
    this.retrying = attempt > 0 ? `retrying ${whose} download (${attempt} of ${of})` : null;
    this.shown = null;
  }

  /** Makes the counts' formatter ahead of the first row. */
  prepare() {
    this.format = new Intl.NumberFormat("en");
  }

  /** Notes when `model`'s inference started, once. */
  start(/** @type {number} */ model) {
    if (!this.started.has(model)) this.started.set(model, performance.now());
  }

  /** Shows `count` of the chosen network's test images classified. */
  show(/** @type {number} */ count) {
    const model = this.model();
    const total = this.images.count();
    const rows = this.images.testRows;
    const network = !this.pool.hasWeights(model);
    const failed = this.broken || this.pool.failed.has(model);
    const shown = `${model} ${count} ${total} ${rows} ${network} ${failed} ${this.retrying}`;
    if (shown === this.shown) return;
    this.shown = shown;
    const format = (/** @type {number} */ n) => this.format.format(n);
    const done = count === total;
    // Screen readers hear when inference ends, not every batch.
    if (done && document.body.dataset.inference !== "done") $("status-announce").textContent = `All ${format(total)} test images are classified.`;
    document.querySelector(".status").classList.toggle("done", done);
    // Later batches and images do not make a failed page look as if it were still running.
    document.body.dataset.inference = done ? "done" : failed ? "failed" : "running";
    const bar = /** @type {HTMLProgressElement} */ ($("progress"));
    bar.max = total;
    bar.value = count;
    const seconds = (performance.now() - this.started.get(model)) / 1000;
    const parts = this.retrying ? [this.retrying] : network ? ["downloading the network"] : [];
    if (count > 0) parts.push(`${format(count)} / ${format(total)} images · ${format(Math.round(count / seconds))} images/s`);
    // After the images counted above, "downloaded" needs no noun (and the row keeps to one line
    // on a desktop screen); after "downloading the network" alone, it does.
    if (rows < total) parts.push(`${format(rows)} / ${format(total)} ${count > 0 ? "" : "images "}downloaded`);
    if (!done) $("progress-text").textContent = parts.join(" · ");
  }
}
