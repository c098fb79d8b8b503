// @ts-check
// calibra's service worker: keeps the site's files in the browser, so that a reload without a
// network shows every lab already visited (the logits themselves are kept in IndexedDB, see
// logits-cache.js). A classic script, with no framework; its scope is its own folder, and every
// address is relative to that scope, so the site works under a sub-path.
//
// - The build's manifest (build-manifest.json, written by scripts/site-manifest.mjs) gives each
//   file's content hash; scripts/build-site writes the build id into BUILD below, so a new build
//   is a new service worker for the browser.
// - Each file is kept, in the build's cache ("calibra-<build>"), under its address once it is
//   first fetched, and only if its bytes have the manifest's hash; it is then served from there
//   before the network. A file already in the browser's HTTP cache (fetched before this worker
//   was registered, which the page does once its test images are inferred, or while it was not
//   running, see below) or in the page's cache of resumed downloads (RESUMED, see download.js: a download
//   resumed with a Range request is in neither) is kept when the page asks ("sweep"), without
//   the network; a file of an earlier build with the same hash is carried over at install.
// - Where the browser has static routes (Chromium's ServiceWorker Static Routing API), the
//   site's files are answered from the build's cache by the browser itself, without this
//   worker: a revisit's navigation does not wait for the worker to start, nor any file for a
//   fetch event. A file the cache does not hold then goes to the network, and is kept at the
//   page's next sweep.
// - A new build waits: the open page keeps its own build's files, never a mix of two. The page
//   offers a reload, and asks this worker to take over ("activate"); on activation every other
//   build's cache is deleted.
// - A request with a Range header (a download resumed after a cut, see download.js) gets the
//   whole kept file, or goes to the network untouched.
//
// Messages from the page (each with a MessagePort for the answers):
//   {type: "sweep"}      keep what the HTTP cache holds of the build  -> {status: "done"}
//   {type: "keep-all"}   fetch and keep every file of the build       -> {status: "progress",
//                        bytes, total} after each file, then {status: "done"} or
//                        {status: "failed", message}
//   {type: "activate"}   this waiting worker takes over at once (the page reloads then)
// And to every page of the scope: {type: "stale"} when the network sent a file whose hash is
// not this build's (a new build is being deployed; the page offers a reload).
const BUILD = "unbuilt";
const sw = /** @type {ServiceWorkerGlobalScope} */ (/** @type {unknown} */ (self));
const CACHE_PREFIX = "calibra-";
const CACHE = `${CACHE_PREFIX}${BUILD}`;
// Where the page and its workers put a download they resumed after a cut (download.js), whole,
// for the next sweep to keep: its bytes passed by no fetch this worker saw.
const RESUMED = "calibra-resumed";
const SCOPE = new URL(sw.registration.scope);
const MANIFEST_URL = new URL("build-manifest.json", SCOPE).href;
// The waits before the 2nd, 3rd and 4th tries of a file keep-all fetches, in milliseconds.
const RETRY_DELAYS = [500, 1000, 2000];

// This build's manifest, { build, files: { path: { hash, bytes } } }, from the cache once
// installed; asked again after a failure.
let manifest = null;
function readManifest() {
  manifest ??= openCache()
    .then((cache) => cache.match(MANIFEST_URL))
    .then((response) => (response ? response.json() : fetchManifest()))
    .catch((error) => {
      manifest = null;
      throw error;
    });
  return manifest;
}

// The manifest from the server, which must be this build's.
async function fetchManifest() {
  const response = await fetch(MANIFEST_URL, { cache: "no-store" });
  if (!response.ok) throw new Error(`cannot fetch ${MANIFEST_URL}: HTTP ${response.status}`);
  const fetched = await response.json();
  if (fetched.build !== BUILD) throw new Error(`the server's manifest is of build ${fetched.build}, not ${BUILD}`);
  return fetched;
}

// The file's path in the site ("index.html" for the scope itself), or null outside the scope.
function sitePath(url) {
  const address = new URL(url);
  if (address.origin !== SCOPE.origin || !address.pathname.startsWith(SCOPE.pathname)) return null;
  const path = decodeURIComponent(address.pathname.slice(SCOPE.pathname.length));
  return path === "" || path.endsWith("/") ? `${path}index.html` : path;
}

// The addresses a file is kept under in its build's cache: its own, and the scope's for the page
// (a build's cache holds one version of each file, so the address alone is the key).
const addressesOf = (path) => (path === "index.html" ? [SCOPE.href, new URL(path, SCOPE).href] : [new URL(path, SCOPE).href]);

// The first 16 hex digits of the SHA-256 of `bytes`, as scripts/site-manifest.mjs writes them.
async function shortHash(bytes) {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return Array.from(digest.subarray(0, 8), (byte) => byte.toString(16).padStart(2, "0")).join("");
}

// Keeps `bytes` as file `path` if they have the manifest's hash; says whether they had.
async function keep(cache, path, entry, bytes, contentType) {
  if ((await shortHash(bytes)) !== entry.hash) return false;
  const headers = { "Content-Type": contentType ?? "application/octet-stream", "Content-Length": String(bytes.byteLength) };
  for (const address of addressesOf(path)) await cache.put(address, new Response(bytes, { headers }));
  return true;
}

// This build's cache, opened once.
let opened = null;
const openCache = () => (opened ??= caches.open(CACHE));

// The paths of the manifest not kept yet.
async function missing(cache, files) {
  const kept = new Set((await cache.keys()).map((request) => request.url));
  return Object.keys(files).filter((path) => !addressesOf(path).every((address) => kept.has(address)));
}

// Keeps every file of the build that the page's resumed downloads or the browser's HTTP cache
// hold, without the network.
async function sweep() {
  const [cache, { files }] = await Promise.all([openCache(), readManifest()]);
  const left = await missing(cache, files);
  if (await caches.has(RESUMED)) {
    const resumed = await caches.open(RESUMED);
    for (const path of left) {
      const response = await resumed.match(new URL(path, SCOPE));
      if (response) await keep(cache, path, files[path], await response.arrayBuffer(), response.headers.get("Content-Type"));
    }
    await caches.delete(RESUMED);
  }
  for (const path of await missing(cache, files)) {
    // The page itself is in the HTTP cache under the address it was visited at, the scope's.
    const addresses = path === "index.html" ? [SCOPE, new URL(path, SCOPE)] : [new URL(path, SCOPE)];
    for (const address of addresses) {
      try {
        const response = await fetch(address, { cache: "only-if-cached", mode: "same-origin" });
        if (response.ok && (await keep(cache, path, files[path], await response.arrayBuffer(), response.headers.get("Content-Type")))) break;
      } catch {
        // Not in the HTTP cache: kept when the page first fetches it.
      }
    }
  }
}

// Fetches and keeps every file of the build not kept yet, telling `port` how far it is.
async function keepAll(port) {
  const [cache, { files }] = await Promise.all([openCache(), readManifest()]);
  const total = Object.values(files).reduce((sum, entry) => sum + entry.bytes, 0);
  const left = await missing(cache, files);
  let bytes = total - left.reduce((sum, path) => sum + files[path].bytes, 0);
  port.postMessage({ status: "progress", bytes, total });
  for (const path of left) {
    for (let attempt = 0; ; attempt += 1) {
      try {
        const response = await fetch(new URL(path, SCOPE), { cache: "no-cache" });
        if (!response.ok) throw new Error(`${path}: HTTP ${response.status}`);
        if (!(await keep(cache, path, files[path], await response.arrayBuffer(), response.headers.get("Content-Type")))) {
          throw new Error(`${path} on the server is of a newer version of calibra: reload the page`);
        }
        break;
      } catch (error) {
        if (attempt === RETRY_DELAYS.length || error.message.includes("reload")) throw new Error(`cannot fetch ${error.message}`);
        await new Promise((resolve) => setTimeout(resolve, RETRY_DELAYS[attempt]));
      }
    }
    bytes += files[path].bytes;
    port.postMessage({ status: "progress", bytes, total });
  }
}

// Answers a request for a file of the site: from the cache, or from the network, kept as it passes.
async function respond(event, path) {
  const { request } = event;
  const [cache, { files }] = await Promise.all([openCache(), readManifest()]);
  const entry = files[path];
  if (!entry) return fetch(request);
  const cached = await cache.match(addressesOf(path)[0]);
  if (cached) return cached;
  const response = await fetch(request);
  if (request.headers.has("range") || response.status !== 200 || !response.body) return response;
  const [toPage, toCache] = response.body.tee();
  const contentType = response.headers.get("Content-Type");
  event.waitUntil(
    new Response(toCache)
      .arrayBuffer()
      .then((bytes) => keep(cache, path, entry, bytes, contentType))
      .then(async (kept) => {
        if (!kept) for (const client of await sw.clients.matchAll()) client.postMessage({ type: "stale" });
      })
      // A download cut part-way is not kept; the page resumes it (download.js).
      .catch(() => {}),
  );
  return new Response(toPage, { status: response.status, statusText: response.statusText, headers: response.headers });
}

sw.addEventListener("install", (event) => {
  event.waitUntil((async () => {
    const fetched = await fetchManifest();
    const cache = await caches.open(CACHE);
    await cache.put(MANIFEST_URL, new Response(JSON.stringify(fetched), { headers: { "Content-Type": "application/json" } }));
    manifest = Promise.resolve(fetched);
    // The files an earlier build had with the same bytes are carried over, not fetched again.
    const earlier = (await caches.keys()).filter((name) => name.startsWith(CACHE_PREFIX) && name !== CACHE && name !== RESUMED);
    for (const name of earlier) {
      const old = await caches.open(name);
      const oldFiles = (await (await old.match(MANIFEST_URL))?.json())?.files ?? {};
      for (const path of await missing(cache, fetched.files)) {
        const kept = oldFiles[path]?.hash === fetched.files[path].hash && (await old.match(addressesOf(path)[0]));
        if (kept) for (const address of addressesOf(path)) await cache.put(address, kept.clone());
      }
    }
    // Chromium answers the site's files from this cache itself (see the top); a request with a
    // query (an embed's address) comes here, as sitePath() reads it without its query. A browser
    // without static routes, or one that refuses these, sends every request here instead.
    const routed = /** @type {{ addRoutes?: (rules: object) => Promise<void> }} */ (/** @type {unknown} */ (event));
    const { URLPattern } = /** @type {{ URLPattern?: new (init: object) => object }} */ (/** @type {unknown} */ (sw));
    if (routed.addRoutes && URLPattern) {
      const urlPattern = new URLPattern({ protocol: SCOPE.protocol.slice(0, -1), hostname: SCOPE.hostname, port: SCOPE.port, pathname: `${SCOPE.pathname}*`, search: "" });
      await routed.addRoutes({ condition: { urlPattern, requestMethod: "GET" }, source: { cacheName: CACHE } }).catch(() => {});
    }
  })());
});

sw.addEventListener("activate", (event) => {
  event.waitUntil((async () => {
    for (const name of await caches.keys()) {
      if (name.startsWith(CACHE_PREFIX) && name !== CACHE && name !== RESUMED) await caches.delete(name);
    }
    await sw.clients.claim();
  })());
});

sw.addEventListener("fetch", (event) => {
  if (event.request.method !== "GET") return;
  // The page reads its own build's manifest (the size of everything), offline too.
  if (event.request.url === MANIFEST_URL) {
    event.respondWith(caches.match(MANIFEST_URL, { cacheName: CACHE }).then((kept) => kept ?? fetch(event.request)));
    return;
  }
  const path = sitePath(event.request.url);
  // Without its manifest (or its cache), this worker steps aside for the network.
  if (path !== null) event.respondWith(respond(event, path).catch(() => fetch(event.request)));
});

sw.addEventListener("message", (event) => {
  const port = event.ports[0];
  const { type } = event.data ?? {};
  if (type === "activate") {
    sw.skipWaiting();
  } else if (type === "sweep") {
    event.waitUntil(sweep().then(() => port?.postMessage({ status: "done" }), () => port?.postMessage({ status: "done" })));
  } else if (type === "keep-all") {
    event.waitUntil(keepAll(port).then(
      () => port.postMessage({ status: "done" }),
      (error) => port.postMessage({ status: "failed", message: error.message }),
    ));
  }
});
