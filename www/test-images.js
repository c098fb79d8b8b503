// @ts-check
// The page's image sets: the test images read as they download (so that the first batches are
// inferred while the rest comes), the MNIST digits fetched when a job first needs them, the
// noise sets and the corrupted copies of the test images made in Rust.
import { idx_image_count, noise_pixels, parse_mnist, shifted_pixels } from "./pkg/calibra.js";
import { FIRST_IMAGES_URL, IMAGES_URL, MNIST_URL, fetchUnzipped, openIdx } from "./assets.js";

// Test images corrupted per call when the shift lab makes a corrupted copy: small enough that
// each call fits between two frames.
const CORRUPTION_CHUNK = 1000;

/** @typedef {ReturnType<typeof import("./pkg/calibra.js").limits>} Limits */

// Whether a set is a corrupted copy of the test images ("shift-rotation-3").
export const isShifted = (/** @type {string} */ set) => set.startsWith("shift-");

// Whether two byte arrays hold the same bytes.
const equalBytes = (/** @type {Uint8Array} */ a, /** @type {Uint8Array} */ b) => a.length === b.length && a.every((byte, i) => byte === b[i]);

export class ImageSets {
  /** @param {{ corruptions: { set: string, millis: number }[] }} timings where the copies' times go */
  constructor(timings) {
    this.timings = timings;
    /** @type {Limits | null} the page's constants, once its module is in */
    this.limits = null;
    /** @type {Record<string, Uint8Array>} each loaded set's pixels, by name */
    this.pixels = {};
    /** @type {Record<string, Promise<void>>} */
    this.loading = {};
    // How many test images are whole so far, and a promise that resolves once all are (and
    // rejects, with a message, on a broken file).
    this.testRows = 0;
    /** @type {Promise<void> | null} */
    this.testComplete = null;
  }

  /** @param {string} set @returns {Uint8Array | undefined} the pixels of a set that has been loaded */
  get(set) {
    return this.pixels[set];
  }

  /** How many images a set holds: a corrupted copy as many as the test set, also once its pixels are released. */
  count(set = "test") {
    return (this.get(set) ?? this.pixels.test).length / this.limits.image_side ** 2;
  }

  /** How many images of a set are whole: a set not loaded (or a copy dropped) has none. */
  rowsIn(/** @type {string} */ set) {
    return set === "test" ? this.testRows : this.pixels[set] ? this.count(set) : 0;
  }

  /**
   * Loads an image set the first time a job needs it: the MNIST digits are fetched (so a reader
   * who never opens the τ lab never downloads them), a noise set is drawn in Rust from its seed,
   * a corrupted copy of the test images is made in Rust.
   * @param {string} set
   */
  load(set) {
    const make = () => (isShifted(set) ? this.corruptedCopy(set) : noise_pixels(set));
    this.loading[set] ??= (set === "mnist"
      ? fetchUnzipped(MNIST_URL).then((bytes) => parse_mnist(bytes, MNIST_URL))
      : Promise.resolve().then(make)
    ).then((pixels) => {
      this.pixels[set] = pixels;
    });
    return this.loading[set];
  }

  /**
   * Drops a corrupted copy's pixels (31 MB for a few copies), or a set the network did not
   * deliver: made or fetched again if ever needed.
   */
  drop(/** @type {string} */ set) {
    delete this.pixels[set];
    delete this.loading[set];
  }

  /**
   * The corrupted copy `set` of the test images, made in Rust CORRUPTION_CHUNK images at a time
   * with the page's thread given back in between (the whole copy would take several frames).
   * @param {string} set
   */
  async corruptedCopy(set) {
    await this.testComplete;
    const test = this.pixels.test;
    const size = this.limits.image_side ** 2;
    const count = this.count();
    const copy = new Uint8Array(test.length);
    let busy = 0;
    for (let first = 0; first < count; first += CORRUPTION_CHUNK) {
      const end = Math.min(first + CORRUPTION_CHUNK, count);
      const started = performance.now();
      copy.set(shifted_pixels(test.subarray(first * size, end * size), first, set), first * size);
      busy += performance.now() - started;
      await new Promise((resolve) => setTimeout(resolve, 0));
    }
    this.timings.corruptions.push({ set, millis: busy });
    return copy;
  }

  /** Whether `first`, the small file unzipped (or null), holds the IDX header and the whole first batch. */
  holdsFirstBatch(/** @type {Uint8Array | null} */ first) {
    const { images_header, first_batch, image_side } = this.limits;
    return first !== null && first.length >= images_header + first_batch * image_side ** 2;
  }

  /**
   * Reads the test images as they arrive. `first` is FIRST_IMAGES_URL unzipped (the header and
   * the first batch's images, a small file asked for at once), or null where it could not be
   * had; `response` resolves to IMAGES_URL's response (the whole gzipped IDX file, asked for
   * when the page says). The header, checked by Rust, tells how many images there are; the
   * pixels are copied in place and `testRows` counts the whole images, `onRows` told of each
   * new count. Resolves with the pixels (still filling) once a header is in; `testComplete`
   * resolves once every image is, and rejects where the two files disagree. Where `first`
   * holds the first batch, the whole file is read once `unzipAfter` resolves (the first logits
   * on screen): a revisit asks for it at once, and its unzipping would hold back the page's
   * thread on the way to the first chart, which needs no pixels.
   * @param {Promise<Response>} response
   * @param {Uint8Array | null} first
   * @param {() => void} onRows
   * @param {Promise<void>} unzipAfter
   */
  async streamTest(response, first, onRows, unzipAfter) {
    const size = this.limits.image_side ** 2;
    const headerBytes = this.limits.images_header;
    const early = first !== null && first.length >= headerBytes;
    let file = early ? null : await openIdx(await response, IMAGES_URL, headerBytes);
    const header = early ? first.subarray(0, headerBytes) : file.header;
    const count = idx_image_count(header, early ? FIRST_IMAGES_URL : IMAGES_URL);
    const pixels = new Uint8Array(count * size);
    const prefix = early ? first.subarray(header.length, header.length + Math.min(first.length - header.length, pixels.length)) : pixels.subarray(0, 0);
    pixels.set(prefix);
    this.testRows = Math.floor(prefix.length / size);
    let written = 0;
    // Bytes past the last image are ignored, as Rust's IDX parser ignores them.
    const add = (/** @type {Uint8Array} */ chunk) => {
      const taken = Math.min(chunk.length, pixels.length - written);
      const before = written;
      pixels.set(chunk.subarray(0, taken), written);
      written += taken;
      if (before < prefix.length && written >= prefix.length && !equalBytes(pixels.subarray(0, prefix.length), prefix)) {
        throw new Error(`${FIRST_IMAGES_URL} does not hold the first images of ${IMAGES_URL}: the site is built from two different files`);
      }
      const rows = Math.floor(written / size);
      if (rows <= this.testRows) return;
      this.testRows = rows;
      onRows();
    };
    const holdsFirstBatch = this.holdsFirstBatch(first);
    this.testComplete = (async () => {
      if (holdsFirstBatch) await unzipAfter;
      file ??= await openIdx(await response, IMAGES_URL, headerBytes);
      if (!equalBytes(file.header, header)) throw new Error(`${FIRST_IMAGES_URL} and ${IMAGES_URL} have different headers: the site is built from two different files`);
      if (file.rest) add(file.rest);
      for (;;) {
        const { done, value } = await file.read();
        if (done) break;
        add(value);
      }
      if (written < pixels.length) throw new Error(`${IMAGES_URL} ends after ${this.testRows.toLocaleString("en")} of the ${count.toLocaleString("en")} images its header declares`);
    })();
    this.pixels.test = pixels;
    return pixels;
  }
}
