// @ts-check
// The page's downloads of its assets (the test images and labels, the MNIST digits): every
// fetch the page's thread makes is here, with messages that name the file, tried again on a
// flaky network (download.js), and the gzip unzipping the page's module leaves to the browser.
import { DownloadError, download } from "./download.js";

export const IMAGES_URL = "assets/fashion-mnist/t10k-images-idx3-ubyte.gz";
export const LABELS_URL = "assets/fashion-mnist/t10k-labels-idx1-ubyte.gz";
// The same file's header and first batch of images, written by scripts/build-site.
export const FIRST_IMAGES_URL = "assets/fashion-mnist/t10k-images-first-batch-idx3-ubyte.gz";
export const MNIST_URL = "assets/mnist-ood-images-idx3-ubyte.gz";
// The most bytes of a download handed to the gzip decoder at once (see unzipped).
const UNZIP_PIECE = 64 * 1024;

/**
 * An IDX file opened as it downloads: its header, the bytes read past it (or null) and `read`,
 * which gives the next unzipped piece.
 * @typedef {{ header: Uint8Array, rest: Uint8Array | null, read: () => Promise<ReadableStreamReadResult<Uint8Array>> }} OpenIdx
 */

/**
 * Fetches a file, with a message that names it when it fails (a DownloadError where the network
 * did not deliver it); `onRetry` is told of each new try (see download.js).
 * @param {string} url
 * @param {(attempt: number, of: number) => void} [onRetry]
 * @returns {Promise<Response>}
 */
export async function fetchOk(url, onRetry) {
  const response = await download(url, onRetry);
  if (!response.ok) throw new Error(`Cannot load ${url}: HTTP ${response.status} ${response.statusText}`);
  return response;
}

/**
 * Fetches a gzipped file (an IDX file) and unzips it: the page's module has no gzip decoder.
 * @param {string} url
 * @returns {Promise<Uint8Array>}
 */
export async function fetchUnzipped(url) {
  const body = await unzipped(await fetchOk(url));
  try {
    return new Uint8Array(await new Response(body).arrayBuffer());
  } catch (error) {
    if (error instanceof DownloadError) throw error;
    throw new Error(`Cannot unzip ${url}: ${error.message}`);
  }
}

/**
 * The body of `response` unzipped as it arrives: through the browser's DecompressionStream when
 * it starts with gzip's magic bytes, as it is when a host already unzipped it
 * (Content-Encoding).
 * @param {Response} response
 * @returns {Promise<ReadableStream<Uint8Array>>}
 */
async function unzipped(response) {
  const reader = response.body.getReader();
  const first = await reader.read();
  let rest = first.done ? null : first.value;
  const gzipped = rest !== null && rest[0] === 0x1f && rest[1] === 0x8b;
  // Passed on in pieces of at most UNZIP_PIECE bytes: the browser hands over all that has
  // arrived (locally, megabytes at once), and a piece is unzipped whole before anything comes
  // out of it, so the images at its start waited for the rest of it.
  /** @type {ReadableStream<Uint8Array>} */
  const body = new ReadableStream({
    async pull(controller) {
      if (rest === null) {
        const { done, value } = await reader.read();
        if (done) return controller.close();
        rest = value;
      }
      controller.enqueue(rest.subarray(0, UNZIP_PIECE));
      rest = rest.length > UNZIP_PIECE ? rest.subarray(UNZIP_PIECE) : null;
    },
    cancel: (reason) => reader.cancel(reason),
  });
  // lib.dom types the decoder's input as any BufferSource; it is given Uint8Arrays.
  const gunzip = /** @type {ReadableWritablePair<Uint8Array, Uint8Array>} */ (/** @type {unknown} */ (new DecompressionStream("gzip")));
  return gzipped ? body.pipeThrough(gunzip) : body;
}

/**
 * Opens the gzipped IDX file of `response` (from `url`) and reads its header of `headerBytes`.
 * @param {Response} response
 * @param {string} url
 * @param {number} headerBytes
 * @returns {Promise<OpenIdx>}
 */
export async function openIdx(response, url, headerBytes) {
  const reader = (await unzipped(response)).getReader();
  // A broken gzip stream rejects a read: say which file.
  const read = () => reader.read().catch((error) => {
    if (error instanceof DownloadError) throw error;
    throw new Error(`Cannot unzip ${url}: ${error.message}`);
  });
  const header = new Uint8Array(headerBytes);
  let filled = 0;
  let rest = null;
  while (filled < header.length) {
    const { done, value } = await read();
    if (done) throw new Error(`${url} ends inside its header`);
    const taken = Math.min(value.length, header.length - filled);
    header.set(value.subarray(0, taken), filled);
    filled += taken;
    if (taken < value.length) rest = value.subarray(taken);
  }
  return { header, rest, read };
}
