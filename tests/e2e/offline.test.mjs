// The page offline and on a flaky network (www/sw.js, www/offline.js, www/download.js): a reload
// without the server shows the lab visited with every number, in Chromium and in Firefox; a lab
// not visited says beside it what it lacks, and its Retry works once the server is back; a
// download cut part-way resumes with a Range request and gives the same numbers; a new build
// (a changed manifest) replaces the cached one once the reader reloads.
//
// Each test serves site/ (or a copy) itself, with helpers.mjs's server (SITE_URL is not used):
// "offline" is that server stopped, as seen from the page (in Chromium also the browser's
// offline emulation), and "back" the same address served again (the service worker belongs to
// its origin). Firefox is driven by puppeteer-core over WebDriver BiDi, which has no offline
// emulation: there the server is stopped alone.
//
// Run: bash scripts/test (its last stage), or node --test tests/e2e/offline.test.mjs (after
// bash scripts/build-site).
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { appendFileSync, copyFileSync, cpSync, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";

import puppeteer from "puppeteer-core";

import { REPO_ROOT, SITE_DIR, launchBrowser, readMetrics, serveDirectory, showBlocks, waitForInference } from "./helpers.mjs";

const INFERENCE_TIMEOUT_MS = 300_000;
const NOTICE_TIMEOUT_MS = 60_000;
const FIREFOX_BIN = process.env.FIREFOX_BIN || "/usr/bin/firefox-esr";
const IMAGES = "/assets/fashion-mnist/t10k-images-idx3-ubyte.gz";
const WEIGHTS = "/assets/models/fmnist-ce.safetensors";

// The readouts shown with a number, once no more appear for 1.5 s (the bootstrap's intervals
// come after the inference).
async function numbers(page) {
  // The bootstrap worker's answers first (the rivals, the intervals): how long they take depends
  // on the machine's load, so a pause in the numbers' arrival does not mean they are all in.
  await numbersOf(page, ["rival_venn-abers_nll", "ece_lo", "ece_fitted_hi"]);
  let shown = {};
  for (let steady = 0; steady < 3;) {
    await new Promise((resolve) => setTimeout(resolve, 500));
    const metrics = Object.fromEntries(Object.entries(await readMetrics(page)).filter(([, value]) => Number.isFinite(value)));
    steady = Object.keys(metrics).length === Object.keys(shown).length ? steady + 1 : 0;
    shown = metrics;
  }
  return shown;
}

// The readouts `names`, once each shows a number.
async function numbersOf(page, names) {
  for (;;) {
    const metrics = await readMetrics(page);
    if (names.every((name) => Number.isFinite(metrics[name]))) return Object.fromEntries(names.map((name) => [name, metrics[name]]));
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

// Visits the page, waits for every number, and for the service worker to keep what was fetched.
async function visitAndKeep(page, url) {
  await page.goto(url);
  await waitForInference(page, INFERENCE_TIMEOUT_MS);
  await page.evaluate(() => window.calibra.cacheSettled());
  await page.evaluate(() => window.calibra.offlineKept());
}

test("a reload without the server shows the lab visited with every number (Chromium)", { timeout: 600_000 }, async () => {
  const site = await serveDirectory(SITE_DIR);
  const browser = await launchBrowser({ serviceWorkers: "allow" });
  try {
    const page = await browser.context.newPage();
    await visitAndKeep(page, site.url);
    await showBlocks(page);
    const online = await numbers(page);
    assert.ok(Object.keys(online).length > 20, `only ${Object.keys(online).length} numbers shown`);
    // A revisit online: the page and its files come from the build's cache, answered by the
    // browser itself (sw.js's static routes, so no wait for the worker to start and no fetch
    // event per file), and nothing reaches the server but the worker's update check.
    const before = site.requests.length;
    await page.goto(site.url);
    await waitForInference(page, INFERENCE_TIMEOUT_MS);
    assert.deepEqual(site.requests.slice(before).filter((request) => request !== "GET /sw.js"), []);
    const sources = await page.evaluate(() => Object.fromEntries(
      [...performance.getEntriesByType("navigation"), ...performance.getEntriesByType("resource")]
        .map((entry) => [new URL(entry.name).pathname, /** @type {any} */ (entry).workerFinalSourceType]),
    ));
    for (const file of ["/", "/style.css", "/index.js", "/pkg/calibra_bg.wasm", IMAGES]) assert.equal(sources[file], "cache", `${file}: ${JSON.stringify(sources)}`);
    await site.close();
    await browser.context.setOffline(true);
    await page.reload();
    await waitForInference(page, INFERENCE_TIMEOUT_MS);
    await showBlocks(page);
    assert.deepEqual(await numbersOf(page, Object.keys(online)), online);
    assert.ok(await page.locator("#error").isHidden(), await page.textContent("#error"));
  } finally {
    await browser.close();
    await site.close();
  }
});

test("a lab not visited says offline what it lacks, beside it, and its Retry works once the server is back", { timeout: 600_000 }, async () => {
  let site = await serveDirectory(SITE_DIR);
  const browser = await launchBrowser({ serviceWorkers: "allow" });
  try {
    const page = await browser.context.newPage();
    await visitAndKeep(page, site.url);
    await site.close();
    await browser.context.setOffline(true);
    await page.evaluate(() => document.getElementById("ood-lab").scrollIntoView());
    const notice = page.locator("#ood-lab .unfetched");
    await notice.waitFor({ state: "visible", timeout: NOTICE_TIMEOUT_MS });
    assert.match(await notice.textContent(), /has not been downloaded yet, and you are offline\.|could not be downloaded/);
    // No alert far from the lab, and the first lab still works.
    assert.ok(await page.locator("#error").isHidden(), await page.textContent("#error"));
    assert.equal(await page.locator("#temperature-lab .unfetched").count(), 0);
    site = await serveDirectory(SITE_DIR, { port: site.port });
    await browser.context.setOffline(false);
    // The workers hear of the network after the page does.
    await page.waitForFunction(() => navigator.onLine);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    await notice.locator("button").click();
    await notice.waitFor({ state: "hidden", timeout: NOTICE_TIMEOUT_MS }).catch(async (error) => {
      throw new Error(`the notice still says: ${await notice.textContent()} (${error.message})`);
    });
    await page.waitForFunction(() => Number.isFinite(Number(document.querySelector('[data-metric="auroc_msp"]')?.dataset.value || "x")), null, { timeout: INFERENCE_TIMEOUT_MS, polling: 250 });
  } finally {
    await browser.close();
    await site.close();
  }
});

test("downloads cut part-way resume (Range) and give the same numbers as whole ones", { timeout: 600_000 }, async () => {
  const site = await serveDirectory(SITE_DIR);
  const browsers = [];
  try {
    const visit = async (cut) => {
      const browser = await launchBrowser();
      browsers.push(browser);
      const ranges = [];
      browser.context.on("request", (request) => {
        if (request.headers().range) ranges.push(`${new URL(request.url()).pathname} ${request.headers().range}`);
      });
      const page = await browser.context.newPage();
      // Every text of the progress row, as it changes.
      await page.addInitScript(() => {
        window.__progressTexts = [];
        document.addEventListener("DOMContentLoaded", () => {
          const row = document.getElementById("progress-text");
          new MutationObserver(() => window.__progressTexts.push(row.textContent)).observe(row, { childList: true, characterData: true, subtree: true });
        });
      });
      if (cut) {
        site.cut(IMAGES, 1_000_000);
        site.cut(WEIGHTS, 100_000);
      }
      await page.goto(site.url);
      await waitForInference(page, INFERENCE_TIMEOUT_MS);
      assert.equal(await page.evaluate(() => window.calibra.testImagesIn), 10_000);
      // Every block of readouts computed on all the images: one near the first screen may have
      // been computed on the first batch alone, then left as it was once off screen.
      await showBlocks(page);
      return { numbers: await numbers(page), ranges, texts: await page.evaluate(() => window.__progressTexts) };
    };
    const whole = await visit(false);
    const cut = await visit(true);
    assert.deepEqual(whole.ranges, []);
    // One resumption a file, from the bytes its reader had when the connection dropped (at most
    // those sent; the browser may drop the last ones it held with the error).
    assert.equal(cut.ranges.length, 2, cut.ranges.join(", "));
    for (const [file, sent] of [[IMAGES, 1_000_000], [WEIGHTS, 100_000]]) {
      const from = cut.ranges.map((range) => new RegExp(`^${file} bytes=(\\d+)-$`).exec(range)).find(Boolean);
      assert.ok(from && Number(from[1]) <= sent, `${file}: ${cut.ranges.join(", ")}`);
    }
    assert.ok(cut.texts.some((text) => text.includes("retrying the test images' download (1 of 3)")), `the progress row said: ${[...new Set(cut.texts)].join(" | ")}`);
    assert.deepEqual(cut.numbers, whole.numbers);
  } finally {
    for (const browser of browsers) await browser.close();
    await site.close();
  }
});

test("downloads resumed after a cut are kept whole for offline use", { timeout: 600_000 }, async () => {
  const site = await serveDirectory(SITE_DIR);
  const browser = await launchBrowser({ serviceWorkers: "allow" });
  try {
    const page = await browser.context.newPage();
    site.cut(IMAGES, 1_000_000);
    site.cut(WEIGHTS, 100_000);
    await visitAndKeep(page, site.url);
    const resumed = site.requests.filter((request) => request.includes("Range:"));
    assert.deepEqual([...new Set(resumed.map((request) => request.split(" ")[1]))].sort(), [WEIGHTS, IMAGES].sort(), resumed.join(", "));
    await showBlocks(page);
    const online = await numbers(page);
    // Each resumed file is in the build's cache, whole (its bytes have the manifest's hash, which
    // sw.js checks before it keeps them), and the page's cache of resumed downloads is gone.
    const { build, files } = JSON.parse(readFileSync(path.join(SITE_DIR, "build-manifest.json"), "utf8"));
    const kept = await page.evaluate(async ([name, paths]) => {
      const cache = await caches.open(name);
      return Promise.all(paths.map(async (file) => (await (await cache.match(file))?.arrayBuffer())?.byteLength ?? 0));
    }, [`calibra-${build}`, [IMAGES, WEIGHTS]]);
    assert.deepEqual(kept, [IMAGES, WEIGHTS].map((file) => files[file.slice(1)].bytes));
    assert.equal(await page.evaluate(() => caches.has("calibra-resumed")), false);
    await site.close();
    await browser.context.setOffline(true);
    await page.reload();
    await waitForInference(page, INFERENCE_TIMEOUT_MS);
    await showBlocks(page);
    assert.deepEqual(await numbersOf(page, Object.keys(online)), online);
    assert.ok(await page.locator("#error").isHidden(), await page.textContent("#error"));
  } finally {
    await browser.close();
    await site.close();
  }
});

test("a new build (a changed manifest) replaces the cached one once the reader reloads", { timeout: 600_000 }, async () => {
  const copy = mkdtempSync(path.join(os.tmpdir(), "calibra-offline-site-"));
  cpSync(SITE_DIR, copy, { recursive: true });
  const site = await serveDirectory(copy, { cacheControl: "no-cache" });
  const browser = await launchBrowser({ serviceWorkers: "allow" });
  try {
    const page = await browser.context.newPage();
    await visitAndKeep(page, site.url);
    const first = JSON.parse(readFileSync(path.join(copy, "build-manifest.json"), "utf8")).build;
    assert.deepEqual(await page.evaluate(() => caches.keys()), [`calibra-${first}`]);
    // A new build: one file changed, the manifest and sw.js written again.
    appendFileSync(path.join(copy, "style.css"), "\n/* the next build */\n");
    copyFileSync(path.join(REPO_ROOT, "www", "sw.js"), path.join(copy, "sw.js"));
    execFileSync("node", [path.join(REPO_ROOT, "scripts", "site-manifest.mjs"), copy]);
    const second = JSON.parse(readFileSync(path.join(copy, "build-manifest.json"), "utf8")).build;
    assert.notEqual(second, first);
    // The open page keeps its build until the reader takes the new one.
    await page.reload();
    await waitForInference(page, INFERENCE_TIMEOUT_MS);
    await page.locator("#offline-update").waitFor({ state: "visible", timeout: NOTICE_TIMEOUT_MS });
    assert.doesNotMatch(await page.evaluate(() => fetch("style.css").then((response) => response.text())), /the next build/);
    await Promise.all([page.waitForNavigation(), page.click("#offline-reload")]);
    await waitForInference(page, INFERENCE_TIMEOUT_MS);
    await page.evaluate(() => window.calibra.offlineKept());
    assert.match(await page.evaluate(() => fetch("style.css").then((response) => response.text())), /the next build/);
    assert.deepEqual(await page.evaluate(() => caches.keys()), [`calibra-${second}`]);
  } finally {
    await browser.close();
    await site.close();
    rmSync(copy, { recursive: true, force: true });
  }
});

test("\"Keep everything for offline use\" states the size first, keeps every file of the build, and an unvisited lab then works offline", { timeout: 600_000 }, async () => {
  const site = await serveDirectory(SITE_DIR);
  const browser = await launchBrowser({ serviceWorkers: "allow" });
  try {
    const page = await browser.context.newPage();
    await visitAndKeep(page, site.url);
    const { build, files } = JSON.parse(readFileSync(path.join(SITE_DIR, "build-manifest.json"), "utf8"));
    const total = Object.values(files).reduce((sum, entry) => sum + entry.bytes, 0);
    const size = `${(total / 1e6).toFixed(1)} MB`;
    const button = page.locator("#keep-offline");
    assert.equal(await button.textContent(), `Keep everything for offline use (${size})`);
    await button.click();
    await page.waitForFunction(() => /^Done|^Not everything/.test(document.getElementById("keep-offline-status").textContent), null, { timeout: 120_000 });
    assert.equal(await page.textContent("#keep-offline-status"), `Done: all ${size} are kept in this browser; every lab now works offline here.`);
    const kept = await page.evaluate(async (name) => (await (await caches.open(name)).keys()).map((request) => new URL(request.url).pathname.slice(1)), `calibra-${build}`);
    assert.deepEqual(Object.keys(files).filter((file) => !kept.includes(file)), []);
    // Offline, a lab never visited (another network, the digits) computes its numbers.
    await site.close();
    await browser.context.setOffline(true);
    await page.evaluate(() => document.getElementById("ood-lab").scrollIntoView());
    await page.waitForFunction(() => Number.isFinite(Number(document.querySelector('[data-metric="auroc_msp"]')?.dataset.value || "x")), null, { timeout: INFERENCE_TIMEOUT_MS, polling: 250 });
    assert.equal(await page.locator("#ood-lab .unfetched").count(), 0);
  } finally {
    await browser.close();
    await site.close();
  }
});

test("Firefox: a reload without the server shows the lab visited with every number", { timeout: 600_000 }, async (t) => {
  if (!existsSync(FIREFOX_BIN)) throw new Error(`no Firefox at ${FIREFOX_BIN}: install Debian's firefox-esr or set FIREFOX_BIN`);
  const site = await serveDirectory(SITE_DIR);
  const firefox = await puppeteer.launch({ browser: "firefox", executablePath: FIREFOX_BIN, headless: true, defaultViewport: { width: 1280, height: 900, deviceScaleFactor: 1 } });
  try {
    t.diagnostic(`Firefox: ${await firefox.version()}`);
    const page = (await firefox.pages())[0] ?? (await firefox.newPage());
    const settled = () => page.waitForFunction(() => ["done", "failed"].includes(document.body.dataset.inference), { timeout: INFERENCE_TIMEOUT_MS, polling: 200 });
    await page.goto(site.url);
    await settled();
    await page.evaluate(() => window.calibra.cacheSettled());
    await page.evaluate(() => window.calibra.offlineKept());
    await showBlocks(page);
    const online = await numbers(page);
    assert.ok(Object.keys(online).length > 20, `only ${Object.keys(online).length} numbers shown`);
    await site.close();
    await page.reload();
    await settled();
    assert.equal(await page.evaluate(() => document.body.dataset.inference), "done");
    await showBlocks(page);
    assert.deepEqual(await numbersOf(page, Object.keys(online)), online);
  } finally {
    await firefox.close();
    await site.close();
  }
});
