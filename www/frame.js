// @ts-check
// When the page draws: at most one frame per animation frame, each lab redrawn only while it is
// on screen (one off screen stays dirty and is drawn when it scrolls into view), and a batch's
// redraw spaced from the last frame.

// The elements whose visibility stands for their lab's.
const LAB_ELEMENTS = { "temperature-lab": "temperature", "conformal-lab": "conformal", gallery: "gallery", "shift-lab": "shift", "ood-lab": "ood", "own-image": "own" };

/** @typedef {"temperature" | "conformal" | "gallery" | "ood" | "shift" | "own"} Lab */
/** @typedef {{ id: string, lab: string }} FigureOnPage a figure, or a block of readouts computed only on screen */

/**
 * Runs `callback` once the frame being drawn is painted: a message posted from a frame's
 * callback is handled after that frame's style, layout and paint (a timeout may be clamped).
 * Messages run in the order they were posted.
 * @param {() => void} callback
 */
export function afterPaint(callback) {
  const channel = new MessageChannel();
  channel.port1.onmessage = () => callback();
  channel.port2.postMessage(null);
}

// The labs whose rows are the shown network's test logits, or the reader's own rows.
const PARTIAL_LABS = ["temperature", "conformal"];

export class Frames {
  /** @param {() => void} onFrame the animation frame's work */
  constructor(onFrame) {
    this.onFrame = onFrame;
    this.pending = false;
    // Which labs need a redraw, and which are on screen.
    /** @type {Record<Lab, boolean>} */
    this.dirty = { temperature: false, conformal: false, gallery: false, ood: false, shift: false, own: false };
    /** @type {Record<Lab, boolean>} */
    this.visible = { temperature: true, conformal: false, gallery: false, ood: false, shift: false, own: false };
    // The figures (canvas ids) and blocks of readouts on screen: a frame draws and computes only
    // these, and one scrolling into view asks for its lab again.
    /** @type {Set<string>} */
    this.onScreen = new Set();
    /** @type {IntersectionObserver | null} */
    this.observer = null;
    /** @type {FigureOnPage[]} */
    this.figures = [];
    /** @type {FigureOnPage[]} */
    this.blocks = [];
    // When the last frame was drawn, and the timer of a batch's redraw waiting for its turn.
    this.lastRender = -Infinity;
    /** @type {ReturnType<typeof setTimeout> | null} */
    this.streaming = null;
    // The figures and blocks of the labs that show the shown network's test logits (or the
    // reader's rows) that a frame computed before every row was in, and whether the last frame
    // had them all: one that has left the screen since would keep numbers of part of the rows,
    // so once all are in their lab's next frame computes it again, on screen or not.
    /** @type {Set<string>} */
    this.partial = new Set();
    this.complete = false;
    // Jumps in flight (holdUntil), and whether a frame was asked for meanwhile.
    this.holds = 0;
    this.askedWhileHeld = false;
  }

  /**
   * Draws nothing until `settled` resolves, then draws what was asked for meanwhile: a jump
   * across the article would otherwise draw each lab it passes, whose growth moves its target.
   * @param {Promise<unknown>} settled
   */
  holdUntil(settled) {
    this.holds += 1;
    settled.finally(() => {
      this.holds -= 1;
      if (this.holds > 0 || !this.askedWhileHeld) return;
      this.askedWhileHeld = false;
      this.request();
    });
  }

  /** Asks for one render on the next animation frame, every lab dirty; repeated asks in a frame collapse. */
  schedule() {
    for (const lab of /** @type {Lab[]} */ (Object.keys(this.dirty))) this.dirty[lab] = true;
    this.request();
  }

  /** Asks for a frame, if none is asked for yet, leaving the labs' dirtiness as it is. */
  request() {
    if (this.holds > 0) {
      this.askedWhileHeld = true;
      return;
    }
    if (this.pending) return;
    this.pending = true;
    requestAnimationFrame(() => {
      this.pending = false;
      this.onFrame();
    });
  }

  /**
   * The redraw an arriving batch asks for: at once, or `spacing` ms after the last frame,
   * whichever is later (the workers need the cores more than the chart needs every batch).
   * @param {number} spacing
   */
  scheduleStreaming(spacing) {
    if (this.streaming !== null) return;
    const wait = this.lastRender + spacing - performance.now();
    if (wait <= 0) return this.schedule();
    this.streaming = setTimeout(() => {
      this.streaming = null;
      this.schedule();
    }, wait);
  }

  /**
   * Starts a frame: what the labs on screen and dirty are, for Rust's render (`explain`: the
   * test image whose explanation is open, if one is).
   * @param {number | null} explain
   */
  begin(explain) {
    // What the observer has seen and not yet told: Chromium tells it in a task of its own, which
    // on a busy page came frames late, and the first logits' frame then drew no chart.
    this.note(this.observer.takeRecords());
    this.lastRender = performance.now();
    // This frame draws every batch in so far: a batch's redraw still waiting is not needed.
    clearTimeout(this.streaming);
    this.streaming = null;
    const { dirty, visible } = this;
    const wanted = (/** @type {FigureOnPage} */ { id }) => this.onScreen.has(id) || (this.complete && this.partial.has(id));
    return {
      temperature: dirty.temperature && visible.temperature,
      conformal: dirty.conformal && visible.conformal,
      gallery: dirty.gallery && visible.gallery,
      ood: dirty.ood && visible.ood,
      shift: dirty.shift && visible.shift,
      own_image: dirty.own && visible.own,
      explain,
      figures: this.figures.filter(wanted).map(({ id }) => id),
      blocks: this.blocks.filter(wanted).map(({ id }) => id),
    };
  }

  /**
   * Ends a frame: notes which figures and blocks of the labs in PARTIAL_LABS it computed on part
   * of the rows and which on all of them, and in the frame where the last rows came in, asks
   * for a frame of the labs on screen that have some on part of the rows (a lab off screen
   * computes them when it is next drawn).
   * @param {{ figures: string[], blocks: string[] }} wanted what `begin` asked for
   * @param {{ drawn: string[], complete: boolean }} readouts what the frame computed
   */
  end(wanted, { drawn, complete }) {
    for (const { id, lab } of [...this.figures, ...this.blocks]) {
      if (!PARTIAL_LABS.includes(lab) || !drawn.includes(lab) || !(wanted.figures.includes(id) || wanted.blocks.includes(id))) continue;
      if (complete) this.partial.delete(id);
      else this.partial.add(id);
    }
    const becameComplete = complete && !this.complete;
    this.complete = complete;
    if (!becameComplete) return;
    const labs = [...this.figures, ...this.blocks].filter(({ id, lab }) => this.partial.has(id) && this.visible[/** @type {Lab} */ (lab)]);
    for (const { lab } of labs) this.dirty[/** @type {Lab} */ (lab)] = true;
    if (labs.length) this.request();
  }

  /**
   * Tracks which labs, figures and blocks of readouts are on screen (with a margin, so charts
   * and numbers are ready as they scroll in).
   * @param {FigureOnPage[]} figures
   * @param {FigureOnPage[]} blocks
   */
  observe(figures, blocks) {
    this.figures = figures;
    this.blocks = blocks;
    this.observer = new IntersectionObserver((entries) => {
      this.note(entries);
      this.request();
    }, { rootMargin: "300px 0px" });
    for (const id of [...Object.keys(LAB_ELEMENTS), ...[...figures, ...blocks].map((part) => part.id)]) this.observer.observe(document.getElementById(id));
  }

  /**
   * Notes what the visibility observer saw: a lab on or off screen, a figure or block on or off
   * screen (one coming on screen asks for its lab).
   * @param {IntersectionObserverEntry[]} entries
   */
  note(entries) {
    for (const { target, isIntersecting } of entries) {
      const lab = LAB_ELEMENTS[target.id];
      if (lab !== undefined) {
        this.visible[lab] = isIntersecting;
      } else if (isIntersecting) {
        this.onScreen.add(target.id);
        const part = [...this.figures, ...this.blocks].find(({ id }) => id === target.id);
        this.dirty[/** @type {Lab} */ (part.lab)] = true;
      } else {
        this.onScreen.delete(target.id);
      }
    }
  }

  /**
   * Tells Rust each chart canvas's content box whenever a layout changes it, and asks for a
   * frame: a frame then draws at these sizes without reading the layout itself.
   * @param {{ canvas_resized(id: string, width: number, height: number): void }} page
   */
  observeCanvasSizes(page) {
    const observer = new ResizeObserver((entries) => {
      for (const { target, contentBoxSize: [box] } of entries) page.canvas_resized(target.id, box.inlineSize, box.blockSize);
      this.schedule();
    });
    for (const { id } of this.figures) observer.observe(document.getElementById(id));
  }
}
