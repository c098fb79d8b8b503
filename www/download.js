// @ts-check
// Downloads that survive a flaky network, for the page (assets.js) and the inference workers
// (worker.js): a request that fails, or a body cut part-way, is tried again after 0.5, 1 and 2 s;
// a cut body resumes with an HTTP Range request where the server answers 206 from the right
// byte, and otherwise is fetched whole again with the bytes already passed on skipped. The
// reader of the body sees one whole file or, once the tries are spent, an error: never a file
// that silently stops part-way. Offline (navigator.onLine false) a failure is not tried again:
// the lab that needs the file offers a retry (offline.js). A resumed file, whole, is put into the
// cache RESUMED before its reader sees its end, for the service worker to keep it for offline
// use (sw.js's sweep): the worker cannot keep it as it passes, as no one fetch held it whole.

// The waits before the 2nd, 3rd and 4th tries, in milliseconds.
const RETRY_DELAYS = [500, 1000, 2000];
// The cache of resumed downloads; sw.js reads and deletes it under the same name.
const RESUMED = "calibra-resumed";

/**
 * Puts the resumed download of `url`, `chunks` end to end, into the cache of resumed downloads.
 * Where the browser keeps no caches (an insecure address) or refuses (its storage is full), the
 * file is simply not kept for offline use.
 * @param {string} url
 * @param {BlobPart[]} chunks
 * @param {string | null} contentType
 */
async function keepResumed(url, chunks, contentType) {
  if (!("caches" in globalThis)) return;
  try {
    const cache = await caches.open(RESUMED);
    await cache.put(url, new Response(new Blob(chunks), { headers: { "Content-Type": contentType ?? "application/octet-stream" } }));
  } catch {
    // Not kept: the next visit fetches it again.
  }
}

/** A file the network did not deliver, after its tries: the lab that needs it offers a retry. */
export class DownloadError extends Error {
  /**
   * @param {string} url
   * @param {unknown} cause
   */
  constructor(url, cause) {
    super(`Cannot load ${url}: ${cause instanceof Error ? cause.message : String(cause)}`);
    this.name = "DownloadError";
    // Whether the browser was offline when the last try failed.
    this.offline = !navigator.onLine;
  }
}

/**
 * Fetches `url`; `onRetry(attempt, of)` is told before each new try (attempt 1 to `of`), and
 * with attempt 0 once the tries are over (a cut download goes on, or the last try failed). An
 * HTTP error other than a server's (5xx) is answered as it is, not tried again.
 * @param {string} url
 * @param {(attempt: number, of: number) => void} [onRetry]
 * @returns {Promise<Response>} the response, whose body resumes across cuts
 */
export async function download(url, onRetry = () => {}) {
  let attempt = 0;
  // Waits before the next try, or throws once they are spent (or the browser is offline).
  const retry = async (/** @type {unknown} */ error) => {
    if (attempt >= RETRY_DELAYS.length || !navigator.onLine) {
      if (attempt > 0) onRetry(0, RETRY_DELAYS.length);
      throw new DownloadError(url, error);
    }
    attempt += 1;
    onRetry(attempt, RETRY_DELAYS.length);
    await new Promise((resolve) => setTimeout(resolve, RETRY_DELAYS[attempt - 1]));
  };
  /** @type {Response} */
  let response;
  for (;;) {
    try {
      response = await fetch(url);
      if (response.status < 500) break;
      await retry(new Error(`HTTP ${response.status} ${response.statusText}`));
    } catch (error) {
      if (error instanceof DownloadError) throw error;
      await retry(error);
    }
  }
  if (!response.ok || !response.body) return response;
  // A body the host compressed on the way has no byte offsets to resume from.
  const resumable = !response.headers.has("Content-Encoding");
  /** @type {ReadableStreamDefaultReader<Uint8Array> | null} */
  let reader = response.body.getReader();
  // Bytes passed on so far (and the chunks, for keepResumed), and bytes of a whole refetch
  // still to skip.
  let received = 0;
  /** @type {BlobPart[]} */
  const chunks = [];
  let resumed = false;
  let skip = 0;
  // The rest of the file after a cut: from `received` (206), or whole with `skip` set (200).
  const reopen = async () => {
    const headers = resumable ? { Range: `bytes=${received}-` } : undefined;
    const again = await fetch(url, { headers, cache: "no-store" });
    const from = Number(/^bytes (\d+)-/.exec(again.headers.get("Content-Range") ?? "")?.[1]);
    if (again.status === 206 && from === received && again.body) {
      skip = 0;
    } else if (again.status === 200 && again.body) {
      skip = received;
    } else {
      throw new Error(`HTTP ${again.status} ${again.statusText} when resuming`);
    }
    resumed = true;
    onRetry(0, RETRY_DELAYS.length);
    return again.body.getReader();
  };
  const body = new ReadableStream({
    async pull(controller) {
      for (;;) {
        try {
          reader ??= await reopen();
          const { done, value } = await reader.read();
          if (done) {
            if (resumed) await keepResumed(url, chunks, response.headers.get("Content-Type"));
            chunks.length = 0;
            return controller.close();
          }
          const skipped = Math.min(skip, value.length);
          skip -= skipped;
          if (skipped === value.length) continue;
          received += value.length - skipped;
          const passed = value.subarray(skipped);
          chunks.push(/** @type {BlobPart} */ (passed));
          return controller.enqueue(passed);
        } catch (error) {
          if (error instanceof DownloadError) throw error;
          reader = null;
          await retry(error);
        }
      }
    },
    cancel: (reason) => reader?.cancel(reason),
  });
  return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
}
