// @ts-check
// "Your own image": the reader's picture made the networks' 28×28 in Rust, each network's
// logits on it asked of the inference pool, and what Rust makes of them shown with the closest
// test images.
import { $ } from "./dom.js";
import { download } from "./figure-menu.js";
import { thumbnailAsRead } from "./gallery.js";
import { OwnImageInput } from "./own-image.js";

/** @typedef {import("./messages.js").LogitsAnswer} LogitsAnswer */
/** @typedef {{ name: string, rgba: Uint8ClampedArray, width: number, height: number }} Picture */

export class OwnPicture {
  /**
   * @param {{ page: any, images: import("./test-images.js").ImageSets, pool: import("./inference-pool.js").InferencePool, onChange: () => void }} parts
   *   the page's wasm handle, the image sets, the pool that classifies the picture, and what
   *   asks for a frame with the section redrawn
   */
  constructor({ page, images, pool, onChange }) {
    this.page = page;
    this.images = images;
    this.pool = pool;
    this.onChange = onChange;
    /** @type {Picture | null} the picture as the reader gave it (prepared again when the invert choice changes) */
    this.picture = null;
    /** @type {Uint8Array | null} the 28×28 Rust made of it */
    this.pixels = null;
    /** @type {Map<number, { model: number, pixels: Uint8Array }>} the networks' logits asked for on it, by request number */
    this.requests = new Map();
    this.requestCount = 0;
  }

  /** Wires the section's inputs, the invert choice and the IDX download. */
  wire() {
    new OwnImageInput({ onPicture: (picture) => this.take(picture), onCleared: () => this.clear(), onError: (message) => this.showProblem(message) });
    $("own-invert").addEventListener("change", () => {
      if (this.picture) this.take(this.picture);
    });
    $("own-download").addEventListener("click", () => {
      try {
        download(new Blob([this.page.own_image_idx()]), "calibra-own-image-idx3-ubyte");
      } catch (error) {
        this.showProblem(error.message);
      }
    });
  }

  /**
   * Makes a picture the reader's image through Rust; one it refuses clears the answers about
   * the last one, which would otherwise sit under its error. Its closest test images are
   * searched among all of them, so it waits until they are in.
   * @param {Picture} picture
   */
  async take(picture) {
    let pixels;
    try {
      await this.images.testComplete;
      const invert = /** @type {HTMLSelectElement} */ ($("own-invert")).value;
      pixels = this.page.set_own_image(picture.rgba, picture.width, picture.height, invert, this.images.get("test"));
    } catch (error) {
      this.clear();
      this.showProblem(`Cannot use ${picture.name}: ${error.message}.`);
      return;
    }
    this.picture = picture;
    this.pixels = pixels;
    this.requests.clear();
    $("own-status").textContent = `Showing ${picture.name}.`;
    /** @type {HTMLButtonElement} */ ($("own-download")).disabled = false;
    $("own-seen").replaceChildren(thumbnailAsRead(pixels, 0, this.images.limits.image_side, `the 28×28 the networks read of ${picture.name}`));
    this.onChange();
  }

  /** Forgets the reader's picture: an empty pad, or one refused, has no answers. */
  clear() {
    this.page.clear_own_image();
    this.picture = null;
    this.pixels = null;
    this.requests.clear();
    $("own-status").textContent = "No picture yet.";
    /** @type {HTMLButtonElement} */ ($("own-download")).disabled = true;
    $("own-seen").replaceChildren();
    this.onChange();
  }

  /** Says what went wrong with a picture, where the reader is looking. */
  showProblem(/** @type {string} */ message) {
    $("own-status").textContent = message;
  }

  /**
   * Asks for the networks' logits the section still needs, and shows the closest test images.
   * @param {{ needs: number[], neighbours: { row: number, caption: string }[] }} answers
   */
  show({ needs, neighbours }) {
    for (const model of needs) {
      if ([...this.requests.values()].some((request) => request.model === model && request.pixels === this.pixels)) continue;
      this.requestCount += 1;
      this.requests.set(this.requestCount, { model, pixels: this.pixels });
      this.pool.classifyOwn(model, this.pixels, this.requestCount);
    }
    const key = neighbours.map((n) => n.row).join(",");
    const strip = $("own-neighbours");
    if (strip.dataset.rows === key) return;
    strip.dataset.rows = key;
    const side = this.images.limits.image_side;
    strip.replaceChildren(...neighbours.map(({ row, caption }) => {
      const figure = document.createElement("figure");
      const canvas = thumbnailAsRead(this.images.get("test"), row, side, `test image ${row}`);
      const text = document.createElement("figcaption");
      text.textContent = `#${row}: ${caption}`;
      figure.append(canvas, text);
      return figure;
    }));
  }

  /** Keeps a network's logits on the reader's picture (Rust drops those of a picture replaced). */
  onLogits(/** @type {LogitsAnswer} */ message) {
    const request = this.requests.get(message.start);
    if (!request) return;
    try {
      this.page.add_own_logits(request.model, request.pixels, message.logits);
    } catch (error) {
      this.showProblem(`Inference returned bad values: ${error.message}`);
      return;
    }
    this.onChange();
  }
}
