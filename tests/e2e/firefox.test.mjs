// The page in Firefox: Debian's firefox-esr, headless, driven by puppeteer-core over WebDriver
// BiDi (no browser download). The same URL is loaded in headless Chromium (helpers.mjs) at the
// same time, and the numbers Firefox shows are compared live with Chromium's: nothing here is a
// hard-coded expectation.
//
// One page load per browser. This file reads only the page's stable contract: the ids
// `temperature` and `conformal-lab`, the readouts' data-metric / data-value, the hash key `t`, and
// body[data-inference] ("done" once the shown model's logits have all arrived).
//
// Environment: FIREFOX_BIN (default /usr/bin/firefox-esr), plus what helpers.mjs reads (SITE_URL,
// CHROMIUM_BIN, CHROMIUM_FLAGS, CHROMIUM_USER_DATA_DIR). Run: bash scripts/test (its last stage), or
//   node --test tests/e2e/firefox.test.mjs
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { after, before, test } from "node:test";

import puppeteer from "puppeteer-core";

import { collectProblems, launchBrowser, nextFrames, openSite, readMetrics } from "./helpers.mjs";

const FIREFOX_BIN = process.env.FIREFOX_BIN || "/usr/bin/firefox-esr";
// Generous: both browsers run the CNN over 10,000 images at once, on a machine that may have
// two busy cores.
const INFERENCE_TIMEOUT_MS = 300_000;
const REDRAW_TIMEOUT_MS = 30_000;
// Accuracy is k / 5000 from arg-maxes alone: the same split and the same arg-maxes give the same
// float; 1e-9 only allows for how data-value prints it.
const TOLERANCE_ACCURACY = 1e-9;
// Coverage is a fraction of evaluation images whose set holds the true label. Firefox's and
// Chromium's WebAssembly engines may round the logits differently in the last float bits (fused
// or reordered sums, Math.exp in JS), which can move a score across q̂ for an image at the edge;
// one image of 5,000 is 2e-4, so 1e-6 still demands the same sets for every image, allowing only
// for rounding in the fraction itself.
const TOLERANCE_COVERAGE = 1e-6;
const SLIDER_STEPS_MOVED = 25;

let site;
let chromium;
let chromiumPage;
let chromiumProblems;
let firefox;
let firefoxPage;
const firefoxProblems = [];

// Polls `predicate(arg)` in the page until it returns a truthy value; works with both drivers
// (playwright's and puppeteer's page.evaluate share this signature).
async function poll(page, predicate, arg, timeout, what) {
  const deadline = Date.now() + timeout;
  for (;;) {
    const value = await page.evaluate(predicate, arg);
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeout} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

// Waits until body[data-inference] is "done" (fails at once on "failed"), then for the redraw the
// last batch scheduled.
async function waitForInferenceDone(page, browserName) {
  const state = await poll(
    page,
    () => (["done", "failed"].includes(document.body.dataset.inference) ? document.body.dataset.inference : null),
    null,
    INFERENCE_TIMEOUT_MS,
    `${browserName}: body[data-inference] = "done"`,
  );
  assert.equal(state, "done", `${browserName}: inference ended with data-inference="${state}"`);
  await nextFrames(page);
}

const metricValue = (page, name) => page.evaluate((metric) => {
  const raw = document.querySelector(`[data-metric="${metric}"]`)?.dataset.value;
  return raw === undefined || raw === "" ? null : Number(raw);
}, name);

// Scrolls the conformal lab on screen (labs off screen are not redrawn) and returns its coverage
// once shown, after two more frames so a pending redraw has run.
async function conformalCoverage(page, browserName) {
  await page.evaluate(() => document.getElementById("conformal-lab").scrollIntoView({ block: "start" }));
  await poll(
    page,
    () => {
      const raw = document.querySelector('[data-metric="coverage"]')?.dataset.value;
      return raw !== undefined && raw !== "";
    },
    null,
    REDRAW_TIMEOUT_MS,
    `${browserName}: the conformal lab's coverage readout`,
  );
  await nextFrames(page);
  return metricValue(page, "coverage");
}

async function launchFirefox() {
  const browser = await puppeteer.launch({
    browser: "firefox",
    executablePath: FIREFOX_BIN,
    headless: true,
    defaultViewport: { width: 1280, height: 900, deviceScaleFactor: 1 },
  });
  const page = (await browser.pages())[0] ?? (await browser.newPage());
  page.on("console", (message) => {
    if (message.type() === "error") firefoxProblems.push(`console.error ${message.text()} (${message.location()?.url ?? "?"})`);
  });
  page.on("pageerror", (error) => firefoxProblems.push(`uncaught ${error?.stack ?? error}`));
  page.on("requestfailed", (request) => firefoxProblems.push(`request failed: ${request.url()} (${request.failure()?.errorText})`));
  page.on("response", (response) => {
    if (response.status() >= 400) firefoxProblems.push(`HTTP ${response.status()}: ${response.url()}`);
  });
  return { browser, page };
}

before(async () => {
  // Checked first, so a missing Firefox fails before anything is started.
  if (!existsSync(FIREFOX_BIN)) {
    throw new Error(`no Firefox at ${FIREFOX_BIN}: install Debian's firefox-esr package (apt-get install firefox-esr) or set FIREFOX_BIN (browsers are never downloaded)`);
  }
  site = await openSite();
  // Both browsers load the same URL and run their inference side by side.
  [firefox, chromium] = await Promise.all([launchFirefox(), launchBrowser()]);
  firefoxPage = firefox.page;
  chromiumProblems = collectProblems(chromium.context);
  chromiumPage = chromium.context.pages()[0] ?? (await chromium.context.newPage());
  await Promise.all([firefoxPage.goto(site.url), chromiumPage.goto(site.url)]);
  await Promise.all([waitForInferenceDone(firefoxPage, "Firefox"), waitForInferenceDone(chromiumPage, "Chromium")]);
});

after(async () => {
  await firefox?.browser.close();
  await chromium?.close();
  await site?.close();
  // Checked once every page of the file has run: a lone test would pass when run alone.
  assert.deepEqual(firefoxProblems, [], `Firefox:\n${firefoxProblems.join("\n")}`);
  assert.deepEqual(chromiumProblems, [], `Chromium:\n${chromiumProblems.join("\n")}`);
});

test("Firefox runs the page: its accuracy readout equals Chromium's (1e-9)", async (t) => {
  const version = await firefox.browser.version();
  t.diagnostic(`Firefox: ${version}`);
  const [inFirefox, inChromium] = await Promise.all([readMetrics(firefoxPage), readMetrics(chromiumPage)]);
  assert.ok(inFirefox.accuracy > 0.5 && inFirefox.accuracy <= 1, `Firefox shows accuracy ${inFirefox.accuracy}`);
  assert.ok(
    Math.abs(inFirefox.accuracy - inChromium.accuracy) <= TOLERANCE_ACCURACY,
    `accuracy: Firefox ${inFirefox.accuracy}, Chromium ${inChromium.accuracy}`,
  );
  assert.ok(Number.isFinite(inFirefox.ece), `Firefox shows an ECE (${inFirefox.ece})`);
  t.diagnostic(`accuracy ${inFirefox.accuracy}; ECE Firefox ${inFirefox.ece}, Chromium ${inChromium.ece}`);
});

// Before any other test scrolls: the labs below the first screen are not drawn yet.
test("a jump from the lab index in Firefox lands on the last lab's heading, drawing none of the labs it passes", async (t) => {
  const page = firefoxPage;
  const target = await page.evaluate(() => [...document.querySelectorAll("#lab-index a")].at(-1).getAttribute("href").slice(1));
  await page.evaluate((id) => {
    window.__offset = () => document.getElementById(id).getBoundingClientRect().top - document.getElementById("lab-index").getBoundingClientRect().height;
    window.__landed = new Promise((resolve) => addEventListener("scrollend", () => resolve(window.__offset()), { once: true }));
  }, target);
  await page.click(`#lab-index a[href="#${target}"]`);
  const landed = await page.evaluate(() => window.__landed);
  assert.ok(Math.abs(landed) <= 4, `the jump landed ${landed.toFixed(0)} px from #${target}'s heading`);
  t.diagnostic(`landed ${landed.toFixed(1)} px from #${target}`);
  await page.evaluate(() => window.scrollTo(0, 0));
});

test("the conformal lab's coverage in Firefox lies in [0, 1] and equals Chromium's (1e-6)", { timeout: REDRAW_TIMEOUT_MS * 3 }, async (t) => {
  const [inFirefox, inChromium] = await Promise.all([
    conformalCoverage(firefoxPage, "Firefox"),
    conformalCoverage(chromiumPage, "Chromium"),
  ]);
  assert.ok(Number.isFinite(inFirefox) && inFirefox >= 0 && inFirefox <= 1, `Firefox coverage ${inFirefox}`);
  assert.ok(
    Math.abs(inFirefox - inChromium) <= TOLERANCE_COVERAGE,
    `coverage: Firefox ${inFirefox}, Chromium ${inChromium}`,
  );
  t.diagnostic(`coverage ${inFirefox}`);
});

test("the temperature slider, moved with the keyboard in Firefox, changes the ECE and the hash's t", { timeout: REDRAW_TIMEOUT_MS * 3 }, async (t) => {
  const before = await readMetrics(firefoxPage);
  const hashT = () => firefoxPage.evaluate(() => new URLSearchParams(location.hash.slice(1)).get("t"));
  const tBefore = await hashT();
  const position = Number(await firefoxPage.$eval("#temperature", (input) => input.value));
  await firefoxPage.$eval("#temperature", (input) => input.scrollIntoView({ block: "center" }));
  await firefoxPage.focus("#temperature");
  for (let step = 0; step < SLIDER_STEPS_MOVED; step += 1) await firefoxPage.keyboard.press("ArrowRight");

  const moved = Number(await firefoxPage.$eval("#temperature", (input) => input.value));
  assert.equal(moved, position + SLIDER_STEPS_MOVED, "each ArrowRight moves the slider one step");
  const t1 = await poll(
    firefoxPage,
    (previous) => {
      const t = new URLSearchParams(location.hash.slice(1)).get("t");
      return t !== null && t !== previous ? t : null;
    },
    tBefore,
    REDRAW_TIMEOUT_MS,
    `Firefox: the hash's t to change from ${tBefore}`,
  );
  assert.ok(Number(t1) > 0, `hash t=${t1} is a temperature`);
  if (tBefore !== null) assert.ok(Number(t1) > Number(tBefore), `moving right raises T: t=${tBefore} -> ${t1}`);
  const ece = await poll(
    firefoxPage,
    (previous) => {
      const value = Number(document.querySelector('[data-metric="ece"]')?.dataset.value);
      return Number.isFinite(value) && value !== previous ? value : null;
    },
    before.ece,
    REDRAW_TIMEOUT_MS,
    `Firefox: the ECE readout to change from ${before.ece}`,
  );
  await nextFrames(firefoxPage);
  const afterMove = await readMetrics(firefoxPage);
  assert.notEqual(ece, before.ece);
  assert.equal(afterMove.accuracy, before.accuracy, "temperature never changes the accuracy");
  t.diagnostic(`slider ${position} -> ${moved}, hash t=${tBefore} -> ${t1}, ECE ${before.ece} -> ${afterMove.ece}`);
});

test("every slider in Firefox follows a pointer at 10%, 50% and 90% of its track and the keys Home, End, Page Up and Page Down, with no error", { timeout: 180_000 }, async (t) => {
  const page = firefoxPage;
  const limits = await page.evaluate(() => window.calibra.limits);
  const enabling = { "raps-lambda": "score=raps", "k-reg": "score=raps", "saps-lambda": "score=saps" };
  const settled = async (id) => {
    await nextFrames(page, 3);
    // The link is written at most every 200 ms: wait until it holds the last move.
    await poll(page, () => !window.calibra.hashPending, null, REDRAW_TIMEOUT_MS, "the link to follow the slider");
    return page.evaluate((control) => ({
      value: Number(document.getElementById(control).value),
      error: document.getElementById("error").hidden ? "" : document.getElementById("error").textContent,
      inline: document.getElementById(`${control}-error`)?.hidden === false ? document.getElementById(`${control}-error`).textContent : "",
      tau: new URLSearchParams(location.hash.slice(1)).get("tau") ?? window.calibra.limits.defaults.tau,
    }), id);
  };
  for (const range of limits.sliders) {
    const id = range.control;
    await page.evaluate((hash) => { location.hash = hash; }, enabling[id] ?? "");
    await page.evaluate((control) => document.getElementById(control).scrollIntoView({ block: "center" }), id);
    await nextFrames(page, 3);
    const box = await (await page.$(`#${id}`)).boundingBox();
    const landed = [];
    for (const fraction of [0.1, 0.5, 0.9]) {
      await page.mouse.click(box.x + fraction * box.width, box.y + box.height / 2);
      const after = await settled(id);
      assert.deepEqual([after.error, after.inline], ["", ""], `${id} click at ${fraction}`);
      if (id === "tau") assert.equal(after.tau, limits.tau_steps[after.value], "τ follows the slider");
      landed.push(after.value);
    }
    assert.ok(landed[0] < landed[1] && landed[1] < landed[2], `${id}: clicks landed at ${landed}`);
    await page.focus(`#${id}`);
    for (const [key, expected] of [["End", range.max], ["PageDown", null], ["PageUp", range.max], ["Home", range.min]]) {
      await page.keyboard.press(key);
      const after = await settled(id);
      assert.deepEqual([after.error, after.inline], ["", ""], `${id} ${key}`);
      if (expected === null) assert.ok(after.value < range.max, `${id} ${key} from the end: ${after.value}`);
      else assert.ok(Math.abs(after.value - expected) < 1e-9, `${id} ${key}: ${after.value}, expected ${expected}`);
    }
    t.diagnostic(`${id}: clicks at ${landed.join(", ")}`);
  }
});
