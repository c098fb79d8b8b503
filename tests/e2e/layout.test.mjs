// The article as a reader first sees it, in headless Chromium: on the first screen at 1280×900
// the first lab's reliability diagram at least 500 px tall with its lesson beside it; on a phone
// (390×844) the diagram starting on the first screen; a jump past the labs not yet drawn landing
// on its target, which stays put as they fill in; the labs' index at hand while scrolling,
// its links moving to their lab without touching the link's state, the lab in view marked; the
// skip link first in the tab order; no empty band left by the progress bar once every image is
// in. UPDATE_SCREENSHOT=1 also copies both first screens to docs/first-screen-1280.png and
// docs/first-screen-390.png.
import assert from "node:assert/strict";
import { copyFileSync, mkdirSync } from "node:fs";
import path from "node:path";
import { after, before, test } from "node:test";

import { REPO_ROOT, collectProblems, launchBrowser, nextFrames, openSite, waitForInference } from "./helpers.mjs";

const INFERENCE_TIMEOUT_MS = 300_000;
const SCREENSHOTS = path.join(REPO_ROOT, "tests/e2e/screenshots");

let site;
let browser;
let page;
let problems;

before(async () => {
  site = await openSite();
  browser = await launchBrowser();
  problems = collectProblems(browser.context);
  page = browser.context.pages()[0] ?? (await browser.context.newPage());
  await page.goto(site.url);
  await waitForInference(page, INFERENCE_TIMEOUT_MS);
  await nextFrames(page, 3);
});

after(async () => {
  await browser?.close();
  await site?.close();
  assert.deepEqual(problems, [], "no console error, uncaught exception or failed request");
});

const box = (selector) => page.locator(selector).boundingBox();

// Saves the window as it is now, and copies it into docs/ when asked to.
async function firstScreen(name) {
  mkdirSync(SCREENSHOTS, { recursive: true });
  const shot = path.join(SCREENSHOTS, name);
  await page.screenshot({ path: shot });
  if (process.env.UPDATE_SCREENSHOT === "1") copyFileSync(shot, path.join(REPO_ROOT, "docs", name));
}

// The labs below the first screen draw when they come into view: a jump past them (the index, a
// skip link) draws none of them on the way, so that it lands where it aims, and stays there as
// the labs in view draw.
test("a jump from the index to the last lab ends on its heading, which stays there as the labs passed fill in", async () => {
  const target = await page.evaluate(() => [...document.querySelectorAll("#lab-index a")].at(-1).getAttribute("href").slice(1));
  // The heading's distance below the index: where each scroll ended (the first, where the jump
  // landed before lab-index.js corrects it), and at the end.
  await page.evaluate((id) => {
    window.__offset = () => document.getElementById(id).getBoundingClientRect().top - document.getElementById("lab-index").getBoundingClientRect().height;
    window.__landings = [];
    window.__onScrollEnd = () => window.__landings.push(window.__offset());
    addEventListener("scrollend", window.__onScrollEnd);
  }, target);
  await page.click(`#lab-index a[href="#${target}"]`);
  await page.waitForFunction(() => window.__landings.length > 0, null, { timeout: 30_000 });
  // Every lab passed draws, its worker's sentences too: wait until the page's height holds for 2 s.
  for (let steady = 0, height = 0; steady < 4;) {
    await new Promise((resolve) => setTimeout(resolve, 500));
    const now = await page.evaluate(() => document.documentElement.scrollHeight);
    steady = now === height ? steady + 1 : 0;
    height = now;
  }
  const { final, landed } = await page.evaluate(() => {
    removeEventListener("scrollend", window.__onScrollEnd);
    return { final: window.__offset(), landed: window.__landings[0] };
  });
  // The labs passed draw nothing while the page flies past them (frame.js holdUntil), so the
  // jump itself lands on the heading, before any correction.
  assert.ok(Math.abs(landed) <= 4, `the jump landed ${landed.toFixed(0)} px from #${target}'s heading`);
  assert.ok(Math.abs(final) <= 4, `#${target}'s heading moved to ${final.toFixed(0)} px once the labs passed were drawn`);
});

test("at 1280×900 the first screen holds the reliability diagram, at least 500 px tall, and its lesson beside it", async () => {
  await page.evaluate(() => window.scrollTo(0, 0));
  await nextFrames(page, 2);
  const diagram = await box("#reliability");
  const lesson = await box("#confidence-verdict");
  assert.ok(diagram.height >= 500, `the diagram is ${diagram.height.toFixed(0)} px tall`);
  assert.ok(diagram.y + diagram.height <= 900, `the diagram ends at ${(diagram.y + diagram.height).toFixed(0)} px`);
  assert.ok(lesson.x >= diagram.x + diagram.width, "the lesson is beside the diagram");
  assert.ok(lesson.y >= diagram.y - 1 && lesson.y + lesson.height <= 900, `the lesson spans ${lesson.y.toFixed(0)}–${(lesson.y + lesson.height).toFixed(0)} px`);
  assert.match(await page.locator("#confidence-verdict").textContent(), /\w/, "the lesson is written");
  await firstScreen("first-screen-1280.png");
});

test("once every image is in, the progress bar leaves no band in the article", async () => {
  await page.evaluate(() => window.scrollTo(0, 0));
  assert.equal(await page.locator(".status").isVisible(), false);
  const masthead = await box(".masthead");
  const index = await box("#lab-index");
  const title = await box("#temperature-title");
  assert.ok(index.y - (masthead.y + masthead.height) < 16, "the index follows the masthead");
  assert.ok(title.y - (index.y + index.height) < 16, "the first lab follows the index");
});

test("the labs' index stays at hand, moves to a lab without changing the link, and marks the lab in view", async () => {
  const hash = await page.evaluate(() => location.hash);
  await page.click('#lab-index a[href="#shift-lab"]');
  await page.waitForFunction(() => Math.abs(document.getElementById("shift-lab").getBoundingClientRect().top - document.getElementById("lab-index").getBoundingClientRect().height) < 4, null, { timeout: 30_000 });
  assert.equal(await page.evaluate(() => location.hash), hash, "the link's state is untouched");
  assert.equal(await page.evaluate(() => document.activeElement?.id), "shift-title", "focus moves to the lab's heading");
  const index = await box("#lab-index");
  assert.ok(Math.abs(index.y) < 1, "the index is stuck at the top");
  await page.waitForFunction(() => document.querySelector('#lab-index a[aria-current="location"]')?.getAttribute("href") === "#shift-lab", null, { timeout: 30_000 });
  // A stuck slider bar sits under the index, not behind it.
  await page.click('#lab-index a[href="#ood-lab"]');
  await page.evaluate(() => window.scrollBy(0, 600));
  await nextFrames(page, 2);
  const bar = await box("#ood-lab .slider-bar");
  const after = await box("#lab-index");
  assert.ok(bar.y >= after.y + after.height - 1, `the τ bar (at ${bar.y.toFixed(0)} px) is under the index (${(after.y + after.height).toFixed(0)} px)`);
  assert.ok(bar.height <= 80, `the τ bar is one line (${bar.height.toFixed(0)} px)`);
});

test("the skip link is the first stop of the keyboard and leads to the index", async () => {
  await page.evaluate(() => window.scrollTo(0, 0));
  // A click on the page's empty top corner makes it the starting point of the next Tab, as a
  // fresh load does.
  await page.mouse.click(2, 2);
  await page.keyboard.press("Tab");
  assert.equal(await page.evaluate(() => document.activeElement?.className), "skip-link");
  assert.ok(await page.locator(".skip-link").isVisible(), "shown once focused");
  await page.keyboard.press("Enter");
  assert.equal(await page.evaluate(() => document.activeElement?.id), "lab-index");
  await page.keyboard.press("Tab");
  assert.equal(await page.evaluate(() => document.activeElement?.getAttribute("href")), "#temperature-lab");
});

// The first screen keeps its places as the page loads: the space its lesson, the verdict's rates
// and the slider's scale take once drawn is there as soon as the article is parsed (a reader
// starts reading before the first logits are in).
test("as the page loads, the first screen's diagram, lesson and metrics keep their places at 1280×900 and on a phone", { timeout: INFERENCE_TIMEOUT_MS }, async () => {
  const places = ["#reliability", "#confidence-verdict", "#temperature-metrics"];
  for (const viewport of [{ width: 1280, height: 900 }, { width: 390, height: 844 }]) {
    // A first visit: a fresh profile, with no logits kept from an earlier one.
    const visit = await launchBrowser({ viewport });
    const visitProblems = collectProblems(visit.context);
    try {
      const fresh = visit.context.pages()[0] ?? (await visit.context.newPage());
      await fresh.goto(site.url, { waitUntil: "domcontentloaded" });
      const tops = () => fresh.evaluate((selectors) => selectors.map((s) => document.querySelector(s).getBoundingClientRect().top), places);
      const parsed = await tops();
      await waitForInference(fresh, INFERENCE_TIMEOUT_MS);
      await nextFrames(fresh, 3);
      const drawn = await tops();
      // On a phone the lesson and the metrics are below the first screen, under the chart's caption.
      const onFirstScreen = viewport.width === 390 ? places.slice(0, 1) : places;
      for (const [index, selector] of onFirstScreen.entries()) {
        assert.ok(Math.abs(drawn[index] - parsed[index]) <= 2, `${viewport.width}: ${selector} moved from ${parsed[index].toFixed(0)} to ${drawn[index].toFixed(0)} px as the page loaded`);
      }
      assert.deepEqual(visitProblems, [], `${viewport.width}: no console error, uncaught exception or failed request`);
    } finally {
      await visit.close();
    }
  }
});

test("on a phone (390×844) the first lab's diagram starts on the first screen", async () => {
  await page.setViewportSize({ width: 390, height: 844 });
  try {
    await page.evaluate(() => window.scrollTo(0, 0));
    await nextFrames(page, 3);
    const diagram = await box("#reliability");
    assert.ok(diagram.y < 844 - 200, `the diagram starts at ${diagram.y.toFixed(0)} px`);
    await firstScreen("first-screen-390.png");
  } finally {
    await page.setViewportSize({ width: 1280, height: 900 });
  }
});

test("presentation mode fits its figure and caption on the first screen at 1280×720 and on a phone", async () => {
  const before = await page.evaluate(() => location.hash);
  try {
    for (const viewport of [{ width: 1280, height: 720 }, { width: 390, height: 844 }]) {
      await page.setViewportSize(viewport);
      await page.evaluate(() => {
        const params = new URLSearchParams(location.hash.slice(1));
        params.set("present", "1");
        params.set("embed", "reliability");
        location.hash = params.toString();
      });
      await page.waitForFunction(() => document.body.classList.contains("present"));
      await nextFrames(page, 3);
      const canvas = await box("#reliability");
      const caption = await box("#reliability-caption");
      assert.ok(canvas.y < viewport.height / 2, `${viewport.width}: the figure starts at ${canvas.y.toFixed(0)} px`);
      assert.ok(caption.y + caption.height <= viewport.height, `${viewport.width}: the caption ends at ${(caption.y + caption.height).toFixed(0)} px`);
    }
  } finally {
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.evaluate((hash) => {
      location.hash = hash;
    }, before);
    await page.waitForFunction(() => !document.body.classList.contains("present"));
  }
});
