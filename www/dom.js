// Small DOM helpers shared by the page's modules.

// The element with this id.
export const $ = (id) => document.getElementById(id);

// Writes one readout: the text for people, data-value (a plain number) for tests and copying.
export function setMetric(element, name, value, text) {
  element.dataset.metric = name;
  element.dataset.value = String(value);
  element.textContent = text;
}

// Sizes a canvas's backing store to its CSS box times the device pixel ratio; returns the ratio.
export function fitCanvas(canvas) {
  const ratio = window.devicePixelRatio || 1;
  const width = Math.round(canvas.clientWidth * ratio);
  const height = Math.round(canvas.clientHeight * ratio);
  if (canvas.width !== width || canvas.height !== height) {
    canvas.width = width;
    canvas.height = height;
  }
  return ratio;
}

// Shows a readable message in the page (never a blank page).
export function showError(message) {
  const box = $("error");
  box.hidden = false;
  box.textContent = message;
}

// Hides the message box (a new, valid view replaces whatever went wrong before).
export function clearError() {
  const box = $("error");
  box.hidden = true;
  box.textContent = "";
}

// Formats a fraction as a percentage with `digits` decimals.
export const percent = (value, digits = 1) => `${(100 * value).toFixed(digits)}%`;
