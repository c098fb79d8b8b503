// @ts-check
// The page's controls: each slider's range and each control's and button's event, sent to
// Rust's Page, which validates them and returns the next state; presentation mode's keys; the
// coverage experiment's button.
import { $, applyPatches, clearControlError, showControlError, showError } from "./dom.js";

/** @typedef {ReturnType<typeof import("./pkg/calibra.js").limits>} Limits */
/** @typedef {{ state: { present: boolean }, hash: string, article_hash?: string, patches: object[] }} Next */
/** @typedef {(next: Next) => void} Apply */

// In presentation mode, keys move between figures; a control keeps its own keys (a slider its
// arrows), and Space on a button presses that button.
const PRESENTATION_KEYS = {
  ArrowRight: "next-figure", PageDown: "next-figure", " ": "next-figure",
  ArrowLeft: "previous-figure", PageUp: "previous-figure", Escape: "end-presentation",
};

/**
 * Gives each slider its range and step from Rust, before any value is written to it: a value
 * outside the browser's default range (0 to 100) would be clamped, and a patch is sent again only
 * when the state changes.
 * @param {Limits} limits
 */
export function setSliderRanges(limits) {
  for (const slider of limits.sliders) {
    const element = /** @type {HTMLInputElement} */ ($(slider.control));
    element.min = String(slider.min);
    element.max = String(slider.max);
    element.step = String(slider.step);
  }
}

/**
 * Wires each control of Rust's fields and every button with an action: a move goes through
 * Rust (`page`), whose next state `apply` shows.
 * @param {{ control(id: string, value: string): Next, action(name: string): Next }} page
 * @param {Limits} limits
 * @param {Apply} apply
 */
export function wireControls(page, limits, apply) {
  for (const field of limits.fields) {
    if (!field.control) continue;
    const element = /** @type {HTMLInputElement} */ ($(field.control));
    const event = element.type === "range" ? "input" : "change";
    element.addEventListener(event, () => {
      const value = element.type === "checkbox" ? String(element.checked) : controlValue(element);
      try {
        apply(page.control(field.control, value));
        clearControlError(element);
      } catch (error) {
        showControlError(element, error.message);
      }
    });
  }
  for (const button of /** @type {NodeListOf<HTMLButtonElement>} */ (document.querySelectorAll("button[data-action]"))) {
    button.addEventListener("click", () => {
      try {
        apply(page.action(button.dataset.action));
      } catch (error) {
        showError(error.message);
        return;
      }
      if (button.dataset.shows) showFigure($(button.dataset.shows));
    });
  }
}

/**
 * A select's or a slider's value, or the checked radio button's in a group (a fieldset, whose
 * radios' change events bubble to it).
 * @param {HTMLElement} element
 */
function controlValue(element) {
  if (element instanceof HTMLFieldSetElement) {
    return /** @type {HTMLInputElement | null} */ (element.querySelector('input[type="radio"]:checked'))?.value ?? "";
  }
  return /** @type {HTMLInputElement} */ (element).value;
}

/**
 * In presentation mode (as `presenting()` says), moves between figures with the keys.
 * @param {{ action(name: string): Next }} page
 * @param {Apply} apply
 * @param {() => boolean} presenting
 */
export function wirePresentationKeys(page, apply, presenting) {
  document.addEventListener("keydown", (event) => {
    const action = PRESENTATION_KEYS[event.key];
    if (!presenting() || !action || event.altKey || event.ctrlKey || event.metaKey) return;
    const target = /** @type {Element} */ (event.target);
    if (target.closest("input, select, textarea") || (event.key === " " && target.closest("button, summary"))) return;
    event.preventDefault();
    try {
      apply(page.action(action));
    } catch (error) {
      showError(error.message);
    }
  });
}

/**
 * Brings the figure or table a "Try this" line names into view (smoothly unless the reader
 * asks for reduced motion) and marks it for a moment.
 * @param {HTMLElement} element
 */
function showFigure(element) {
  const smooth = !matchMedia("(prefers-reduced-motion: reduce)").matches;
  const target = /** @type {HTMLElement} */ (element.closest("figure") ?? element);
  target.scrollIntoView({ behavior: smooth ? "smooth" : "auto", block: "center" });
  target.classList.remove("shown-by-preset");
  void target.offsetWidth; // restarts the mark's animation when the same button is pressed again
  target.classList.add("shown-by-preset");
  setTimeout(() => target.classList.remove("shown-by-preset"), 1600);
}

/**
 * Keeps each lab's --slider-bar-height at the height of its sticky slider bar, which style.css
 * gives focused controls as scroll margin so that they never land under the bar.
 */
export function trackSliderBars() {
  const observer = new ResizeObserver((entries) => {
    for (const entry of entries) {
      /** @type {HTMLElement} */ (entry.target.closest(".lab")).style.setProperty("--slider-bar-height", `${entry.borderBoxSize[0].blockSize}px`);
    }
  });
  for (const bar of document.querySelectorAll(".slider-bar")) observer.observe(bar);
}

/**
 * The coverage experiment's input and button: R random splits against the Beta law, drawn on
 * demand (well under a second). Its canvas stays hidden until the first run, so that the lab
 * shows no empty band; shown, it is measured at once, since the run draws it before the
 * ResizeObserver would report its size.
 * @param {{ run_experiment(repetitions: string): { patches: object[] }, canvas_resized(id: string, width: number, height: number): void }} page
 * @param {Limits} limits
 * @param {{ [key: string]: any }} timings where the run's time goes
 */
export function wireExperiment(page, limits, timings) {
  const repetitions = /** @type {HTMLInputElement} */ ($("repetitions"));
  repetitions.min = String(limits.repetitions.min);
  repetitions.max = String(limits.repetitions.max);
  repetitions.value = String(limits.repetitions.default);
  $("run-experiment").addEventListener("click", () => {
    const canvas = $("experiment");
    if (canvas.hidden) {
      canvas.hidden = false;
      const { width, height } = canvas.getBoundingClientRect();
      page.canvas_resized(canvas.id, width, height);
    }
    const started = performance.now();
    let result;
    try {
      result = page.run_experiment(repetitions.value);
    } catch (error) {
      showError(`The coverage experiment failed: ${error.message}`);
      return;
    }
    timings.experiment = performance.now() - started;
    applyPatches(result.patches);
    $("experiment-time").textContent = `(computed and drawn in ${timings.experiment.toFixed(0)} ms)`;
  });
}

/**
 * The worst-slab button: the conformal lab's sets measured region by region against their
 * noise floor when the reader asks (a fraction of a second), never per frame.
 * @param {{ measure_worst_slab(): { patches: object[] } }} page
 * @param {{ [key: string]: any }} timings where the measurement's time goes
 */
export function wireWorstSlab(page, timings) {
  $("measure-worst-slab").addEventListener("click", () => {
    const started = performance.now();
    let result;
    try {
      result = page.measure_worst_slab();
    } catch (error) {
      showError(`The worst-slab measurement failed: ${error.message}`);
      return;
    }
    timings.worstSlab = performance.now() - started;
    applyPatches(result.patches);
  });
}
