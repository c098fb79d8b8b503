// End-to-end tests of each figure's "Save or share" menu in headless Chromium: the PNG is the
// canvas as drawn, the SVG the same plot at the canvas's size, the CSV the numbers the figure
// draws (checked against the native CLI's), and the copied link is the page in this state; the
// footer's source-code link serves this checkout's source.
//
// Run: bash scripts/test (its last stage), or by hand after bash scripts/build-site:
//   npm ci --prefix tests/e2e && node --test tests/e2e/figures.test.mjs
// UPDATE_SCREENSHOT=1 also copies the presentation-mode screenshot to docs/presentation.png.
import assert from "node:assert/strict";
import { copyFileSync, mkdirSync, readFileSync } from "node:fs";
import { gunzipSync } from "node:zlib";
import path from "node:path";
import { after, before, test } from "node:test";

import { Native, REPO_ROOT, collectProblems, drawnCanvasData, hashParams, launchBrowser, nextFrames, openSite, waitForInference } from "./helpers.mjs";

const INFERENCE_TIMEOUT_MS = 180_000;
// The page's logits (wasm) and the CLI's (native) differ in the last f32 bits; bin means over
// hundreds of images move by far less than this (temperature.test.mjs measures it).
const TOLERANCE_BIN = 1e-6;

let site;
let browser;
let problems;
let native;
let page;

before(async () => {
  site = await openSite();
  native = new Native(site.url);
  browser = await launchBrowser();
  await browser.context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: new URL(site.url).origin });
  problems = collectProblems(browser.context);
  page = await browser.context.newPage();
  await page.goto(`${site.url}#model=ce&t=1.5&bins=10&binning=width&split=0`);
  await waitForInference(page, INFERENCE_TIMEOUT_MS);
});

after(async () => {
  await browser?.close();
  await site?.close();
  native?.close();
  // Checked once every page of the file has run: a lone test would pass when run alone.
  assert.deepEqual(problems, [], "no console error, uncaught exception or failed request");
});

// Clicks `button` of figure `id`'s menu (opened first) and returns the download's name and bytes.
async function saved(id, kind) {
  const menu = page.locator("figure", { has: page.locator(`canvas#${id}`) }).locator("details.figure-menu");
  await menu.scrollIntoViewIfNeeded();
  await nextFrames(page, 2);
  if (!(await menu.evaluate((details) => details.open))) await menu.locator("summary").click();
  const title = await page.evaluate((figure) => window.calibra.limits.figures.find((f) => f.id === figure).title, id);
  const [file] = await Promise.all([
    page.waitForEvent("download"),
    menu.getByRole("button", { name: `Download the ${title} as ${kind}` }).click(),
  ]);
  return { name: file.suggestedFilename(), bytes: readFileSync(await file.path()) };
}

// The rows of a CSV file (RFC 4180: a quoted field may hold commas and doubled quotes).
function csvRows(bytes) {
  const rows = [];
  for (const line of bytes.toString("utf8").trim().split(/\r?\n/)) {
    const fields = [];
    for (const [, quoted, plain] of line.matchAll(/(?:^|,)(?:"((?:[^"]|"")*)"|([^,]*))/g)) fields.push(quoted === undefined ? plain : quoted.replaceAll('""', '"'));
    rows.push(fields);
  }
  return rows;
}

test("the reliability diagram's CSV holds the CLI's bins at this T", { timeout: 60_000 }, async () => {
  const { name, bytes } = await saved("reliability", "CSV");
  assert.equal(name, "calibra-reliability.csv");
  const [header, ...rows] = csvRows(bytes);
  assert.deepEqual(header, ["bin_lower", "bin_upper", "count", "mean_confidence", "accuracy"]);
  const report = await native.report("ce", { temperature: 1.5, bins: 10 });
  const bins = report.after.bins;
  assert.equal(rows.length, bins.length);
  rows.forEach(([lower, upper, count, confidence, accuracy], index) => {
    const bin = bins[index];
    assert.equal(Number(lower), bin.lower);
    assert.equal(Number(upper), bin.upper);
    assert.equal(Number(count), bin.count, `bin ${index}: count`);
    assert.ok(Math.abs(Number(confidence) - bin.confidence) < TOLERANCE_BIN, `bin ${index}: confidence ${confidence} vs ${bin.confidence}`);
    assert.ok(Math.abs(Number(accuracy) - bin.accuracy) < TOLERANCE_BIN, `bin ${index}: accuracy ${accuracy} vs ${bin.accuracy}`);
  });
});

test("the cumulative differences: the CSV's curve gives the CLI's KS error and Kuiper statistic at this T (1e-6), and the chart's text states them", { timeout: 60_000 }, async () => {
  const { name, bytes } = await saved("cumulative-differences", "CSV");
  assert.equal(name, "calibra-cumulative-differences.csv");
  const [header, ...rows] = csvRows(bytes);
  assert.deepEqual(header, ["share_of_images", "confidence", "cumulative_difference"]);
  const report = await native.report("ce", { temperature: 1.5, bins: 10 });
  const curve = rows.map((row) => Number(row[2]));
  const confidences = rows.map((row) => Number(row[1]));
  assert.equal(Number(rows.at(-1)[0]), 1, "the last image ends the curve");
  for (let k = 1; k < confidences.length; k += 1) assert.ok(confidences[k - 1] <= confidences[k], `sorted by confidence at ${k}`);
  const ksError = Math.max(...curve.map(Math.abs));
  const range = Math.max(...curve) - Math.min(...curve);
  const scale = Math.sqrt(confidences.reduce((sum, c) => sum + c * (1 - c), 0)) / confidences.length;
  assert.ok(Math.abs(ksError - report.after.ks_error) < TOLERANCE_BIN, `KS error ${ksError} vs ${report.after.ks_error}`);
  assert.ok(Math.abs(range / scale - report.after.kuiper) < 1e3 * TOLERANCE_BIN, `Kuiper ${range / scale} vs ${report.after.kuiper}`);
  const summary = await page.textContent("#cumulative-differences-summary");
  assert.ok(summary.includes(`the KS error, its largest distance from 0, is ${report.after.ks_error.toFixed(4)}`), summary);
  assert.ok(summary.includes(`Kuiper's range is ${range.toFixed(4)}, ${report.after.kuiper.toFixed(1)} times`), summary);
  assert.ok(summary.includes(`on ${confidences.length.toLocaleString("en-US")} images`), summary);
});

test("the SVG is the figure at the canvas's size, the PNG the figure at twice that size", { timeout: 60_000 }, async () => {
  const size = await page.evaluate(() => {
    const canvas = document.getElementById("reliability");
    return { css: [canvas.clientWidth, canvas.clientHeight], pixels: [canvas.width, canvas.height] };
  });
  const svg = (await saved("reliability", "SVG")).bytes.toString("utf8");
  assert.ok(svg.startsWith(`<svg width="${size.css[0]}" height="${size.css[1]}"`), svg.slice(0, 80));
  const texts = [...svg.matchAll(/<text[^>]*>([^<]*)<\/text>/g)].map((match) => match[1].trim());
  for (const axis of ["confidence", "accuracy"]) assert.ok(texts.includes(axis), `no "${axis}" among ${texts.join(" | ")}`);
  const png = await saved("reliability", "PNG");
  assert.equal(png.name, "calibra-reliability.png");
  assert.deepEqual([...png.bytes.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], "PNG signature");
  // IHDR: width and height, big-endian, at bytes 16 and 20: twice the figure's size on screen,
  // for slides, whatever the screen's pixel ratio.
  assert.deepEqual([png.bytes.readUInt32BE(16), png.bytes.readUInt32BE(20)], size.css.map((side) => 2 * side));
});

test("coverage per class in the CSV is the lab's at this α and T", { timeout: 60_000 }, async () => {
  await page.locator("#conformal-lab").scrollIntoViewIfNeeded();
  await page.waitForFunction(() => window.calibra.timings.conformalDraws.length > 0, null, { timeout: 60_000 });
  const [header, ...rows] = csvRows((await saved("per-class", "CSV")).bytes);
  assert.deepEqual(header, ["class", "coverage", "target"]);
  const classes = await page.evaluate(() => window.calibra.limits.class_names);
  assert.deepEqual(rows.map((row) => row[0]), classes);
  const report = await native.report("ce", { temperature: 1.5, bins: 10, extra: ["--score", "aps", "--alpha", "0.1"] });
  rows.forEach(([, coverage, target], index) => {
    assert.equal(Number(target), 0.9);
    // Coverage is a count over each class's images: the same sets give the same count.
    assert.equal(Number(coverage), report.conformal.per_class_coverage[index], classes[index]);
  });
});

test("every figure saves as SVG and CSV once its lab has been shown", { timeout: INFERENCE_TIMEOUT_MS + 60_000 }, async () => {
  await page.click("#run-experiment");
  await page.waitForFunction(() => window.calibra.timings.experiment !== undefined, null, { timeout: 30_000 });
  // The shift lab's diagram waits for the shown severity's corrupted images to be classified.
  await page.locator("#shift-lab").scrollIntoViewIfNeeded();
  await page.waitForFunction(() => document.querySelector('[data-metric="shift_kept_coverage"]').dataset.value, null, { timeout: INFERENCE_TIMEOUT_MS, polling: 500 });
  await page.locator("#ood-lab").scrollIntoViewIfNeeded();
  await page.waitForFunction(() => window.calibra.timings.oodDraws.length > 0, null, { timeout: INFERENCE_TIMEOUT_MS, polling: 500 });
  // The rivals' figure waits for the bootstrap worker's fits.
  await page.waitForFunction(() => document.querySelector('[data-metric="rival_isotonic_ece"]')?.dataset.value, null, { timeout: INFERENCE_TIMEOUT_MS, polling: 500 });
  // The anatomy chart waits for the same worker's curves, asked for once it is on screen.
  await page.locator("#anatomy-block").scrollIntoViewIfNeeded();
  await page.waitForFunction(() => document.getElementById("anatomy-summary").textContent.includes("NLL is least"), null, { timeout: INFERENCE_TIMEOUT_MS, polling: 500 });
  const figures = await page.evaluate(() => window.calibra.limits.figures);
  assert.equal(figures.length, await page.locator("main figure canvas").count(), "one entry per figure canvas");
  for (const figure of figures) {
    const svg = await saved(figure.id, "SVG");
    assert.equal(svg.name, `${figure.file_stem}.svg`);
    assert.match(svg.bytes.toString("utf8"), /^<svg width="\d+" height="\d+"/, figure.id);
    const [header, ...rows] = csvRows((await saved(figure.id, "CSV")).bytes);
    assert.ok(header.length >= 2 && rows.length > 0, `${figure.id}: ${header} and ${rows.length} rows`);
    for (const row of rows) assert.equal(row.length, header.length, `${figure.id}: a ragged row ${row}`);
  }
  assert.ok(await page.locator("#error").isHidden(), await page.textContent("#error"));
});

test("'Copy link to this view' copies the address of this state", { timeout: 30_000 }, async () => {
  const menu = page.locator("figure", { has: page.locator("canvas#reliability") }).locator("details.figure-menu");
  await menu.scrollIntoViewIfNeeded();
  if (!(await menu.evaluate((details) => details.open))) await menu.locator("summary").click();
  await menu.getByRole("button", { name: "Copy link to this view" }).click();
  await page.waitForFunction(() => document.querySelector(".figure-menu-status").textContent === "Link copied.", null, { timeout: 30_000 });
  const copied = await page.evaluate(() => navigator.clipboard.readText());
  assert.equal(copied, await page.evaluate(() => location.href));
  // The fields the reader changed, and no default (model=ce, split=0) lengthening the link.
  assert.match(copied, /#t=1\.5&bins=10$/);
});

test("'Copy embed code' copies an <iframe> of the embed view of that figure in this state", { timeout: 30_000 }, async () => {
  const menu = page.locator("figure", { has: page.locator("canvas#sweep") }).locator("details.figure-menu");
  await menu.scrollIntoViewIfNeeded();
  if (!(await menu.evaluate((details) => details.open))) await menu.locator("summary").click();
  await menu.getByRole("button", { name: "Copy embed code for the coverage and set size over α" }).click();
  const code = await page.evaluate(() => navigator.clipboard.readText());
  const src = code.match(/^<iframe src="([^"]+)" width="720" height="(\d+)" title="calibra: coverage and set size over α"/);
  assert.ok(src, code);
  const hash = new URLSearchParams(new URL(src[1]).hash.slice(1));
  assert.equal(hash.get("embed"), "sweep");
  assert.equal(hash.get("t"), "1.5");
  assert.equal(new URL(src[1]).origin + new URL(src[1]).pathname, new URL(site.url).href);

  // Pasted into a blog post, the code gives a frame exactly as tall as the embed view: nothing
  // cut off, no blank band under it.
  const host = await browser.context.newPage();
  try {
    await host.setViewportSize({ width: 800, height: 700 });
    await host.setContent(`<!doctype html><body style="margin: 0">${code}</body>`);
    const frame = await (await host.waitForSelector("iframe[data-calibra-embed]")).contentFrame();
    // The frame's document may still be in its head (no body yet: the workers' script there
    // is parser-blocking) when the wait first looks.
    await frame.waitForFunction(() => document.body?.classList.contains("embed") && document.body.dataset.inference === "done", null, { timeout: INFERENCE_TIMEOUT_MS });
    await nextFrames(host, 3);
    const content = await frame.evaluate(() => document.documentElement.scrollHeight);
    await host.waitForFunction((height) => Number(document.querySelector("iframe[data-calibra-embed]").height) === height, content, { timeout: 60_000 });
  } finally {
    await host.close();
  }
});

// A figure's embed view: only its canvas shows, drawn, with its lab's slider; the rest of the
// article is not displayed, and the link back opens the article in the same state.
async function checkEmbed(view, figure) {
  const layout = await view.evaluate((id) => {
    const displayed = (element) => element.getClientRects().length > 0;
    const canvases = [...document.querySelectorAll("main canvas")].filter((canvas) => canvas.closest("figure")).filter(displayed).map((canvas) => canvas.id);
    const canvas = document.getElementById(id);
    const bar = canvas.closest(".lab").querySelector(".slider-bar");
    return {
      canvases,
      width: canvas.getBoundingClientRect().width,
      viewport: document.documentElement.clientWidth,
      bar: displayed(bar),
      masthead: displayed(document.querySelector(".masthead")),
      headings: [...document.querySelectorAll("main h2, main h3")].filter(displayed).length,
      back: document.getElementById("embed-article-link").href,
      backShown: displayed(document.getElementById("embed-article-link")),
    };
  }, figure);
  assert.deepEqual(layout.canvases, [figure], `${figure}: the canvases shown`);
  assert.ok(layout.bar && layout.backShown && !layout.masthead && layout.headings === 0, `${figure}: ${JSON.stringify(layout)}`);
  assert.ok(layout.width > 0.9 * layout.viewport - 60 && layout.width <= layout.viewport, `${figure}: ${layout.width} px wide in ${layout.viewport}`);
  // The article's view: embed at its default, so left out of the link.
  const back = new URLSearchParams(new URL(layout.back).hash.slice(1));
  assert.equal(back.get("embed"), null);
}

test("every figure's embed view shows that figure alone, drawn, with its slider", { timeout: INFERENCE_TIMEOUT_MS + 120_000 }, async () => {
  const figures = await page.evaluate(() => window.calibra.limits.figures);
  const view = await browser.context.newPage();
  await view.setViewportSize({ width: 720, height: 640 });
  for (const figure of figures) {
    // The logits come from this browser's cache after the first page's inference.
    await view.goto(`${site.url}#model=ce&t=1.5&embed=${figure.id}`);
    await view.waitForFunction(() => document.body.dataset.inference === "done", null, { timeout: INFERENCE_TIMEOUT_MS });
    if (figure.id === "experiment") await view.click("#run-experiment");
    await drawnCanvasData(view, figure.id, INFERENCE_TIMEOUT_MS);
    await checkEmbed(view, figure.id);
  }
  // The embed's own slider redraws its figure.
  await view.goto(`${site.url}#model=ce&t=1.5&embed=reliability`);
  await view.waitForFunction(() => document.body.dataset.inference === "done", null, { timeout: INFERENCE_TIMEOUT_MS });
  await nextFrames(view, 3);
  const before = await view.evaluate(() => document.getElementById("reliability").toDataURL());
  await view.evaluate(() => {
    const input = document.getElementById("temperature");
    input.value = "100";
    input.dispatchEvent(new Event("input"));
  });
  await view.waitForFunction((old) => document.getElementById("reliability").toDataURL() !== old, before, { timeout: 60_000, polling: 250 });
  assert.notEqual((await hashParams(view)).t, "1.5");
  await view.close();
});

test("presentation mode: one figure a screen in large type, keys to move, Esc to leave", { timeout: 60_000 }, async () => {
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.evaluate(() => window.scrollTo(0, 0));
  // Each method note ("More"): where it stands in the article, and whether it is open.
  const notesInArticle = () => page.evaluate(() => [...document.querySelectorAll("details.more")].map((notes) => ({
    open: notes.open,
    after: notes.previousElementSibling?.outerHTML.slice(0, 80) ?? null,
  })));
  // The notes shown open right under the presented figure.
  const presentedNotes = () => page.evaluate(() => {
    const figure = [...document.querySelectorAll("main figure")].find((f) => f.getClientRects().length > 0);
    const shown = [...document.querySelectorAll("details.more")].filter((notes) => notes.getClientRects().length > 0);
    return shown.map((notes) => ({ summary: notes.querySelector("summary").textContent, open: notes.open, underFigure: figure.nextElementSibling === notes }));
  });
  const article = await notesInArticle();
  assert.ok(article.length >= 5 && article.every((notes) => !notes.open), JSON.stringify(article));
  await page.getByRole("button", { name: "Present the figures" }).click();
  const shownFigure = () => page.evaluate(() => [...document.querySelectorAll("main figure canvas")].filter((c) => c.getClientRects().length > 0).map((c) => c.id));
  const position = () => page.textContent("#presentation-position");
  await page.waitForFunction(() => document.body.classList.contains("present"));
  const [count, last] = await page.evaluate(() => [window.calibra.limits.figures.length, window.calibra.limits.figures.at(-1).id]);
  assert.deepEqual(await shownFigure(), ["reliability"]);
  assert.equal(await position(), `Figure 1 of ${count}: reliability diagram`);
  assert.equal((await hashParams(page)).present, "1");
  // The figure's method notes open under it in presentation mode.
  assert.deepEqual(await presentedNotes(), [{ summary: "More: how to read these numbers and their intervals", open: true, underFigure: true }]);
  // Large type: the root font is larger than the article's 17 px.
  assert.equal(await page.evaluate(() => getComputedStyle(document.documentElement).fontSize), "22px");
  await nextFrames(page, 3);
  mkdirSync(path.join(REPO_ROOT, "tests/e2e/screenshots"), { recursive: true });
  const shot = path.join(REPO_ROOT, "tests/e2e/screenshots/presentation.png");
  await page.screenshot({ path: shot });
  if (process.env.UPDATE_SCREENSHOT === "1") copyFileSync(shot, path.join(REPO_ROOT, "docs/presentation.png"));
  await page.keyboard.press("ArrowRight");
  await page.waitForFunction(() => document.getElementById("presentation-position").textContent.startsWith("Figure 2 "));
  assert.deepEqual(await shownFigure(), ["histogram"]);
  assert.equal((await presentedNotes()).length, 1);
  // A figure without notes shows none; the conformal sweep shows how each score builds its set.
  await page.keyboard.press("ArrowRight");
  await page.waitForFunction(() => document.getElementById("presentation-position").textContent.startsWith("Figure 3 "));
  assert.deepEqual(await presentedNotes(), []);
  const presentFigure = (id) => page.evaluate((figure) => {
    const params = new URLSearchParams(location.hash.slice(1));
    params.set("embed", figure);
    location.hash = params.toString();
  }, id);
  await presentFigure("sweep");
  await page.waitForFunction(() => document.getElementById("presentation-position").textContent.includes("over α"));
  assert.deepEqual(await presentedNotes(), [{ summary: "More: how each score builds its set, and why T moves it", open: true, underFigure: true }]);
  await presentFigure("histogram");
  await page.waitForFunction(() => document.getElementById("presentation-position").textContent.startsWith("Figure 2 "));
  await page.keyboard.press("ArrowLeft");
  await page.keyboard.press("ArrowLeft");
  await page.waitForFunction((final) => document.getElementById("presentation-position").textContent.startsWith(`Figure ${final} `), count);
  assert.deepEqual(await shownFigure(), [last]);
  await page.keyboard.press("PageDown");
  await page.waitForFunction(() => document.getElementById("presentation-position").textContent.startsWith("Figure 1 "));
  // The slider keeps its arrows: T moves, the figure stays.
  const t = await page.inputValue("#temperature");
  await page.focus("#temperature");
  await page.keyboard.press("ArrowRight");
  assert.equal(Number(await page.inputValue("#temperature")), Number(t) + 1);
  assert.equal(await position(), `Figure 1 of ${count}: reliability diagram`);
  await page.evaluate(() => document.activeElement.blur());
  await page.keyboard.press("ArrowLeft");
  await page.waitForFunction((final) => document.getElementById("presentation-position").textContent.startsWith(`Figure ${final} `), count);
  await page.keyboard.press("Escape");
  await page.waitForFunction(() => !document.body.classList.contains("present") && !document.body.classList.contains("embed"));
  assert.ok(await page.locator(".masthead").isVisible());
  // Back in the article at the figure presented last, not at its top.
  const [top, bottom, height] = await page.evaluate((id) => {
    const box = document.getElementById(id).getBoundingClientRect();
    return [box.top, box.bottom, innerHeight];
  }, last);
  assert.ok(top < height && bottom > 0, `the last figure, #${last}, at ${top}–${bottom} of ${height} px after Escape`);
  // The notes are back in their places in the article, closed.
  assert.deepEqual(await notesInArticle(), article);
  const after = await hashParams(page);
  assert.equal(after.present, "0");
  assert.equal(after.embed, "none");
  await page.setViewportSize({ width: 1280, height: 900 });
});

// The entries of a gzipped tar archive, by name (GNU tar's long names included): their bytes.
function tarEntries(gzipped) {
  const bytes = gunzipSync(gzipped);
  const entries = new Map();
  let longName = null;
  for (let at = 0; at + 512 <= bytes.length; ) {
    const header = bytes.subarray(at, at + 512);
    if (header.every((b) => b === 0)) break;
    const field = (from, length) => header.subarray(from, from + length).toString("latin1").replace(/\0.*$/s, "");
    const size = parseInt(field(124, 12).trim(), 8);
    const type = field(156, 1);
    const data = bytes.subarray(at + 512, at + 512 + size);
    const prefix = field(345, 155);
    const name = longName ?? (prefix ? `${prefix}/${field(0, 100)}` : field(0, 100));
    longName = null;
    if (type === "L") longName = data.toString("utf8").replace(/\0.*$/s, "");
    else if (type === "0" || type === "") entries.set(name, data);
    at += 512 + Math.ceil(size / 512) * 512;
  }
  return entries;
}

test("'Copy link to this view' right after two quick slider moves copies the second's T, whose hash was still to be written", { timeout: 30_000 }, async () => {
  const menu = page.locator("figure", { has: page.locator("canvas#reliability") }).locator("details.figure-menu");
  await menu.scrollIntoViewIfNeeded();
  if (!(await menu.evaluate((details) => details.open))) await menu.locator("summary").click();
  // Both moves and the click in one task: the page writes the hash at most every 200 ms, so the
  // second move's waits, and the copied link must hold it all the same.
  const moved = await menu.evaluate((details) => {
    const slider = document.getElementById("temperature");
    for (const position of [300, 301]) {
      slider.value = String(position);
      slider.dispatchEvent(new Event("input", { bubbles: true }));
    }
    const pending = window.calibra.hashPending;
    details.querySelector(".figure-menu-status").textContent = "";
    [...details.querySelectorAll("button")].find((button) => button.textContent === "Copy link to this view").click();
    return { pending, t: window.calibra.state.t };
  });
  assert.ok(moved.pending, "the second move's hash was waiting when the link was copied");
  await page.waitForFunction(() => [...document.querySelectorAll(".figure-menu-status")].some((status) => status.textContent === "Link copied."), null, { timeout: 30_000 });
  const copied = await page.evaluate(() => navigator.clipboard.readText());
  assert.equal(Number(new URLSearchParams(new URL(copied).hash.slice(1)).get("t")), moved.t);
});

test("the footer's source-code link downloads this checkout's source, without weights or images", { timeout: 60_000 }, async () => {
  const link = page.locator("#source-code a");
  const href = await link.evaluate((a) => a.href);
  const response = await fetch(href);
  assert.equal(response.status, 200, `${href} answers`);
  const entries = tarEntries(Buffer.from(await response.arrayBuffer()));
  for (const file of ["src/lib.rs", "www/index.html", "Cargo.toml", "README.md", "docs/definitions.md"]) {
    const packed = entries.get(`calibra/${file}`);
    assert.ok(packed, `the archive holds calibra/${file}`);
    assert.ok(packed.equals(readFileSync(path.join(REPO_ROOT, file))), `calibra/${file} is the checkout's ${file}`);
  }
  const names = [...entries.keys()];
  assert.deepEqual(names.filter((name) => !name.startsWith("calibra/")), [], "every entry is under calibra/");
  assert.deepEqual(names.filter((name) => /\.safetensors$|^calibra\/assets\/(fashion-mnist|mnist-ood-)/.test(name)), [], "no weights or images");
});
