// @ts-check
// The conformal lab's gallery and its per-image explanation: builds the DOM for what Rust's
// render returned (images, sets, scores and their texts). No number is computed here.

import { shifted_rows } from "./pkg/calibra.js";
import { $ } from "./dom.js";

// Image `row` of `pixels` ([n, side, side]) on a canvas, dark on light, or bright on black as
// the network reads it (`asRead`).
export function thumbnail(pixels, row, side, { asRead = false } = {}) {
  const canvas = document.createElement("canvas");
  canvas.width = side;
  canvas.height = side;
  const context = canvas.getContext("2d");
  const image = context.createImageData(side, side);
  const source = pixels.subarray(row * side * side, (row + 1) * side * side);
  source.forEach((value, i) => {
    const shade = asRead ? value : 255 - value;
    image.data.set([shade, shade, shade, 255], i * 4);
  });
  context.putImageData(image, 0, 0);
  return canvas;
}

// Image `row` of `pixels` as the network reads it, bright on black, named `label` for screen
// readers.
export function thumbnailAsRead(pixels, row, side, label) {
  const canvas = thumbnail(pixels, row, side, { asRead: true });
  canvas.setAttribute("role", "img");
  canvas.setAttribute("aria-label", label);
  return canvas;
}

// The shift lab's evaluation images `rows` of the test images `test` ([n, side, side]), clean
// and as the corrupted copy `set` holds them (made in Rust for these rows alone); none
// corrupted when `set` is null. Rebuilt only when they changed.
export function showShiftThumbnails({ rows, set }, test, side) {
  const key = `${rows.join(",")}:${set}`;
  if ($("shift-clean").dataset.key === key) return;
  $("shift-clean").dataset.key = key;
  const strip = (pixels, label) => rows.map((row, index) => thumbnailAsRead(pixels, index, side, `${label} test image ${row}`));
  const clean = new Uint8Array(rows.length * side * side);
  rows.forEach((row, index) => clean.set(test.subarray(row * side * side, (row + 1) * side * side), index * side * side));
  $("shift-clean").replaceChildren(...strip(clean, "clean"));
  $("shift-corrupted").replaceChildren(...(set ? strip(shifted_rows(test, new Uint32Array(rows), set), "corrupted") : []));
  $("shift-corrupted-row").hidden = !set;
}

// The τ lab's galleries: each shown network's surest OOD images with what it makes of them
// (`pixelsOf(set)` gives an image set's pixels). Rebuilt only when they changed.
let oodKey = "";
export function showOodGalleries(galleries, pixelsOf, side) {
  const key = JSON.stringify(galleries);
  if (key === oodKey) return;
  oodKey = key;
  const columns = galleries.map(({ title, set, items }) => {
    const column = document.createElement("div");
    const heading = document.createElement("h4");
    heading.textContent = title;
    const tiles = document.createElement("div");
    tiles.className = "tiles";
    for (const item of items) {
      const figure = document.createElement("div");
      figure.className = "ood-tile";
      figure.dataset.index = String(item.index);
      const canvas = thumbnail(pixelsOf(set), item.index, side);
      canvas.setAttribute("role", "img");
      canvas.setAttribute("aria-label", `${set} image ${item.index}`);
      const caption = document.createElement("p");
      caption.textContent = item.text;
      figure.append(canvas, caption);
      tiles.append(figure);
    }
    column.append(heading, tiles);
    return column;
  });
  $("ood-gallery").replaceChildren(...columns);
}

export class Gallery {
  /**
   * @param {{ images: import("./test-images.js").ImageSets, limits: import("./test-images.js").Limits, onSelect: () => void }} parts
   *   the image sets (the test images, still arriving), the page's constants, and what a tile's
   *   click asks for
   */
  constructor({ images, limits, onSelect }) {
    this.images = images;
    this.pixels = images.get("test");
    this.side = limits.image_side;
    this.classNames = limits.class_names;
    this.onSelect = onSelect;
    // The test image whose explanation is open; render() asks Rust for it every frame.
    this.selectedRow = null;
    this.scrollToExplanation = false;
    this.thumbnails = new Map();
    this.key = "";
  }

  // Shows the sections ({title, items}); the DOM is rebuilt only when the images or their sets
  // changed. A keyboard reader on a tile stays on the same image's new tile (or, when that image
  // left the gallery, on its first tile) rather than being dropped to the top of the page.
  show(sections, choice) {
    const key = JSON.stringify(sections);
    if (key === this.key) return;
    this.key = key;
    const nodes = [];
    for (const { title, items } of sections) {
      if (title) {
        const heading = document.createElement("h4");
        heading.textContent = title;
        nodes.push(heading);
      }
      for (const item of items) nodes.push(this.tile(item));
    }
    const gallery = $("gallery");
    const focused = /** @type {HTMLElement} */ (document.activeElement);
    const focusedRow = gallery.contains(focused) ? focused.dataset.row : undefined;
    gallery.replaceChildren(...nodes);
    gallery.dataset.filter = choice;
    if (focusedRow !== undefined) {
      /** @type {HTMLElement | null} */ (gallery.querySelector(`.tile[data-row="${focusedRow}"]`) ?? gallery.querySelector(".tile"))?.focus({ preventScroll: true });
    }
  }

  // One image as a button: its thumbnail, its true label, its set as chips, and (an evaluation
  // image) its Venn–Abers interval.
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
    if (item.venn_abers) {
      const interval = document.createElement("div");
      interval.className = "venn-abers";
      interval.textContent = item.venn_abers.text;
      interval.setAttribute("aria-hidden", "true");
      set.textContent += `; ${item.venn_abers.spoken}`;
      button.append(interval);
    }
    button.addEventListener("click", () => {
      this.selectedRow = item.row;
      this.scrollToExplanation = true;
      for (const t of document.querySelectorAll(".tile")) t.setAttribute("aria-pressed", String(t === button));
      this.onSelect();
    });
    return button;
  }

  // The gallery's thumbnail of `row`, drawn once and reused. Logits kept by an earlier visit can
  // come before the test images are all unzipped: a thumbnail whose image is not whole yet is
  // drawn again once all are.
  cachedThumbnail(row) {
    if (!this.thumbnails.has(row)) {
      const canvas = this.thumbnail(row);
      this.thumbnails.set(row, canvas);
      if (row >= this.images.rowsIn("test")) {
        this.images.testComplete?.then(() => canvas.getContext("2d").drawImage(this.thumbnail(row), 0, 0), () => {});
      }
    }
    return this.thumbnails.get(row);
  }

  // A test image, dark on light.
  thumbnail(row) {
    return thumbnail(this.pixels, row, this.side);
  }

  // The set as label chips: the true label solid with a tick when covered, dashed with a cross when missed.
  chips(item) {
    const chips = document.createElement("div");
    chips.className = "chips";
    const chip = (className, text) => {
      const span = document.createElement("span");
      span.className = className;
      span.textContent = text;
      return span;
    };
    for (const k of item.set) chips.append(chip(k === item.label ? "chip hit" : "chip", this.classNames[k]));
    if (!item.covered) {
      const miss = chip("chip miss", this.classNames[item.label]);
      miss.title = "true label, not in the set";
      chips.append(miss);
    }
    if (item.set.length === 0) chips.prepend(chip("chip none", "empty set"));
    return chips;
  }

  // Why each label of one image is in its set or not (the explanation Rust computed).
  explain(e) {
    const panel = $("explanation");
    panel.hidden = false;
    const heading = document.createElement("h4");
    heading.id = "explanation-title";
    heading.textContent = e.title;
    const table = document.createElement("table");
    table.innerHTML = "<thead><tr><th>label</th><th>probability</th><th><span class='visually-hidden'>probability bar</span></th><th>score s(x, y)</th><th>q̂</th><th>in the set?</th></tr></thead>";
    const body = document.createElement("tbody");
    e.probability_text.forEach((probability, k) => {
      const tr = document.createElement("tr");
      if (e.in_set[k]) tr.className = "in";
      const cells = [`${this.classNames[k]}${k === e.label ? " (true)" : ""}`, probability, null, e.score_text[k], e.threshold_text[k], e.in_set[k] ? "yes: score ≤ q̂" : "no: score > q̂"];
      for (const text of cells) {
        const td = document.createElement("td");
        if (text === null) {
          // The bar's width is set through the CSS object model, which the page's
          // Content-Security-Policy allows (inline style attributes it does not).
          const track = document.createElement("span");
          track.className = "bar-track";
          const bar = document.createElement("span");
          bar.className = "bar";
          bar.style.width = probability;
          track.append(bar);
          td.append(track);
        } else {
          td.textContent = text;
        }
        tr.append(td);
      }
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
    panel.replaceChildren(heading, this.thumbnail(e.row), scroller);
    if (this.scrollToExplanation) {
      this.scrollToExplanation = false;
      panel.scrollIntoView({ behavior: "smooth", block: "nearest" });
    }
  }
}
