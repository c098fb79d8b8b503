// Shared by the end-to-end tests and the benchmark: the served site, headless Chromium driven by
// playwright-core, the native `calibra` CLI that computes the expected numbers, and small waits
// that follow the page's contract (www/index.js):
//   - every number has data-metric / data-value;
//   - body[data-inference] is "done" once the shown model's 10,000 logits have arrived;
//   - window.calibra.timings = { draws: [ms], firstChart: ms (once painted), inferenceDone: { modelIndex: ms } }.
//
// Environment (scripts/test sets all of them; each has a default for running by hand):
//   SITE_URL                the served site; unset: site/ is served here on a free port
//   CHROMIUM_BIN            the browser; unset: chromium from PATH (Debian's /usr/bin/chromium)
//   CHROMIUM_FLAGS          space-separated flags; --headless and --user-data-dir are handled here
//   CHROMIUM_USER_DATA_DIR  parent of the fresh profile each browser gets; unset: the temp dir
//   CALIBRA_BIN             a built `calibra` CLI; unset: `cargo build --release --bin calibra`
import { execFile, execFileSync } from "node:child_process";
import { createReadStream, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { gzipSync } from "node:zlib";

import { chromium } from "playwright-core";

const run = promisify(execFile);

export const REPO_ROOT = fileURLToPath(new URL("../..", import.meta.url));
export const SITE_DIR = path.join(REPO_ROOT, "site");

export const MODEL_URLS = {
  ce: "assets/models/fmnist-ce.safetensors",
  logitnorm: "assets/models/fmnist-logitnorm.safetensors",
};
export const IMAGES_URL = "assets/fashion-mnist/t10k-images-idx3-ubyte.gz";
export const LABELS_URL = "assets/fashion-mnist/t10k-labels-idx1-ubyte.gz";

// The flags scripts/test passes, for runs by hand.
const DEFAULT_FLAGS = [
  "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic", "--no-first-run",
  "--disable-background-networking", "--disable-component-update", "--disable-sync",
];

// ---------------------------------------------------------------------------------------------
// The site

const MIME_TYPES = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".json": "application/json",
  ".wasm": "application/wasm",
  ".png": "image/png",
  ".svg": "image/svg+xml",
  ".gz": "application/gzip",
  ".safetensors": "application/octet-stream",
};

// What static hosts (GitHub Pages and the like) send gzipped to a browser that accepts it: text,
// scripts and WebAssembly; never the .gz images (already compressed) or the weights.
const GZIPPED_TYPES = new Set([".html", ".js", ".mjs", ".css", ".json", ".wasm", ".svg"]);

// Serves `dir` read-only on 127.0.0.1 at a free port (or `port`), like `python3 -m http.server`
// (what scripts/test and scripts/demo use): no compression, no Content-Encoding (the .gz assets
// arrive as the bytes on disk), Last-Modified with 304 answers, and no Cache-Control unless
// `cacheControl` gives one (a test that changes files under the browser's feet asks for
// "no-cache", so that every load asks the server again). With `gzip`, the files of
// GZIPPED_TYPES go out gzipped (level 6, zlib's default) with Content-Encoding, as a static host
// sends them; the benchmark's slow-link visit uses that.
// Unlike python's server it answers a Range request of one range ("bytes=N-" or "bytes=N-M")
// with 206 and Content-Range, and for the flaky-network test `cut(pathname, bytes)` has the next
// whole answer for that path send its headers and only `bytes` bytes before it drops the
// connection. `requests` lists every request received, in order. `close()` drops open
// connections too (the browser's offline, as seen from a page).
export async function serveDirectory(dir, { cacheControl, gzip = false, port: wantedPort = 0 } = {}) {
  // The cuts still to make: pathname -> bytes sent before the connection drops.
  const cuts = new Map();
  const gzipped = new Map();
  // Every request received: "METHOD /path" (with " Range: …" when it has one).
  const requests = [];
  const root = path.resolve(dir);
  const server = createServer((request, response) => {
    let pathname;
    try {
      pathname = decodeURIComponent(new URL(request.url, "http://localhost").pathname);
    } catch {
      response.writeHead(400).end();
      return;
    }
    requests.push(`${request.method} ${pathname}${request.headers.range ? ` Range: ${request.headers.range}` : ""}`);
    let file = path.join(root, pathname);
    if (file !== root && !file.startsWith(root + path.sep)) {
      response.writeHead(403).end();
      return;
    }
    if (existsSync(file) && statSync(file).isDirectory()) file = path.join(file, "index.html");
    if (!existsSync(file) || !statSync(file).isFile()) {
      response.writeHead(404, { "Content-Type": "text/plain" }).end("not found");
      return;
    }
    const stat = statSync(file);
    const modified = new Date(Math.floor(stat.mtimeMs / 1000) * 1000);
    const since = Date.parse(request.headers["if-modified-since"] ?? "");
    if (Number.isFinite(since) && modified.getTime() <= since) {
      response.writeHead(304).end();
      return;
    }
    const headers = {
      "Content-Type": MIME_TYPES[path.extname(file)] ?? "application/octet-stream",
      "Content-Length": stat.size,
      "Last-Modified": modified.toUTCString(),
      ...(cacheControl ? { "Cache-Control": cacheControl } : {}),
    };
    const compress = gzip && GZIPPED_TYPES.has(path.extname(file)) && /\bgzip\b/.test(request.headers["accept-encoding"] ?? "");
    if (compress) {
      const key = `${file} ${stat.mtimeMs}`;
      if (!gzipped.has(key)) gzipped.set(key, gzipSync(readFileSync(file)));
      const body = gzipped.get(key);
      response.writeHead(200, { ...headers, "Content-Encoding": "gzip", "Content-Length": body.length, Vary: "Accept-Encoding" });
      response.end(request.method === "HEAD" ? undefined : body);
      return;
    }
    const range = /^bytes=(\d+)-(\d*)$/.exec(request.headers.range ?? "");
    if (range && !compress) {
      const start = Number(range[1]);
      const end = Math.min(range[2] === "" ? stat.size - 1 : Number(range[2]), stat.size - 1);
      if (start > end) {
        response.writeHead(416, { "Content-Range": `bytes */${stat.size}` }).end();
        return;
      }
      response.writeHead(206, { ...headers, "Content-Length": end - start + 1, "Content-Range": `bytes ${start}-${end}/${stat.size}` });
      if (request.method === "HEAD") response.end();
      else createReadStream(file, { start, end }).pipe(response);
      return;
    }
    response.writeHead(200, headers);
    if (request.method === "HEAD") {
      response.end();
    } else if (cuts.has(pathname)) {
      const bytes = cuts.get(pathname);
      cuts.delete(pathname);
      response.flushHeaders();
      createReadStream(file, { start: 0, end: bytes - 1 }).on("data", (chunk) => response.write(chunk)).on("end", () => {
        setTimeout(() => response.destroy(), 50);
      });
    } else {
      createReadStream(file).pipe(response);
    }
  });
  await new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(wantedPort, "127.0.0.1", resolve);
  });
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}/`,
    port,
    requests,
    cut: (pathname, bytes) => cuts.set(pathname, bytes),
    close: () => new Promise((resolve) => {
      server.close(resolve);
      server.closeAllConnections();
    }),
  };
}

// The site under test: SITE_URL when set (scripts/test), otherwise site/ served here.
export async function openSite() {
  if (process.env.SITE_URL) {
    const url = process.env.SITE_URL.endsWith("/") ? process.env.SITE_URL : `${process.env.SITE_URL}/`;
    return { url, close: async () => {} };
  }
  if (!existsSync(path.join(SITE_DIR, "index.html"))) {
    throw new Error(`${SITE_DIR}/index.html is missing: run bash scripts/build-site first, or set SITE_URL`);
  }
  return serveDirectory(SITE_DIR);
}

// Downloads one file of the served site, so the native tool reads exactly the bytes the page does.
export async function download(siteUrl, relative, destination) {
  const response = await fetch(new URL(relative, siteUrl));
  if (!response.ok) throw new Error(`GET ${relative}: HTTP ${response.status}`);
  const bytes = Buffer.from(await response.arrayBuffer());
  writeFileSync(destination, bytes);
  return bytes;
}

// ---------------------------------------------------------------------------------------------
// The browser

function which(command) {
  for (const dir of (process.env.PATH ?? "").split(path.delimiter)) {
    const candidate = path.join(dir, command);
    if (dir && existsSync(candidate)) return candidate;
  }
  return null;
}

export function chromiumExecutable() {
  const bin = process.env.CHROMIUM_BIN || which("chromium") || which("chromium-browser");
  if (!bin) throw new Error("no Chromium: install Debian's chromium or set CHROMIUM_BIN (browsers are never downloaded)");
  return bin;
}

// The browser's version line, e.g. "Chromium 156.0.8078.108 built on Debian GNU/Linux 12".
export function chromiumVersion() {
  return execFileSync(chromiumExecutable(), ["--version"], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
}

// CHROMIUM_FLAGS minus what playwright owns: headless mode and the profile directory.
export function chromiumArgs() {
  const flags = process.env.CHROMIUM_FLAGS ? process.env.CHROMIUM_FLAGS.split(/\s+/).filter(Boolean) : DEFAULT_FLAGS;
  return flags.filter((flag) => !flag.startsWith("--headless") && !flag.startsWith("--user-data-dir"));
}

// One headless Chromium with a fresh profile (a new directory under CHROMIUM_USER_DATA_DIR).
// Playwright turns off Chromium's guard against floods of history changes (it ignores a page's
// changes past 200 in 10 s); `historyFloodGuard` keeps it on, as browsers run it. The page's
// service worker (www/sw.js) is blocked unless `serviceWorkers` is "allow": it serves a build's
// files from its cache, so a test that changes files under the browser's feet would see the old
// ones; offline.test.mjs and the benchmark's revisit allow it.
export async function launchBrowser({ viewport = { width: 1280, height: 900 }, historyFloodGuard = false, hasTouch = false, serviceWorkers = "block" } = {}) {
  const parent = process.env.CHROMIUM_USER_DATA_DIR || os.tmpdir();
  mkdirSync(parent, { recursive: true });
  const userDataDir = mkdtempSync(path.join(parent, "calibra-e2e-"));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: chromiumExecutable(),
    headless: true,
    args: chromiumArgs(),
    viewport,
    deviceScaleFactor: 1,
    hasTouch,
    serviceWorkers,
    ignoreDefaultArgs: historyFloodGuard ? ["--disable-ipc-flooding-protection"] : [],
  });
  return {
    context,
    async close() {
      await context.close();
      rmSync(userDataDir, { recursive: true, force: true });
    },
  };
}

// How Chromium and Firefox report a request the browser gave up on. That is not a failure: it is
// what a navigation does to the requests of the page it leaves, workers' scripts included, and a
// test that loads the page again may do so while a worker is still starting.
const ABORTED = ["net::ERR_ABORTED", "NS_BINDING_ABORTED"];

// Records every console error, uncaught exception, failed request (but an aborted one) and HTTP
// error of a context, workers included (their console messages reach the context's "console"
// event).
export function collectProblems(context) {
  const problems = [];
  const where = (page) => {
    try {
      return page ? new URL(page.url()).hash || "/" : "?";
    } catch {
      return "?";
    }
  };
  context.on("console", (message) => {
    if (message.type() === "error") {
      const location = message.location();
      problems.push(`console.error [${where(message.page())}] ${message.text()} (${location.url}:${location.lineNumber})`);
    }
  });
  context.on("weberror", (error) => problems.push(`uncaught [${where(error.page())}] ${error.error().stack ?? error.error().message}`));
  context.on("requestfailed", (request) => {
    if (ABORTED.includes(request.failure()?.errorText ?? "")) return;
    problems.push(`request failed: ${request.url()} (${request.failure()?.errorText})`);
  });
  context.on("response", (response) => {
    if (response.status() >= 400) problems.push(`HTTP ${response.status()}: ${response.url()}`);
  });
  return problems;
}

// ---------------------------------------------------------------------------------------------
// The page's contract

// Waits until the shown model's inference is done (or the page gave up), then for the redraw
// that the last batch scheduled: index.js sets data-inference in the same task that requests
// that animation frame, so two frames later every readout shows all 10,000 logits.
// Gives up early when the page shows an error instead (a missing model would otherwise leave it
// "running" until the timeout), so only call it on a page whose hash is valid.
export async function waitForInference(page, timeout = 180_000) {
  await page.waitForFunction(
    () => ["done", "failed"].includes(document.body.dataset.inference) || !document.getElementById("error").hidden,
    null,
    { timeout, polling: 100 },
  );
  const state = await page.evaluate(() => ({ inference: document.body.dataset.inference, error: document.getElementById("error").textContent }));
  if (state.inference !== "done") throw new Error(`inference did not finish (data-inference="${state.inference}"), the page says: ${state.error}`);
  await nextFrames(page);
}

// Resolves after `count` animation frames of the page (pending redraws have run by then).
export function nextFrames(page, count = 2) {
  return page.evaluate(
    (n) => new Promise((resolve) => {
      const step = (left) => (left === 0 ? resolve() : requestAnimationFrame(() => step(left - 1)));
      step(n);
    }),
    count,
  );
}

export const drawCount = (page) => page.evaluate(() => window.calibra.timings.draws.length);

// Runs `action` and waits for the redraw it causes (a new entry in timings.draws).
export async function afterRedraw(page, action, timeout = 10_000) {
  const before = await drawCount(page);
  await action();
  await page.waitForFunction((n) => window.calibra.timings.draws.length > n, before, { timeout, polling: "raf" });
  await nextFrames(page, 1);
}

// The data URL of canvas `id` once something is drawn on it (it differs from a white canvas of
// its size): a figure is drawn only while it is on screen.
export async function drawnCanvasData(page, id, timeout = 10_000) {
  const blank = await page.evaluate((canvasId) => {
    const canvas = document.getElementById(canvasId);
    const empty = document.createElement("canvas");
    [empty.width, empty.height] = [canvas.width, canvas.height];
    const context = empty.getContext("2d");
    context.fillStyle = "white";
    context.fillRect(0, 0, empty.width, empty.height);
    return empty.toDataURL();
  }, id);
  await page.waitForFunction(([canvasId, empty]) => document.getElementById(canvasId).toDataURL() !== empty, [id, blank], { timeout, polling: 250 });
  return canvasData(page, id);
}

// Every readout with a data-metric attribute: { name: number } (NaN for an empty data-value).
export function readMetrics(page) {
  return page.evaluate(() => {
    const metrics = {};
    for (const element of document.querySelectorAll("[data-metric]")) {
      const raw = element.dataset.value;
      metrics[element.dataset.metric] = raw === undefined || raw === "" ? Number.NaN : Number(raw);
    }
    return metrics;
  });
}

// Scrolls the whole page into view step by step and back to the top, so labs that draw only
// when on screen (an IntersectionObserver in index.js) have drawn before a full-page screenshot.
export async function scrollThrough(page) {
  const { height, step } = await page.evaluate(() => ({ height: document.documentElement.scrollHeight, step: Math.max(200, innerHeight - 100) }));
  for (let y = 0; y < height; y += step) {
    await page.evaluate((top) => window.scrollTo(0, top), y);
    await nextFrames(page, 2);
  }
  await page.evaluate(() => window.scrollTo(0, 0));
  await nextFrames(page, 2);
}

// Brings each of the temperature lab's blocks of readouts on screen in turn, as a reader scrolling
// the lab does, then returns to the top: a frame computes a block's numbers only while it is on
// screen (limits().blocks), so a test reading all of them shows them first.
export async function showBlocks(page) {
  const ids = await page.evaluate(() => window.calibra.limits.blocks.map((block) => block.id));
  for (const id of ids) {
    await page.evaluate((block) => document.getElementById(block).scrollIntoView({ block: "center" }), id);
    await nextFrames(page, 3);
  }
  await page.evaluate(() => window.scrollTo(0, 0));
  await nextFrames(page, 2);
}

// The state's entries as the link gives them, once the last state's hash is in the address (the
// page writes it at most every 200 ms): the link's own, and the defaults (limits.defaults,
// written as the link writes them) for the fields it leaves out, being at their defaults.
export async function hashParams(page, timeout = 10_000) {
  await page.waitForFunction(() => !window.calibra.hashPending, null, { timeout });
  return page.evaluate(() => {
    const defaults = Object.entries(window.calibra.limits.defaults)
      .map(([key, value]) => [key, typeof value === "boolean" ? (value ? "1" : "0") : String(value)]);
    return { ...Object.fromEntries(defaults), ...Object.fromEntries(new URLSearchParams(location.hash.slice(1))) };
  });
}

export const canvasData = (page, id) => page.evaluate((canvasId) => document.getElementById(canvasId).toDataURL(), id);

// ---------------------------------------------------------------------------------------------
// The native tool

let calibraBinary = null;

// Builds the CLI once (cargo prints where the binary is) unless CALIBRA_BIN names one.
export function buildCalibra() {
  calibraBinary ??= (async () => {
    if (process.env.CALIBRA_BIN) return process.env.CALIBRA_BIN;
    const { stdout } = await run(
      "cargo",
      ["build", "--release", "--quiet", "--bin", "calibra", "--message-format=json-render-diagnostics"],
      { cwd: REPO_ROOT, maxBuffer: 64 << 20 },
    );
    for (const line of stdout.split("\n").reverse()) {
      if (!line.startsWith("{")) continue;
      const message = JSON.parse(line);
      if (message.reason === "compiler-artifact" && message.target?.name === "calibra" && message.executable) return message.executable;
    }
    throw new Error("cargo build --bin calibra reported no executable");
  })();
  return calibraBinary;
}

// Native expectations for the served site: the same model bytes, images and labels the page
// fetches, run through `calibra logits` once per model and `calibra report` per query.
export class Native {
  constructor(siteUrl) {
    this.siteUrl = siteUrl;
    this.dir = mkdtempSync(path.join(os.tmpdir(), "calibra-e2e-native-"));
    this.inputs = null;
    this.logits = new Map();
    this.weights = new Map();
  }

  async #inputs() {
    this.inputs ??= (async () => {
      const images = path.join(this.dir, "t10k-images-idx3-ubyte.gz");
      const labels = path.join(this.dir, "t10k-labels-idx1-ubyte.gz");
      await Promise.all([download(this.siteUrl, IMAGES_URL, images), download(this.siteUrl, LABELS_URL, labels)]);
      return { images, labels };
    })();
    return this.inputs;
  }

  // The served weights of `model` ("ce" or "logitnorm"), as bytes.
  async weightBytes(model) {
    if (!this.weights.has(model)) {
      this.weights.set(model, download(this.siteUrl, MODEL_URLS[model], path.join(this.dir, `${model}.safetensors`)));
    }
    return this.weights.get(model);
  }

  // Path of the .npy logits of `model` on the 10,000 test images, computed once.
  logitsFile(model) {
    if (!this.logits.has(model)) {
      this.logits.set(model, (async () => {
        const [binary, { images }] = await Promise.all([buildCalibra(), this.#inputs(), this.weightBytes(model)]);
        const out = path.join(this.dir, `${model}.npy`);
        await run(binary, ["logits", "--model", path.join(this.dir, `${model}.safetensors`), "--images", images, "--out", out]);
        return out;
      })());
    }
    return this.logits.get(model);
  }

  // `calibra report --json` on a seeded half/half split, T fitted or given; `extra` adds options.
  async report(model, { seed = 0, temperature, bins = 15, binning = "width", extra = [] } = {}) {
    const [binary, logits, { labels }] = await Promise.all([buildCalibra(), this.logitsFile(model), this.#inputs()]);
    const args = ["report", "--logits", logits, "--labels", labels, "--cal-fraction", "0.5", "--seed", String(seed),
      "--bins", String(bins), "--binning", binning, "--json"];
    if (temperature !== undefined) args.push("--temperature", String(temperature));
    args.push(...extra);
    const { stdout } = await run(binary, args, { maxBuffer: 16 << 20 });
    return JSON.parse(stdout);
  }

  close() {
    rmSync(this.dir, { recursive: true, force: true });
  }
}

// Largest |a - b| over the metrics both objects have, for diagnostics.
export function differences(page, native, names, suffix = "") {
  return Object.fromEntries(names.map((name) => [name, Math.abs(page[name + suffix] - native[name])]));
}
