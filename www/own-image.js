// @ts-check
// The "your own image" section's inputs: a drawing pad (mouse, touch, pen; undo, clear) and a
// picture chosen, dropped or pasted. Each hands the page RGBA pixels; Rust prepares them
// (own_image::prepare), so nothing here is maths beyond drawing what the reader drew.

import { $ } from "./dom.js";
import { own_picture_size as pictureSize } from "./pkg/calibra.js";

// The pad's strokes, in the pad canvas's own pixels.
const BRUSH_WIDTH = 22;
const INK = "#fff";
const PAPER = "#000";

export class OwnImageInput {
  // onPicture({rgba, width, height, name}) gets every new picture; onCleared() a pad emptied by
  // Clear or by undoing its last stroke; onError(message) every file the browser cannot decode
  // (the answers about the picture before go with it: they would sit under the error).
  constructor({ onPicture, onCleared, onError }) {
    this.onPicture = onPicture;
    this.onCleared = onCleared;
    this.onError = onError;
    this.pad = /** @type {HTMLCanvasElement} */ ($("own-pad"));
    this.context = this.pad.getContext("2d", { willReadFrequently: true });
    this.strokes = [];
    this.stroke = null;
    this.paint();
    this.wirePad();
    this.wireFiles();
  }

  // Redraws the pad from its strokes.
  paint() {
    const { context, pad } = this;
    context.fillStyle = PAPER;
    context.fillRect(0, 0, pad.width, pad.height);
    context.strokeStyle = INK;
    context.fillStyle = INK;
    context.lineWidth = BRUSH_WIDTH;
    context.lineCap = "round";
    context.lineJoin = "round";
    for (const points of this.strokes) {
      context.beginPath();
      context.moveTo(points[0].x, points[0].y);
      for (const point of points.slice(1)) context.lineTo(point.x, point.y);
      if (points.length > 1) {
        context.stroke();
      } else {
        context.arc(points[0].x, points[0].y, BRUSH_WIDTH / 2, 0, 2 * Math.PI);
        context.fill();
      }
    }
  }

  // A pointer's position in the pad's pixels (the canvas may be shown at another size).
  point(event) {
    const box = this.pad.getBoundingClientRect();
    return { x: ((event.clientX - box.left) * this.pad.width) / box.width, y: ((event.clientY - box.top) * this.pad.height) / box.height };
  }

  wirePad() {
    const { pad } = this;
    pad.addEventListener("pointerdown", (event) => {
      event.preventDefault();
      pad.setPointerCapture(event.pointerId);
      this.stroke = [this.point(event)];
      this.strokes.push(this.stroke);
      this.paint();
    });
    pad.addEventListener("pointermove", (event) => {
      if (!this.stroke) return;
      for (const sample of event.getCoalescedEvents?.() ?? [event]) this.stroke.push(this.point(sample));
      this.paint();
    });
    const end = () => {
      if (!this.stroke) return;
      this.stroke = null;
      this.sendPad();
    };
    pad.addEventListener("pointerup", end);
    pad.addEventListener("pointercancel", end);
    $("own-undo").addEventListener("click", () => {
      this.strokes.pop();
      this.paint();
      if (this.strokes.length) this.sendPad();
      else this.onCleared();
    });
    $("own-clear").addEventListener("click", () => {
      this.strokes = [];
      this.paint();
      this.onCleared();
    });
  }

  // Hands the pad's pixels to the page.
  sendPad() {
    const { width, height } = this.pad;
    const { data } = this.context.getImageData(0, 0, width, height);
    this.onPicture({ rgba: new Uint8Array(data.buffer), width, height, name: "your drawing" });
  }

  wireFiles() {
    $("own-file").addEventListener("change", (event) => {
      const [file] = /** @type {HTMLInputElement} */ (event.target).files;
      if (file) this.readFile(file);
    });
    const target = $("own-drop");
    target.addEventListener("dragover", (event) => {
      event.preventDefault();
      target.classList.add("dragging");
    });
    target.addEventListener("dragleave", () => target.classList.remove("dragging"));
    target.addEventListener("drop", (event) => {
      event.preventDefault();
      target.classList.remove("dragging");
      const file = [...(event.dataTransfer?.files ?? [])][0];
      if (file) this.readFile(file);
      else this.onError("Nothing to read: drop a picture file.");
    });
    document.addEventListener("paste", (event) => {
      if (/** @type {Element} */ (event.target).closest?.("input, textarea")) return;
      const file = [...(event.clipboardData?.files ?? [])].find((f) => f.type.startsWith("image/"));
      if (file) this.readFile(file);
    });
  }

  // Decodes a picture file with the browser and hands its pixels to the page, drawn at the
  // size Rust gives (large photos are scaled down first).
  async readFile(file) {
    let bitmap;
    try {
      // The file's own pixels: no colour conversion, alpha not premultiplied (as `calibra
      // logits` decodes a PNG).
      bitmap = await createImageBitmap(file, { colorSpaceConversion: "none", premultiplyAlpha: "none" });
    } catch {
      this.onCleared();
      this.onError(`Cannot read “${file.name}”: this browser cannot decode it as a picture (${file.type || "unknown type"}).`);
      return;
    }
    const [width, height] = pictureSize(bitmap.width, bitmap.height);
    const canvas = new OffscreenCanvas(width, height);
    const context = canvas.getContext("2d");
    context.drawImage(bitmap, 0, 0, width, height);
    bitmap.close();
    // The pad no longer shows the picture classified.
    this.strokes = [];
    this.paint();
    const { data } = context.getImageData(0, 0, width, height);
    this.onPicture({ rgba: new Uint8Array(data.buffer), width, height, name: `“${file.name}”` });
  }
}
