// The logits cache (www/logits-cache.js): a revisit draws the same numbers with no inference and
// says so, in a note whose space is kept from the first paint, and finds its logits before the
// test images are unzipped; a network whose weights changed under the same address is inferred
// again, never shown with the old logits; "Compute them again" infers anew; a first visit does
// not wait for the database (a hint in localStorage says nothing was ever kept), and a hint whose
// database is gone costs only the asking; the cache holds at most ENTRIES sets of logits.
//
// One browser profile (so one IndexedDB) over a copy of the site whose weights the test swaps.
import assert from "node:assert/strict";
import { cpSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";

import { SITE_DIR, collectProblems, launchBrowser, readMetrics, serveDirectory, waitForInference } from "./helpers.mjs";

const INFERENCE_TIMEOUT_MS = 180_000;
const CROSS_ENTROPY = "assets/models/fmnist-ce.safetensors";
const LOGITNORM = "assets/models/fmnist-logitnorm.safetensors";
// The readouts compared between visits.
const COMPARED = ["accuracy", "ece", "nll", "brier", "fitted_temperature"];

let copy;
let site;
let browser;
let problems;
let page;

// Counts the batches the page sends to its inference workers, per page load, and the databases
// it opened before its first batch.
function countInference() {
  window.__inferBatches = 0;
  window.__opensBeforeInference = 0;
  const NativeWorker = window.Worker;
  window.Worker = class extends NativeWorker {
    postMessage(message, transfer) {
      if (message?.type === "infer") window.__inferBatches += 1;
      return super.postMessage(message, transfer);
    }
  };
  const open = indexedDB.open.bind(indexedDB);
  indexedDB.open = (...args) => {
    if (window.__inferBatches === 0) window.__opensBeforeInference += 1;
    return open(...args);
  };
}

// Loads the page afresh (the server answers "no-cache", so the browser asks it for every file;
// IndexedDB is kept) and waits for every image.
async function visit() {
  await page.goto(site.url, { waitUntil: "domcontentloaded" });
  const titleTop = () => page.evaluate(() => document.getElementById("temperature-title").getBoundingClientRect().top);
  const parsedTop = await titleTop();
  await waitForInference(page, INFERENCE_TIMEOUT_MS);
  await page.evaluate(() => window.calibra.cacheSettled());
  const metrics = await readMetrics(page);
  return {
    metrics: Object.fromEntries(COMPARED.map((name) => [name, metrics[name]])),
    batches: await page.evaluate(() => window.__inferBatches),
    opensBeforeInference: await page.evaluate(() => window.__opensBeforeInference),
    note: await page.isVisible("#cache-note"),
    // How far the first lab moved down between the parsed article and the drawn one.
    titleMoved: (await titleTop()) - parsedTop,
  };
}

before(async () => {
  copy = mkdtempSync(path.join(os.tmpdir(), "calibra-cache-site-"));
  cpSync(SITE_DIR, copy, { recursive: true });
  site = await serveDirectory(copy, { cacheControl: "no-cache" });
  browser = await launchBrowser();
  problems = collectProblems(browser.context);
  page = browser.context.pages()[0] ?? (await browser.context.newPage());
  await page.addInitScript(countInference);
});

after(async () => {
  await browser?.close();
  await site?.close();
  if (copy) rmSync(copy, { recursive: true, force: true });
  // Checked once every page of the file has run: a lone test would pass when run alone.
  assert.deepEqual(problems, [], "no console error, uncaught exception or failed request");
});

test("a revisit shows the same numbers from the cache, with no inference, and says so", { timeout: 400_000 }, async () => {
  const first = await visit();
  assert.ok(first.batches > 0, "the first visit infers");
  assert.equal(first.opensBeforeInference, 0, "the first visit infers before it opens the cache's database");
  assert.equal(first.note, false, "no cache note on the first visit");
  const second = await visit();
  assert.equal(second.batches, 0, "the revisit infers nothing");
  assert.equal(second.note, true, "the revisit says its logits come from the cache");
  // The note's space is kept from the first paint (a hint read in the head), so the first lab
  // does not move down when it shows.
  for (const [name, moved] of [["first visit", first.titleMoved], ["revisit", second.titleMoved]]) {
    assert.ok(Math.abs(moved) <= 2, `${name}: the first lab moved ${moved.toFixed(0)} px as the page loaded`);
  }
  assert.deepEqual(second.metrics, first.metrics);
});

test("on a revisit, the gallery's images drawn before the test images were in are drawn again once they are", { timeout: 400_000 }, async () => {
  // A page of the same profile (and database) whose article is scrolled to the conformal lab's
  // gallery as soon as it is parsed: the frame that brings the kept logits makes the gallery's
  // tiles, and on a revisit the test images are unzipped only after that frame.
  const galleryPage = await browser.context.newPage();
  try {
    await galleryPage.addInitScript(() => document.addEventListener("DOMContentLoaded", () => document.getElementById("gallery").scrollIntoView()));
    // A visit that keeps the logits (unless an earlier test did), then the revisit.
    await galleryPage.goto(site.url);
    await waitForInference(galleryPage, INFERENCE_TIMEOUT_MS);
    await galleryPage.evaluate(() => window.calibra.cacheSettled());
    await galleryPage.goto(site.url);
    await waitForInference(galleryPage, INFERENCE_TIMEOUT_MS);
    assert.equal(await galleryPage.isVisible("#cache-note"), true, "the logits come from the cache");
    await galleryPage.waitForFunction(() => window.calibra.testImagesIn === 10_000, null, { timeout: 60_000 });
    await galleryPage.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))));
    // A tile drawn before its image was in is blank: a test image is never all white.
    const blank = await galleryPage.evaluate(() => {
      const tiles = [...document.querySelectorAll("#gallery .tile")];
      const white = (canvas) => canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data.every((value) => value === 255);
      return { tiles: tiles.length, blank: tiles.filter((tile) => white(tile.querySelector("canvas"))).map((tile) => tile.dataset.row) };
    });
    assert.ok(blank.tiles > 0, "the gallery shows tiles");
    assert.deepEqual(blank.blank, [], `of ${blank.tiles} tiles, these rows' images are blank`);
  } finally {
    await galleryPage.close();
  }
});

test("changed weights under the same address are inferred again, never shown with old logits", { timeout: 400_000 }, async () => {
  const original = await visit();
  assert.equal(original.batches, 0);
  cpSync(path.join(SITE_DIR, LOGITNORM), path.join(copy, CROSS_ENTROPY));
  try {
    const swapped = await visit();
    assert.ok(swapped.batches > 0, "other weights are inferred");
    assert.equal(swapped.note, false);
    assert.ok(Math.abs(swapped.metrics.ece - original.metrics.ece) > 0.1, `the other network's ECE: ${swapped.metrics.ece} against ${original.metrics.ece}`);
  } finally {
    cpSync(path.join(SITE_DIR, CROSS_ENTROPY), path.join(copy, CROSS_ENTROPY));
  }
  const restored = await visit();
  assert.equal(restored.batches, 0, "the original weights' logits are still cached");
  assert.deepEqual(restored.metrics, original.metrics);
});

test("\"Compute them again\" forgets the cached logits and infers them anew", { timeout: 400_000 }, async () => {
  const cached = await visit();
  assert.equal(cached.note, true);
  await Promise.all([page.waitForEvent("load"), page.click("#recompute")]);
  await waitForInference(page, INFERENCE_TIMEOUT_MS);
  assert.ok((await page.evaluate(() => window.__inferBatches)) > 0, "inferred again");
  assert.equal(await page.isVisible("#cache-note"), false);
  const metrics = await readMetrics(page);
  assert.deepEqual(Object.fromEntries(COMPARED.map((name) => [name, metrics[name]])), cached.metrics);
});

test("with the database gone but the hint kept, a revisit infers again and keeps the logits anew", { timeout: 400_000 }, async () => {
  const cached = await visit();
  assert.equal(cached.batches, 0);
  const cdp = await browser.context.newCDPSession(page);
  await cdp.send("Storage.clearDataForOrigin", { origin: new URL(site.url).origin, storageTypes: "indexeddb" });
  await cdp.detach();
  assert.equal(await page.evaluate(() => localStorage.getItem("calibra-logits-kept")), "1", "the hint is kept");
  const inferred = await visit();
  assert.ok(inferred.batches > 0, "nothing cached: inferred");
  assert.equal(inferred.note, false);
  assert.deepEqual(inferred.metrics, cached.metrics);
  const again = await visit();
  assert.equal(again.batches, 0, "kept again");
});

test("the cache keeps at most ENTRIES sets of logits, dropping the oldest stored first", { timeout: 120_000 }, async () => {
  // A fresh profile, and a page of the site's origin that runs no inference (its style sheet):
  // only this test's entries are in the database.
  const fresh = await launchBrowser();
  try {
    const sheet = await fresh.context.newPage();
    await sheet.goto(new URL("style.css", site.url).href);
    const { entries, stored, kept } = await sheet.evaluate(async (moduleUrl) => {
      const cache = await import(moduleUrl);
      const keys = Array.from({ length: cache.ENTRIES + 2 }, (_, i) => `bound-test:${String(i).padStart(3, "0")}`);
      // One at a time: each entry is stored after the one before.
      for (const [i, key] of keys.entries()) await cache.keep(key, new Float32Array([i, -i]));
      const found = await Promise.all(keys.map((key) => cache.lookup(key)));
      return { entries: cache.ENTRIES, stored: found.filter(Boolean).length, kept: found.map((entry) => entry && Array.from(entry.logits)) };
    }, new URL("logits-cache.js", site.url).href);
    assert.equal(entries, 64);
    assert.equal(stored, entries, "as many entries as the bound");
    assert.deepEqual(kept.slice(0, 2), [null, null], "the two oldest are dropped");
    assert.deepEqual(kept[2], [2, -2]);
    assert.deepEqual(kept.at(-1), [entries + 1, -(entries + 1)], "the newest is kept with its logits");
  } finally {
    await fresh.close();
  }
});
