// Accessibility of the page in headless Chromium: once every lab has drawn and a gallery
// explanation is open, axe-core finds no serious or critical violation and the page does not
// scroll sideways, at 1280 px and 390 px; the first screen holds the temperature slider and the
// reliability diagram, and nothing moves when loading ends; the sliders announce the value they
// show; a focused control is never left under a stuck slider bar; every chart has a text
// alternative that states its main numbers.
//
// One browser and one page for the file: the cross-entropy inference runs once.
//
// Run: bash scripts/test (its last stage), or by hand after bash scripts/build-site:
//   npm ci --prefix tests/e2e && node --test tests/e2e/accessibility.test.mjs
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { after, before, test } from "node:test";

import { collectProblems, launchBrowser, nextFrames, openSite, scrollThrough, waitForInference } from "./helpers.mjs";

const INFERENCE_TIMEOUT_MS = 180_000;
// axe-core's impacts are minor, moderate, serious and critical: these two fail the test.
const BLOCKING_IMPACTS = ["serious", "critical"];
const VIEWPORTS = { desktop: { width: 1280, height: 900 }, phone: { width: 390, height: 844 } };
const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

let site;
let browser;
let problems;
let page;
let labWhileLoading;
let labLoaded;

before(async () => {
  site = await openSite();
  browser = await launchBrowser({ viewport: VIEWPORTS.desktop });
  problems = collectProblems(browser.context);
  page = browser.context.pages()[0] ?? (await browser.context.newPage());
  await page.goto(site.url);
  // Where the first lab starts while the images stream in (first chart drawn), and after.
  // With the first screen's slider and reliability diagram: where they are in the window.
  const labTop = () => page.evaluate(() => {
    const box = (id) => {
      const { top, bottom } = document.getElementById(id).getBoundingClientRect();
      return { top, bottom };
    };
    return {
      top: document.getElementById("temperature-lab").getBoundingClientRect().top + scrollY,
      scrollY,
      windowHeight: innerHeight,
      slider: box("temperature"),
      diagram: box("reliability"),
      inference: document.body.dataset.inference,
    };
  });
  await page.waitForFunction(() => (window.calibra?.timings.firstChart ?? null) !== null, null, { timeout: INFERENCE_TIMEOUT_MS });
  labWhileLoading = await labTop();
  await waitForInference(page, INFERENCE_TIMEOUT_MS);
  labLoaded = await labTop();
});

after(async () => {
  await browser?.close();
  await site?.close();
  // Checked once every page of the file has run: a lone test would pass when run alone.
  assert.deepEqual(problems, [], "no console error, uncaught exception or failed request");
});

// Every lab drawn, the gallery filled and one image's explanation open: the page's fullest state.
async function showEverything() {
  await scrollThrough(page);
  await page.locator("#shift-lab").scrollIntoViewIfNeeded();
  await page.waitForFunction(() => window.calibra.timings.shiftDraws.length > 0, null, { timeout: INFERENCE_TIMEOUT_MS, polling: 500 });
  await page.locator("#ood-lab").scrollIntoViewIfNeeded();
  await page.waitForFunction(() => window.calibra.timings.oodDraws.length > 0, null, { timeout: INFERENCE_TIMEOUT_MS, polling: 500 });
  const tile = page.locator("#gallery .tile").first();
  await tile.scrollIntoViewIfNeeded();
  await tile.click();
  await page.locator("#explanation table").waitFor({ state: "visible" });
  await nextFrames(page, 2);
}

// axe-core on the whole document: every violation as { id, impact, help, nodes }, each node its
// selector and axe's summary of what is wrong with it.
async function axeViolations() {
  // Evaluated through the DevTools protocol, which the page's Content-Security-Policy (no inline
  // scripts) does not govern.
  if (!(await page.evaluate(() => "axe" in window))) await page.evaluate(AXE_SOURCE);
  return page.evaluate(async () => {
    const results = await window.axe.run(document, { resultTypes: ["violations"] });
    return results.violations.map(({ id, impact, help, nodes }) => ({
      id,
      impact,
      help,
      nodes: nodes.map((node) => `${node.target.join(" ")}: ${node.failureSummary.replace(/\s+/g, " ")}`),
    }));
  });
}

// One violation, readable: id, impact and help, then each node on its own line.
const describe = ({ id, impact, help, nodes }) => `${id} (${impact}): ${help}\n    ${nodes.join("\n    ")}`;

for (const [name, viewport] of Object.entries(VIEWPORTS)) {
  test(`axe-core finds no serious or critical violation, and the page does not scroll sideways, at ${viewport.width}×${viewport.height} (${name})`, { timeout: 120_000 }, async (t) => {
    await page.setViewportSize(viewport);
    await showEverything();
    const violations = await axeViolations();
    for (const line of violations.map(describe).join("\n").split("\n")) if (line) t.diagnostic(line);
    const blocking = violations.filter((violation) => BLOCKING_IMPACTS.includes(violation.impact));
    assert.equal(blocking.length, 0, `axe-core found serious or critical violations:\n  ${blocking.map(describe).join("\n  ")}`);
    // Content wider than the window (the explanation's table on a phone) scrolls in its own box.
    const width = await page.evaluate(() => ({ page: document.documentElement.scrollWidth, window: document.documentElement.clientWidth }));
    assert.ok(width.page <= width.window, `the page is ${width.page} px wide in a ${width.window} px window`);
  });
}

// Each slider, its name (a screen reader says it, then the value: a name never ends in a dangling
// "=" waiting for the value) and the words it says for the value, made from the text shown
// beside it (the outputs, by id); `score` is the score that enables a slider the others leave
// disabled.
const SLIDERS = [
  { id: "temperature", name: "Temperature T", spoken: (shown) => `T = ${shown["temperature-value"]}` },
  { id: "bins", name: "Bins", spoken: (shown) => `${shown["bins-value"]} bins` },
  { id: "alpha", name: "Miscoverage α", spoken: (shown) => `α = ${shown["alpha-value"]}, target coverage ${shown["target-value"]}` },
  { id: "raps-lambda", name: "RAPS λ", score: "raps", spoken: (shown) => `λ = ${shown["raps-lambda-value"]}` },
  { id: "k-reg", name: "RAPS k_reg", score: "raps", spoken: (shown) => `k reg = ${shown["k-reg-value"]}` },
  { id: "saps-lambda", name: "SAPS λ", score: "saps", spoken: (shown) => `λ = ${shown["saps-lambda-value"]}` },
  { id: "severity", name: "Severity", spoken: (shown) => `severity ${shown["severity-value"]}` },
  { id: "tau", name: "Network", spoken: (shown) => shown["tau-value"] },
  { id: "pac-delta", name: "PAC δ", spoken: (shown) => `δ = ${shown["pac-delta-value"]}` },
  { id: "selective-risk", name: "Risk level", spoken: (shown) => `risk level ${shown["selective-risk-value"]}` },
  { id: "aci-gamma", name: "Step gamma", spoken: (shown) => `γ = ${shown["aci-gamma-value"]}: α_t moves by γ times (α − miss) after each image` },
  { id: "ood-fdr", name: "FDR level", spoken: (shown) => `FDR level ${shown["ood-fdr-value"]}` },
  { id: "ood-share", name: "OOD share", spoken: (shown) => `OOD share ${shown["ood-share-value"]}` },
];
const OUTPUTS = ["temperature-value", "bins-value", "alpha-value", "target-value", "raps-lambda-value", "k-reg-value", "saps-lambda-value", "severity-value", "tau-value", "pac-delta-value", "selective-risk-value", "aci-gamma-value", "ood-fdr-value", "ood-share-value"];

// What the page shows beside its sliders ({ output id: text }) and what each slider says.
const sliderTexts = () => page.evaluate((outputs) => ({
  shown: Object.fromEntries(outputs.map((id) => [id, document.getElementById(id).textContent])),
  spoken: Object.fromEntries([...document.querySelectorAll('input[type="range"]')].map((input) => [input.id, input.getAttribute("aria-valuetext")])),
}), OUTPUTS);

test("every slider's aria-valuetext says the value shown beside it, before and after a key press", { timeout: 60_000 }, async () => {
  await page.setViewportSize(VIEWPORTS.desktop);
  const start = await sliderTexts();
  assert.deepEqual(Object.keys(start.spoken).sort(), SLIDERS.map((slider) => slider.id).sort(), "every range input is checked here");
  for (const slider of SLIDERS) assert.equal(start.spoken[slider.id], slider.spoken(start.shown), `#${slider.id} at load`);
  for (const slider of SLIDERS) {
    const named = page.getByRole("slider", { name: slider.name, exact: true, includeHidden: true });
    assert.equal(await named.getAttribute("id"), slider.id, `#${slider.id} is named "${slider.name}"`);
  }

  const initialScore = await page.inputValue("#score");
  for (const slider of SLIDERS) {
    if (slider.score && (await page.inputValue("#score")) !== slider.score) await page.selectOption("#score", slider.score);
    // A score's own sliders are enabled by the frame the score change asks for (a readout
    // patch, on their fieldset): a key pressed on a slider still disabled moves nothing. The
    // input's own `disabled` is false inside a disabled fieldset; `:disabled` matches either.
    await page.waitForFunction((id) => !document.getElementById(id).matches(":disabled"), slider.id, { timeout: 60_000 });
    const before = await sliderTexts();
    await page.focus(`#${slider.id}`);
    const atMaximum = await page.$eval(`#${slider.id}`, (input) => input.value === input.max);
    await page.keyboard.press(atMaximum ? "ArrowLeft" : "ArrowRight");
    // The page writes a move's readouts and the slider's spoken value in the frame the move
    // asks for (index.js apply), not in the key's own event.
    await nextFrames(page, 1);
    const after = await sliderTexts();
    assert.notEqual(after.spoken[slider.id], before.spoken[slider.id], `#${slider.id}: the key press moved the slider`);
    assert.equal(after.spoken[slider.id], slider.spoken(after.shown), `#${slider.id} after a key press`);
  }
  await page.selectOption("#score", initialScore);
});

// The focusable controls after each lab's slider bar, one of each kind (the first of a selector).
const FOCUS_TARGETS = ["#model", "#new-split", "#estimator-case input", "#score", "button.preset", "#repetitions", "#gallery-filter", "#gallery .tile", "#shift-corruption"];

for (const [name, viewport] of Object.entries(VIEWPORTS)) {
  test(`a control that takes focus under a stuck slider bar scrolls clear of it at ${viewport.width}×${viewport.height} (${name})`, { timeout: 60_000 }, async () => {
    await page.setViewportSize(viewport);
    await nextFrames(page, 2);
    for (const selector of FOCUS_TARGETS) {
      // The control's top under the middle of its lab's bar, which is stuck to the top there.
      const hidden = await page.evaluate((selector) => {
        document.activeElement?.blur();
        const element = document.querySelector(selector);
        const bar = element.closest(".lab").querySelector(".slider-bar");
        window.scrollTo(0, element.getBoundingClientRect().top + window.scrollY - bar.offsetHeight / 2);
        return { top: element.getBoundingClientRect().top, barBottom: bar.getBoundingClientRect().bottom };
      }, selector);
      assert.ok(hidden.top < hidden.barBottom, `${selector} starts under the bar (top ${hidden.top}, bar bottom ${hidden.barBottom})`);
      await page.focus(selector);
      await nextFrames(page, 2);
      const shown = await page.evaluate((selector) => {
        const element = document.querySelector(selector);
        const bar = element.closest(".lab").querySelector(".slider-bar");
        const box = element.getBoundingClientRect();
        return { top: box.top, bottom: box.bottom, barBottom: bar.getBoundingClientRect().bottom, focused: document.activeElement === element };
      }, selector);
      assert.ok(shown.focused, `${selector} has focus`);
      assert.ok(shown.top >= shown.barBottom && shown.bottom <= viewport.height,
        `${selector} focused lies between the bar and the bottom of the window (top ${shown.top}, bottom ${shown.bottom}, bar bottom ${shown.barBottom})`);
    }
  });
}

// The accessible names Chromium computes for the elements that match `selector`, in order.
async function accessibleNames(selector) {
  const session = await page.context().newCDPSession(page);
  try {
    const { root } = await session.send("DOM.getDocument");
    const { nodeIds } = await session.send("DOM.querySelectorAll", { nodeId: root.nodeId, selector });
    const names = [];
    for (const nodeId of nodeIds) {
      const { nodes } = await session.send("Accessibility.getPartialAXTree", { nodeId, fetchRelatives: false });
      names.push(nodes[0].name?.value ?? "");
    }
    return names;
  } finally {
    await session.detach();
  }
}

const CHARTS = ["reliability", "histogram", "smooth-reliability", "corp-reliability", "cumulative-differences", "classwise", "rivals-reliability", "temperature-anatomy", "set-sizes", "per-class", "stratified", "sweep", "experiment", "risk-coverage", "shift-reliability", "shift-severity", "aci-stream", "ood-histogram", "ood-roc", "ood-norms", "tau-chart", "ood-pvalues"];

test("every chart has a name and a description that its figure's caption gives; the gallery is not a live region", { timeout: 30_000 }, async () => {
  const charts = await page.$$eval("figure canvas", (canvases) => canvases.map((canvas) => {
    const described = (canvas.getAttribute("aria-describedby") ?? "").split(/\s+/).filter(Boolean).map((id) => document.getElementById(id));
    return {
      id: canvas.id,
      role: canvas.getAttribute("role"),
      label: canvas.getAttribute("aria-label") ?? "",
      missing: described.filter((element) => element === null).length,
      captioned: described.some((element) => element?.tagName === "FIGCAPTION" && element.closest("figure") === canvas.closest("figure")),
      description: described.map((element) => element?.textContent ?? "").join(" ").trim(),
    };
  }));
  assert.deepEqual(charts.map((chart) => chart.id), CHARTS, "every chart is checked here");
  for (const chart of charts) {
    assert.equal(chart.role, "img", `#${chart.id} is an image to assistive technology`);
    assert.ok(chart.label.length > 0, `#${chart.id} has a name`);
    assert.equal(chart.missing, 0, `#${chart.id}: every aria-describedby id exists`);
    assert.ok(chart.captioned && chart.description.length > 0, `#${chart.id} is described by its figure's caption`);
  }

  const live = await page.evaluate(() => ({
    gallery: document.getElementById("gallery").closest("[aria-live]")?.id ?? null,
    inside: document.querySelectorAll("#gallery [aria-live]").length,
    count: document.getElementById("gallery-count").getAttribute("aria-live"),
  }));
  assert.deepEqual(live, { gallery: null, inside: 0, count: "polite" }, "only the gallery's count line is announced, politely");
  // A tile is named (as Chromium computes it) by its visible text followed by its set, read as a
  // sentence; the chips that show the set are hidden from screen readers. Chromium puts a space
  // before the visually hidden part (it is positioned out of flow), which is not read: dropped.
  const tiles = await page.$$eval("#gallery .tile", (buttons) => buttons.map((button) => ({
    shown: button.querySelector(".truth").firstChild.textContent,
    chipsHidden: button.querySelector(".chips").getAttribute("aria-hidden"),
    interval: button.querySelector(".venn-abers")?.textContent ?? "",
    intervalHidden: button.querySelector(".venn-abers")?.getAttribute("aria-hidden"),
  })));
  const shownInterval = tiles.map(({ interval }) => interval);
  assert.ok(tiles.length > 0, "the gallery has tiles");
  const names = (await accessibleNames("#gallery .tile")).map((name) => name.replace(/\s+;/g, ";"));
  tiles.forEach(({ shown, chipsHidden }, i) => {
    assert.ok(names[i].startsWith(`${shown}; set: `), `tile ${i} is named "${names[i]}", which starts with its visible text "${shown}"`);
    // The gallery shows evaluation images here (its default filter): each says its Venn–Abers
    // interval, as the card shows it. (Chromium adds a missed chip's title at the end.)
    const match = /^#\d+: [^;]+; set: [^;]+; (covered|missed: [^;]+); Venn–Abers interval ([01]\.\d+) to ([01]\.\d+)( true label, not in the set)?$/.exec(names[i]);
    assert.ok(match, `tile ${i} is named "${names[i]}"`);
    assert.equal(`Venn–Abers: ${match[2]}–${match[3]}`, shownInterval[i], `tile ${i} says the interval it shows`);
    assert.equal(chipsHidden, "true");
  });
  assert.ok(tiles.every(({ intervalHidden }) => intervalHidden === "true"), "the shown interval is hidden from screen readers, which read it in the name");
});

// The parts of a chart's description that state its numbers: the sentences at the end of its
// caption (`…-summary`, `…-sentence`) and any other element that describes it (the per-class
// chart's values). The experiment's caption gets its numbers from a run, which this file does
// not make: it is left out.
const STATED = CHARTS.filter((id) => id !== "experiment");

test("each chart's description states its main numbers once its lab has drawn", { timeout: 600_000 }, async () => {
  await page.setViewportSize(VIEWPORTS.desktop);
  const stated = (id) => page.evaluate((chartId) => {
    const canvas = document.getElementById(chartId);
    return canvas.getAttribute("aria-describedby").split(/\s+/).map((describer) => document.getElementById(describer))
      .flatMap((element) => (element.tagName === "FIGCAPTION" ? [...element.querySelectorAll('[id$="-summary"], [id$="-sentence"]')] : [element]))
      .map((element) => element.textContent.trim())
      .join(" ")
      .trim();
  }, id);
  for (const id of STATED) {
    await page.locator(`#${id}`).scrollIntoViewIfNeeded();
    // Polled: a lab draws once on screen, the rivals once a worker has fitted them, the shift
    // lab once the shown severity's corrupted images are classified.
    const deadline = Date.now() + INFERENCE_TIMEOUT_MS;
    let text = await stated(id);
    while (!/\d/.test(text) && Date.now() < deadline) {
      await page.waitForTimeout(500);
      text = await stated(id);
    }
    assert.match(text, /\d/, `#${id}'s description states a number: "${text}"`);
  }
  // The numbers are the readouts' own: the rivals' ECEs are the table's, the norms the table's.
  const rivals = await page.evaluate(() => ({
    summary: document.getElementById("rivals-reliability-summary").textContent,
    table: [...document.querySelectorAll('#rivals [data-metric$="_ece"]:not([data-metric$="calibration_ece"])')].map((cell) => cell.textContent),
  }));
  assert.ok(rivals.table.length > 0, "the rivals table holds ECEs");
  for (const ece of rivals.table) assert.ok(rivals.summary.includes(ece), `the rivals' summary "${rivals.summary}" gives the table's ECE ${ece}`);
  const norms = await page.evaluate(() => ({
    summary: document.getElementById("ood-norms-summary").textContent,
    table: ["logit_norm_id", "logit_norm_ood"].map((name) => document.querySelector(`[data-metric="${name}"]`).textContent),
  }));
  for (const mean of norms.table) assert.ok(norms.summary.includes(mean), `the norms' summary "${norms.summary}" gives the table's mean ${mean}`);
});

test("every definition opens from the keyboard and by a click or tap, and none is left to a hover tooltip", { timeout: 60_000 }, async () => {
  // A paper link's title names the paper its text cites; it defines no term.
  assert.equal(await page.locator("th[title], p [title]:not(a[href])").count(), 0, "no term is defined only in a title attribute");
  const terms = await page.$$eval("button.term", (buttons) => buttons.map((b) => ({ target: b.getAttribute("popovertarget"), text: b.textContent })));
  assert.ok(terms.length >= 13, `${terms.length} defined terms`);
  const open = (id) => page.evaluate((i) => document.getElementById(i).matches(":popover-open"), id);
  // A term may be defined once and named by several buttons (ECE in two tables): each is tried.
  for (const [index, { target, text }] of terms.entries()) {
    const button = page.locator("button.term").nth(index);
    await button.focus();
    await page.keyboard.press("Enter");
    assert.equal(await open(target), true, `Enter on "${text}" opens its definition`);
    const definition = await page.textContent(`#${target}`);
    assert.ok(definition.startsWith(`${text}: `) && definition.length > text.length + 10, `"${text}" is defined: "${definition}"`);
    await page.keyboard.press("Escape");
    assert.equal(await open(target), false, `Escape closes "${text}"`);
    await button.click();
    assert.equal(await open(target), true, `a click on "${text}" opens its definition`);
    await page.keyboard.press("Escape");
  }
});

test("the page does not jump when loading ends: the first lab starts where it started while the images streamed in", () => {
  assert.equal(labWhileLoading.inference, "running", "measured while inference ran");
  assert.equal(labLoaded.inference, "done");
  assert.equal(labLoaded.top, labWhileLoading.top);
});

test("the first screen (1280×900) shows the temperature slider and the whole reliability diagram, while loading and after", () => {
  for (const [when, lab] of [["while loading", labWhileLoading], ["after loading", labLoaded]]) {
    assert.equal(lab.scrollY, 0, `${when}: measured at the top of the page`);
    assert.equal(lab.windowHeight, VIEWPORTS.desktop.height);
    for (const part of ["slider", "diagram"]) {
      const { top, bottom } = lab[part];
      assert.ok(top >= 0 && bottom <= lab.windowHeight, `${when}: the ${part} spans ${top}–${bottom} px of a ${lab.windowHeight} px window`);
    }
  }
  assert.deepEqual(labLoaded.diagram, labWhileLoading.diagram, "the diagram does not move when loading ends");
});
