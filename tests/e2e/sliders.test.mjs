// Every slider as a person moves it: a pointer click at 10%, 50% and 90% of its track, a tap,
// and the keys Home, End, Page Up, Page Down and the arrows, in headless Chromium. After each, the
// slider keeps the position it was moved to (Rust accepted it: a refused position snaps back),
// the link's entry follows, and no error shows. Each slider's range comes from Rust
// (`Limits::sliders`); this file reads it from the page.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { collectProblems, hashParams, launchBrowser, nextFrames, openSite, waitForInference } from "./helpers.mjs";

const INFERENCE_TIMEOUT_MS = 300_000;
// Where a slider's own state is enabled: the score sliders only with their score.
const ENABLING_HASH = { "raps-lambda": "score=raps", "k-reg": "score=raps", "saps-lambda": "score=saps" };

let site;
let browser;
let page;
let problems;
let limits;

before(async () => {
  site = await openSite();
  browser = await launchBrowser({ hasTouch: true });
  problems = collectProblems(browser.context);
  page = browser.context.pages()[0] ?? (await browser.context.newPage());
  await page.goto(site.url);
  await waitForInference(page, INFERENCE_TIMEOUT_MS);
  limits = await page.evaluate(() => window.calibra.limits);
});

after(async () => {
  await browser?.close();
  await site?.close();
  assert.deepEqual(problems, [], "no console error, uncaught exception or failed request");
});

// The slider's value, the shown error (if any) and the link's entry for its field, a few frames
// after the last move (a refused move would have been put back by then).
async function settled(control, key) {
  await nextFrames(page, 3);
  const hash = await hashParams(page);
  const shown = await page.evaluate((id) => {
    const error = document.getElementById("error");
    const inline = document.getElementById(`${id}-error`);
    return {
      value: Number(document.getElementById(id).value),
      error: error.hidden ? "" : error.textContent,
      inline: inline && !inline.hidden ? inline.textContent : "",
    };
  }, control);
  return { ...shown, entry: hash[key] };
}

// Brings `control` to the middle of the window and waits until it stays there for a few
// frames: a lab that comes into view draws and grows (the conformal lab's gallery and tables),
// which pushes what is below it down; on a loaded machine a click measured before such a move
// misses. In the middle, too, the progress row fixed at the window's bottom does not cover it.
async function settleInView(control) {
  const locator = page.locator(`#${control}`);
  let box = null;
  for (let attempt = 0; attempt < 50; attempt++) {
    await locator.evaluate((element) => element.scrollIntoView({ block: "center" }));
    await nextFrames(page, 3);
    const again = await locator.evaluate((element) => {
      const { x, y, width, height } = element.getBoundingClientRect();
      return { x, y, width, height, inView: y >= 0 && y + height <= innerHeight };
    });
    if (box && again.inView && JSON.stringify(again) === JSON.stringify(box)) return again;
    box = again;
  }
  throw new Error(`#${control} did not stay in view`);
}

// The slider's track: where a pointer at `fraction` of its width lands.
async function trackPoint(control, fraction) {
  const box = await settleInView(control);
  return { x: box.x + fraction * box.width, y: box.y + box.height / 2 };
}

function checkMove(control, range, after, what) {
  assert.equal(after.error, "", `${control} ${what}: the page shows an error: ${after.error}`);
  assert.equal(after.inline, "", `${control} ${what}: the slider shows an error: ${after.inline}`);
  assert.ok(after.value >= range.min && after.value <= range.max, `${control} ${what}: ${after.value} outside ${range.min}–${range.max}`);
}

test("every slider's range comes from Rust, and the τ slider's holds the trained networks", async () => {
  const tau = limits.sliders.find((s) => s.control === "tau");
  assert.deepEqual([tau.min, tau.max, tau.step], [0, limits.tau_steps.length - 1, 1]);
  for (const range of limits.sliders) {
    const attributes = await page.evaluate((id) => {
      const element = document.getElementById(id);
      return [Number(element.min), Number(element.max), Number(element.step)];
    }, range.control);
    assert.deepEqual(attributes, [range.min, range.max, range.step], range.control);
  }
});

test("each slider follows a pointer, a tap and every key over its whole range", { timeout: 600_000 }, async (t) => {
  const keyOf = Object.fromEntries(limits.fields.filter((f) => f.control).map((f) => [f.control, f.key]));
  for (const range of limits.sliders) {
    const { control } = range;
    const key = keyOf[control];
    await page.evaluate((hash) => { location.hash = hash; }, ENABLING_HASH[control] ?? "");
    await nextFrames(page, 3);
    assert.equal(await page.locator(`#${control}`).isDisabled(), false, `${control} is enabled`);

    const clicked = [];
    for (const fraction of [0.1, 0.5, 0.9]) {
      const point = await trackPoint(control, fraction);
      await page.mouse.click(point.x, point.y);
      const after = await settled(control, key);
      checkMove(control, range, after, `click at ${fraction * 100}%`);
      clicked.push(after.value);
      if (control === "tau") assert.equal(after.entry, limits.tau_steps[after.value], `τ at position ${after.value}`);
    }
    // Where each click landed: past the first tenth, before the last, in order.
    const span = range.max - range.min;
    assert.ok(clicked[0] < range.min + 0.25 * span && clicked[2] > range.min + 0.75 * span, `${control}: clicks landed at ${clicked}`);
    assert.ok(clicked[0] < clicked[1] && clicked[1] < clicked[2], `${control}: clicks landed at ${clicked}`);

    const tap = await trackPoint(control, 0.2);
    await page.touchscreen.tap(tap.x, tap.y);
    const tapped = await settled(control, key);
    checkMove(control, range, tapped, "tap at 20%");
    assert.ok(Math.abs(tapped.value - clicked[2]) > 0, `${control}: a tap at 20% left it at ${tapped.value}`);

    await page.focus(`#${control}`);
    const entries = new Set();
    for (const [keyName, expected] of [["End", range.max], ["PageDown", undefined], ["PageUp", range.max], ["Home", range.min], ["ArrowRight", range.min + range.step], ["ArrowLeft", range.min], ["ArrowLeft", range.min], ["End", range.max], ["ArrowRight", range.max]]) {
      await page.keyboard.press(keyName);
      const after = await settled(control, key);
      checkMove(control, range, after, keyName);
      if (expected !== undefined) assert.ok(Math.abs(after.value - expected) < 1e-9, `${control} ${keyName}: ${after.value}, expected ${expected}`);
      else assert.ok(after.value < range.max, `${control} ${keyName} from the end stayed at ${after.value}`);
      entries.add(after.entry);
    }
    assert.ok(entries.size >= 3, `${control}: the link followed the keys (${[...entries].join(", ")})`);
    t.diagnostic(`${control}: clicks at ${clicked.join(", ")}; tap at ${tapped.value}; keys over ${range.min}–${range.max}`);
  }
});

test("a preset sets every key its line depends on and brings the figure its line names into view", { timeout: 120_000 }, async () => {
  await page.evaluate(() => { location.hash = "alpha=0.3&mondrian=1&bins=7"; });
  await nextFrames(page, 3);
  // The "Try this" list's button (the text below it has one too).
  const preset = page.locator('button.preset[data-action="aps_raw_t1"]').first();
  await preset.scrollIntoViewIfNeeded();
  await preset.click();
  const hash = await hashParams(page);
  assert.deepEqual([hash.alpha, hash.mondrian, hash.bins, hash.score, hash.randomized, hash.t], ["0.1", "0", "15", "aps", "0", "1"], JSON.stringify(hash));
  // Smooth scrolling ends within a second; the table the line names is then on screen.
  await page.waitForFunction(() => {
    const box = document.getElementById("conformal-metrics").getBoundingClientRect();
    return box.top >= 0 && box.bottom <= innerHeight;
  }, null, { timeout: 30_000, polling: 100 });
  assert.ok(await page.evaluate(() => document.getElementById("conformal-metrics").classList.contains("shown-by-preset")));
  // Switching the network back puts T at 1, whatever T the other network was fitted to.
  await page.evaluate(() => { location.hash = "model=logitnorm&t=0.07"; });
  await nextFrames(page, 3);
  await page.selectOption("#model", "ce");
  assert.equal((await hashParams(page)).t, "1");
});

// A checkbox's or a select's entry in the link, as its state puts it: absent at the default.
async function choiceEntry(control, key) {
  const hash = await hashParams(page);
  const shown = await page.evaluate((id) => {
    const element = document.getElementById(id);
    const error = document.getElementById("error");
    return {
      value: element.type === "checkbox" ? element.checked : element.value,
      error: error.hidden ? "" : error.textContent,
    };
  }, control);
  const fallback = limits.defaults[key];
  const entry = hash[key] ?? (typeof fallback === "boolean" ? (fallback ? "1" : "0") : String(fallback));
  return { ...shown, entry };
}

test("each checkbox follows a click, a tap and the space bar, and each select the arrow keys", { timeout: 600_000 }, async (t) => {
  const fields = limits.fields.filter((field) => field.control);
  const kinds = await page.evaluate((ids) => ids.map((id) => document.getElementById(id)?.type), fields.map((field) => field.control));
  const checkboxes = fields.filter((_, i) => kinds[i] === "checkbox");
  const selects = fields.filter((_, i) => kinds[i] === "select-one");
  assert.ok(checkboxes.length >= 4 && selects.length >= 5, `${checkboxes.length} checkboxes, ${selects.length} selects`);
  for (const { key, control } of checkboxes) {
    const locator = page.locator(`#${control}`);
    await settleInView(control);
    const start = await choiceEntry(control, key);
    const moves = [
      ["click", () => locator.click()],
      ["tap", () => locator.tap()],
      ["space", async () => { await locator.focus(); await page.keyboard.press("Space"); }],
    ];
    let expected = start.value;
    for (const [what, move] of moves) {
      await move();
      await nextFrames(page, 3);
      expected = !expected;
      const after = await choiceEntry(control, key);
      assert.equal(after.error, "", `${control} ${what}: the page shows an error: ${after.error}`);
      assert.equal(after.value, expected, `${control} ${what}: the box did not follow`);
      assert.equal(after.entry, expected ? "1" : "0", `${control} ${what}: the link says ${after.entry}`);
    }
    // Back to where it started.
    await locator.click();
    await nextFrames(page, 3);
    assert.equal((await choiceEntry(control, key)).value, start.value);
  }
  for (const { key, control } of selects) {
    const locator = page.locator(`#${control}`);
    await settleInView(control);
    const options = await locator.evaluate((select) => [...select.options].filter((o) => !o.disabled).map((o) => o.value));
    const start = await choiceEntry(control, key);
    // The arrow keys on the closed select step through its options, as on Windows and Linux.
    await locator.focus();
    const forward = options.indexOf(start.value) < options.length - 1;
    await page.keyboard.press(forward ? "ArrowDown" : "ArrowUp");
    await nextFrames(page, 3);
    const stepped = await choiceEntry(control, key);
    assert.equal(stepped.error, "", `${control} arrow: the page shows an error: ${stepped.error}`);
    assert.notEqual(stepped.value, start.value, `${control}: the arrow key did not move it`);
    assert.equal(stepped.entry, stepped.value, `${control} arrow: the link says ${stepped.entry}`);
    // The picker, as a pointer chooses in it, back to where it started.
    await locator.selectOption(start.value);
    await nextFrames(page, 3);
    const back = await choiceEntry(control, key);
    assert.equal(back.error, "", `${control} picker: the page shows an error: ${back.error}`);
    assert.equal(back.entry, start.value, `${control} picker: the link says ${back.entry}`);
    t.diagnostic(`${control}: ${start.value} → ${stepped.value} → ${back.value}`);
  }
});
