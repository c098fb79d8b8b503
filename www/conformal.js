// The conformal lab's controls, readouts, coverage experiment and gallery. Every number comes
// from the Rust lab; this module reads controls, calls it, and writes the DOM.
import { $, fitCanvas, percent, setMetric, showError } from "./dom.js";

export const CONFORMAL_DEFAULTS = {
  alpha: 0.1,
  score: "aps",
  randomized: true,
  raps_lambda: 0.1,
  k_reg: 1,
  saps_lambda: 0.2,
  mondrian: false,
  gallery: "all",
};

const SCORES = ["lac", "aps", "raps", "saps"];
const SCORE_NAMES = { lac: "LAC", aps: "APS", raps: "RAPS", saps: "SAPS" };
const GALLERY_FILTERS = ["all", "misses", "large", "empty", "extremes"];
const GALLERY_LIMIT = 48;
const EXTREMES = 8;
const PIXELS = 28 * 28;

// Reads the conformal entries of the hash into `next`, noting each invalid one in `problems`.
export function readConformalHash(params, next, problems) {
  const number = (key, low, high, integer = false) => {
    if (!params.has(key)) return;
    const value = Number(params.get(key));
    const valid = Number.isFinite(value) && value >= low && value <= high && (!integer || Number.isInteger(value));
    if (valid) next[key] = value;
    else problems.push(`${key} "${params.get(key)}" is not ${integer ? "a whole number" : "a number"} from ${low} to ${high}`);
  };
  const flag = (key) => {
    if (!params.has(key)) return;
    const value = params.get(key);
    if (value === "1" || value === "0") next[key] = value === "1";
    else problems.push(`${key} "${value}" is not 0 or 1`);
  };
  const choice = (key, options) => {
    if (!params.has(key)) return;
    const value = params.get(key);
    if (options.includes(value)) next[key] = value;
    else problems.push(`${key} "${value}" is not one of ${options.join(", ")}`);
  };
  number("alpha", 0.01, 0.3);
  choice("score", SCORES);
  flag("randomized");
  number("raps_lambda", 0, 0.5);
  number("k_reg", 1, 10, true);
  number("saps_lambda", 0, 1);
  flag("mondrian");
  choice("gallery", GALLERY_FILTERS);
}

export class ConformalLab {
  constructor({ lab, state, pixels, classNames, onChange }) {
    this.lab = lab;
    this.state = state;
    this.pixels = pixels;
    this.classNames = classNames;
    this.onChange = onChange;
    this.selectedRow = null;
    this.thumbnails = new Map();
    // The gallery is rebuilt only while near the screen; off screen it waits, marked stale.
    this.galleryVisible = false;
    this.galleryStale = true;
    this.galleryKey = "";
    // Set by the first successful render: before it there are no sets to show.
    this.ready = false;
    new IntersectionObserver(([entry]) => {
      this.galleryVisible = entry.isIntersecting;
      if (this.ready && this.galleryVisible && this.galleryStale) this.renderGallery(this.settings());
    }, { rootMargin: "200px 0px" }).observe($("gallery"));
    this.wire();
  }

  // The settings object Rust's ConformalSettings reads.
  settings() {
    const s = this.state;
    return {
      temperature: s.t,
      alpha: s.alpha,
      score: s.score,
      randomized: s.randomized,
      raps_lambda: s.raps_lambda,
      raps_k_reg: s.k_reg,
      saps_lambda: s.saps_lambda,
      class_conditional: s.mondrian,
    };
  }

  // Puts state into the controls.
  syncControls() {
    const s = this.state;
    const alpha = s.alpha.toFixed(2);
    const target = percent(1 - s.alpha, 0);
    $("alpha").value = String(s.alpha);
    $("alpha-value").textContent = alpha;
    $("target-value").textContent = target;
    $("alpha").setAttribute("aria-valuetext", `α = ${alpha}, target coverage ${target}`);
    $("score").value = s.score;
    $("randomized").checked = s.randomized;
    $("mondrian").checked = s.mondrian;
    $("raps-lambda").value = String(s.raps_lambda);
    $("raps-lambda-value").textContent = s.raps_lambda.toFixed(2);
    $("raps-lambda").setAttribute("aria-valuetext", `λ = ${s.raps_lambda.toFixed(2)}`);
    $("k-reg").value = String(s.k_reg);
    $("k-reg-value").textContent = String(s.k_reg);
    $("k-reg").setAttribute("aria-valuetext", `k reg = ${s.k_reg}`);
    $("saps-lambda").value = String(s.saps_lambda);
    $("saps-lambda-value").textContent = s.saps_lambda.toFixed(2);
    $("saps-lambda").setAttribute("aria-valuetext", `λ = ${s.saps_lambda.toFixed(2)}`);
    $("gallery-filter").value = s.gallery;
    $("conformal-temperature").textContent = s.t.toFixed(3);
    // Controls that do nothing for the chosen score are disabled, and the page says why.
    $("randomized").disabled = s.score === "lac";
    $("raps-parameters").disabled = s.score !== "raps";
    $("saps-parameters").disabled = s.score !== "saps";
    const idle = [];
    if (s.score === "lac") idle.push("“randomized” does nothing for LAC, whose score 1 − p(y) has no draw");
    if (s.score !== "raps") idle.push("the RAPS parameters apply to RAPS only");
    if (s.score !== "saps") idle.push("the SAPS parameter applies to SAPS only");
    $("controls-reason").textContent = idle.length ? `Disabled: ${idle.join("; ")}.` : "";
  }

  // Listens to the lab's controls: labels update at once, the recomputation once per frame.
  wire() {
    const s = this.state;
    const on = (id, event, apply) =>
      $(id).addEventListener(event, () => {
        apply($(id));
        this.syncControls();
        this.onChange();
      });
    on("alpha", "input", (e) => { s.alpha = Number(e.value); });
    on("score", "change", (e) => { s.score = e.value; });
    on("randomized", "change", (e) => { s.randomized = e.checked; });
    on("mondrian", "change", (e) => { s.mondrian = e.checked; });
    on("raps-lambda", "input", (e) => { s.raps_lambda = Number(e.value); });
    on("k-reg", "input", (e) => { s.k_reg = Number(e.value); });
    on("saps-lambda", "input", (e) => { s.saps_lambda = Number(e.value); });
    on("gallery-filter", "change", (e) => { s.gallery = e.value; });
    $("run-experiment").addEventListener("click", () => this.runExperiment());
  }

  // One wasm call recomputes the lab and redraws its charts; then the readouts and gallery.
  render() {
    $("conformal-temperature").textContent = this.state.t.toFixed(3);
    const canvases = ["set-sizes", "per-class", "stratified", "sweep"].map($);
    const scale = Math.max(...canvases.map(fitCanvas));
    const settings = this.settings();
    const started = performance.now();
    let view;
    try {
      view = this.lab.draw_conformal(settings, ...canvases, scale);
    } catch (error) {
      if (!String(error.message).includes("wait for inference")) showError(`Cannot compute the prediction sets: ${error.message}`);
      return;
    }
    window.calibra.timings.conformalDraws.push(performance.now() - started);
    this.ready = true;
    this.showReadouts(view);
    this.showComparison(view);
    this.galleryStale = true;
    if (this.galleryVisible) this.renderGallery(settings);
    if (this.selectedRow !== null) this.explain(this.selectedRow);
  }

  showReadouts(view) {
    const m = view.metrics;
    const cell = document.querySelector('[data-metric="qhat"], [data-metric="qhat_per_class"]');
    if (view.qhat.length === 1) {
      setMetric(cell, "qhat", view.qhat[0], Number.isFinite(view.qhat[0]) ? view.qhat_text[0] : "∞ (too few calibration images)");
    } else {
      const finite = view.qhat.filter(Number.isFinite);
      setMetric(cell, "qhat_per_class", "", `per class, ${Math.min(...finite).toFixed(3)} to ${Math.max(...finite).toFixed(3)}`);
      cell.title = view.qhat_text.map((q, k) => `${this.classNames[k]}: ${q}`).join("\n");
    }
    const rates = { coverage: m.coverage, singleton_rate: m.singleton_rate, singleton_hit_rate: m.singleton_hit_rate, empty_rate: m.empty_rate };
    for (const [name, value] of Object.entries(rates)) setMetric(document.querySelector(`[data-metric="${name}"]`), name, value, percent(value, 2));
    setMetric(document.querySelector('[data-metric="average_set_size"]'), "average_set_size", m.average_set_size, m.average_set_size.toFixed(3));
    setMetric(document.querySelector('[data-metric="covgap"]'), "covgap", m.covgap, percent(m.covgap, 2));
    setMetric(document.querySelector('[data-metric="guarantee_lower"]'), "guarantee_lower", view.guarantee_lower, percent(view.guarantee_lower, 2));
    setMetric(document.querySelector('[data-metric="guarantee_upper"]'), "guarantee_upper", view.guarantee_upper, percent(view.guarantee_upper, 2));
    $("conformal-sizes").textContent = `${view.n_evaluation.toLocaleString("en")} images; q̂ from ${view.n_calibration.toLocaleString("en")} calibration images`;
    setMetric($("coverage-verdict"), "coverage_deviations", view.verdict.deviations, view.verdict.text);
    $("per-class-sentence").textContent = view.per_class_sentence;
    this.showPerClass(m.per_class_coverage);
  }

  // Per-class coverage as numbers too (the chart's text alternative, its aria-describedby).
  showPerClass(coverages) {
    $("per-class-values").replaceChildren(
      ...coverages.map((c, k) => {
        const span = document.createElement("span");
        span.className = "per-class-value";
        setMetric(span, `coverage_class_${k}`, c ?? "", `${this.classNames[k]} ${c === null ? "—" : percent(c, 1)}`);
        return span;
      }).flatMap((span, i) => (i ? [document.createTextNode(" · "), span] : [span])),
    );
  }

  showComparison(view) {
    const rows = view.comparison.map((c) => {
      const tr = document.createElement("tr");
      if (c.score === this.state.score) tr.className = "current";
      const cells = [
        [SCORE_NAMES[c.score], null],
        [percent(c.coverage, 2), `compare_${c.score}_coverage`, c.coverage],
        [c.average_set_size.toFixed(3), `compare_${c.score}_average_set_size`, c.average_set_size],
        [percent(c.singleton_rate, 1), `compare_${c.score}_singleton_rate`, c.singleton_rate],
        [percent(c.empty_rate, 1), `compare_${c.score}_empty_rate`, c.empty_rate],
      ];
      for (const [text, name, value] of cells) {
        const td = document.createElement("td");
        if (name) setMetric(td, name, value, text);
        else td.textContent = text;
        tr.append(td);
      }
      return tr;
    });
    $("comparison").tBodies[0].replaceChildren(...rows);
  }

  // R random splits against the Beta law, drawn on demand (well under a second).
  runExperiment() {
    const repetitions = Number($("repetitions").value);
    if (!Number.isInteger(repetitions) || repetitions < 10 || repetitions > 10000) {
      showError(`Random splits R must be a whole number from 10 to 10,000, not "${$("repetitions").value}".`);
      return;
    }
    const canvas = $("experiment");
    const scale = fitCanvas(canvas);
    const started = performance.now();
    let result;
    try {
      result = this.lab.draw_coverage_experiment(this.settings(), repetitions, this.state.split, canvas, scale);
    } catch (error) {
      showError(`The coverage experiment failed: ${error.message}`);
      return;
    }
    const millis = performance.now() - started;
    window.calibra.timings.experiment = millis;
    const s = this.state;
    setMetric($("experiment-summary"), "experiment_mean_coverage", result.mean,
      `${repetitions.toLocaleString("en")} splits (${SCORE_NAMES[s.score]}, α = ${s.alpha.toFixed(2)}, T = ${s.t.toFixed(3)}) in ${millis.toFixed(0)} ms: mean coverage ${percent(result.mean, 2)}, spread (sd) ${percent(result.standard_deviation, 2)}.`);
    $("experiment-caption").textContent = result.caption;
  }

  // The gallery: thumbnails with their sets as chips; click one for its explanation. The DOM is
  // rebuilt only when the images or their sets changed.
  renderGallery(settings) {
    this.galleryStale = false;
    const gallery = $("gallery");
    let sections;
    try {
      if (this.state.gallery === "extremes") {
        const [most, least] = this.lab.conformity_extremes(settings, EXTREMES);
        sections = [["Most conformal calibration images (lowest true-label score)", most], ["Least conformal calibration images (highest true-label score)", least]];
      } else {
        sections = [[null, this.lab.gallery(settings, this.state.gallery, GALLERY_LIMIT)]];
      }
    } catch (error) {
      showError(`Cannot fill the gallery: ${error.message}`);
      return;
    }
    const key = JSON.stringify(sections);
    if (key === this.galleryKey) return;
    this.galleryKey = key;
    const nodes = [];
    let count = 0;
    for (const [title, items] of sections) {
      if (title) {
        const h = document.createElement("h4");
        h.textContent = title;
        nodes.push(h);
      }
      for (const item of items) nodes.push(this.tile(item));
      count += items.length;
    }
    gallery.replaceChildren(...nodes);
    gallery.dataset.filter = this.state.gallery;
    $("gallery-count").textContent = count === 0 ? "No image matches." : `${count} image${count === 1 ? "" : "s"}${this.state.gallery !== "extremes" && count === GALLERY_LIMIT ? " (the first ones)" : ""}.`;
  }

  tile(item) {
    const button = document.createElement("button");
    button.type = "button";
    button.className = "tile";
    button.dataset.row = String(item.row);
    button.dataset.covered = String(item.covered);
    button.dataset.setSize = String(item.set.length);
    button.setAttribute("aria-pressed", String(item.row === this.selectedRow));
    button.append(this.cachedThumbnail(item.row));
    const truth = document.createElement("div");
    truth.className = "truth";
    truth.textContent = `#${item.row}: ${this.classNames[item.label]}`;
    // The button's name is its visible text, followed by the chips as one sentence for screen
    // readers (the chips themselves are hidden from them).
    const set = document.createElement("span");
    set.className = "visually-hidden";
    set.textContent = `; set: ${item.set.map((k) => this.classNames[k]).join(", ") || "empty"}; ${item.covered ? "covered" : `missed: ${this.classNames[item.label]}`}`;
    truth.append(set);
    const chips = this.chips(item);
    chips.setAttribute("aria-hidden", "true");
    button.append(truth, chips);
    button.addEventListener("click", () => {
      this.selectedRow = item.row;
      for (const t of document.querySelectorAll(".tile")) t.setAttribute("aria-pressed", String(t === button));
      this.explain(item.row);
      $("explanation").scrollIntoView({ behavior: "smooth", block: "nearest" });
    });
    return button;
  }

  // The gallery's thumbnail of `row`, drawn once and reused.
  cachedThumbnail(row) {
    if (!this.thumbnails.has(row)) this.thumbnails.set(row, this.thumbnail(row));
    return this.thumbnails.get(row);
  }

  // A 28x28 image, dark on light.
  thumbnail(row) {
    const canvas = document.createElement("canvas");
    canvas.width = 28;
    canvas.height = 28;
    const context = canvas.getContext("2d");
    const image = context.createImageData(28, 28);
    const source = this.pixels.subarray(row * PIXELS, (row + 1) * PIXELS);
    for (let i = 0; i < PIXELS; i++) {
      const v = 255 - source[i];
      image.data.set([v, v, v, 255], i * 4);
    }
    context.putImageData(image, 0, 0);
    return canvas;
  }

  // The set as label chips: the true label solid with a tick when covered, dashed with a cross when missed.
  chips(item) {
    const chips = document.createElement("div");
    chips.className = "chips";
    for (const k of item.set) {
      const chip = document.createElement("span");
      chip.className = k === item.label ? "chip hit" : "chip";
      chip.textContent = this.classNames[k];
      chips.append(chip);
    }
    if (!item.covered) {
      const chip = document.createElement("span");
      chip.className = "chip miss";
      chip.textContent = this.classNames[item.label];
      chip.title = "true label, not in the set";
      chips.append(chip);
    }
    if (item.set.length === 0) {
      const chip = document.createElement("span");
      chip.className = "chip none";
      chip.textContent = "empty set";
      chips.prepend(chip);
    }
    return chips;
  }

  // Why each label of one image is in its set or not.
  explain(row) {
    let e;
    try {
      e = this.lab.explain(this.settings(), row);
    } catch (error) {
      showError(`Cannot explain image ${row}: ${error.message}`);
      return;
    }
    const panel = $("explanation");
    panel.hidden = false;
    const heading = document.createElement("h4");
    heading.id = "explanation-title";
    heading.textContent = `Image #${row} (${e.calibration ? "calibration" : "evaluation"} half), truly a ${this.classNames[e.label]}`;
    const table = document.createElement("table");
    table.innerHTML = "<thead><tr><th>label</th><th>probability</th><th><span class='visually-hidden'>probability bar</span></th><th>score s(x, y)</th><th>q̂</th><th>in the set?</th></tr></thead>";
    const body = document.createElement("tbody");
    e.probabilities.forEach((p, k) => {
      const tr = document.createElement("tr");
      if (e.in_set[k]) tr.className = "in";
      const bar = `<span class="bar" style="width:${(100 * p).toFixed(1)}px"></span>`;
      const q = e.thresholds[k];
      tr.innerHTML = `<td>${this.classNames[k]}${k === e.label ? " (true)" : ""}</td><td>${percent(p, 2)}</td><td>${bar}</td><td>${e.score_text[k]}</td><td>${e.threshold_text[k]}</td><td>${e.in_set[k] ? "yes: score ≤ q̂" : "no: score > q̂"}</td>`;
      body.append(tr);
    });
    table.append(body);
    // On a phone the table is wider than the screen: it scrolls on its own, by keyboard too.
    const scroller = document.createElement("div");
    scroller.className = "table-scroll";
    scroller.tabIndex = 0;
    scroller.setAttribute("role", "region");
    scroller.setAttribute("aria-labelledby", "explanation-title");
    scroller.append(table);
    panel.replaceChildren(heading, this.thumbnail(row), scroller);
  }
}
