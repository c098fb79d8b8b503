// @ts-check
// Small DOM helpers shared by the page's modules.

// The element with this id.
export const $ = (id) => document.getElementById(id);

// Resolves once the article is parsed (index.js loads asynchronously, from the head).
export const articleParsed = new Promise((resolve) => {
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", resolve, { once: true });
  else resolve(undefined);
});

// The elements that show each readout sent without an id, found once rather than by a query of
// the whole document for every such readout in every frame. Found anew after anything that can
// add, remove or rename one (a readout given a new name, a list of readouts or a table's rows
// replaced); nothing else in the page makes them.
/** @type {Map<string, Element[]>} */
const readoutElements = new Map();
function elementsShowing(metric) {
  let elements = readoutElements.get(metric);
  if (!elements) {
    elements = [...document.querySelectorAll(`[data-metric="${metric}"]`)];
    readoutElements.set(metric, elements);
  }
  return elements;
}

// Writes one readout: the text for people, data-value (a plain number) for tests and copying.
export function setMetric(element, name, value, text) {
  const { dataset } = element;
  if (dataset.metric !== name) {
    dataset.metric = name;
    readoutElements.clear();
  }
  if (dataset.value !== String(value)) dataset.value = String(value);
  setText(element, text);
}

// Writes are skipped where nothing changes: even an unchanged write invalidates the layout,
// which the next frame's canvas sizing would then pay for, in a slider's frame budget.
function setText(element, text) {
  if (element.textContent !== text) element.textContent = text;
}
function setProperty(element, name, value) {
  if (element[name] !== value) element[name] = value;
}

// Applies the patches Rust's render returned: a text, readout or control value per element (a
// readout without an id to every element that shows it).
export function applyPatches(patches) {
  for (const p of patches) {
    if (p.kind === "metric" && !p.id) {
      for (const element of elementsShowing(p.metric)) applyPatch(element, p);
    } else {
      applyPatch($(p.id), p);
    }
  }
}

// Applies one patch to one element.
function applyPatch(element, p) {
  switch (p.kind) {
    case "text": setText(element, p.text); break;
    case "metric":
      setMetric(element, p.metric, p.value ?? "", p.text);
      if (p.title) setProperty(element, "title", p.title);
      else if (element.hasAttribute("title")) element.removeAttribute("title");
      break;
    case "control":
      if (element instanceof HTMLFieldSetElement) checkRadio(element, p.value);
      else setProperty(element, "value", p.value);
      if (p.valuetext && element.getAttribute("aria-valuetext") !== p.valuetext) element.setAttribute("aria-valuetext", p.valuetext);
      break;
    case "checked": setProperty(element, "checked", p.checked); break;
    case "disabled": setProperty(element, "disabled", p.disabled); break;
    case "hidden": setProperty(element, "hidden", p.hidden); break;
    case "max": setProperty(element, "max", p.max); break;
    case "progress": setProperty(element, "max", p.max); setProperty(element, "value", p.value); break;
    case "style": element.style.setProperty(p.property, p.value); break;
    case "metrics": element.replaceChildren(...joined(p.items.map(metricSpan))); readoutElements.clear(); break;
    case "rows": element.tBodies[0].replaceChildren(...p.rows.map(tableRow)); readoutElements.clear(); break;
    case "bars": element.tBodies[0].replaceChildren(...p.rows.map(barRow)); readoutElements.clear(); break;
    default: throw new Error(`unknown patch kind ${p.kind}`);
  }
}

// Checks the radio button of a group (a fieldset) whose value is `value`.
function checkRadio(group, value) {
  for (const radio of group.querySelectorAll('input[type="radio"]')) setProperty(radio, "checked", radio.value === value);
}

// A readout as a span of its own.
function metricSpan(item) {
  const span = document.createElement("span");
  setMetric(span, item.metric, item.value ?? "", item.text);
  return span;
}

// Nodes separated by " · ".
const joined = (nodes) => nodes.flatMap((node, i) => (i ? [document.createTextNode(" · "), node] : [node]));

// A table row of readouts (and label cells), the chosen setting's row marked.
function tableRow(row) {
  const tr = document.createElement("tr");
  if (row.current) tr.className = "current";
  for (const cell of row.cells) {
    const td = document.createElement("td");
    if (cell.metric) setMetric(td, cell.metric, cell.value ?? "", cell.text);
    else td.textContent = cell.text;
    tr.append(td);
  }
  return tr;
}

// A bar chart's row: its label, then each readout as a bar as long as its value (a share)
// with its text beside it.
function barRow(row) {
  const tr = document.createElement("tr");
  const th = document.createElement("th");
  th.scope = "row";
  th.textContent = row.label;
  tr.append(th);
  for (const item of row.bars) {
    const td = document.createElement("td");
    const bar = document.createElement("span");
    bar.className = "bar";
    bar.setAttribute("aria-hidden", "true");
    bar.style.setProperty("--share", String(item.value));
    td.append(bar, metricSpan(item));
    tr.append(td);
  }
  return tr;
}

// Shows a readable message in the page (never a blank page).
export function showError(message) {
  const box = $("error");
  box.hidden = false;
  box.textContent = message;
}

// Shows a control's refusal right after the control (its own alert, created the first time), so
// the reader sees it where they acted; the next valid change of that control clears it.
export function showControlError(control, message) {
  let box = document.getElementById(`${control.id}-error`);
  if (!box) {
    box = document.createElement("p");
    box.id = `${control.id}-error`;
    box.className = "error control-error";
    box.setAttribute("role", "alert");
    control.after(box);
    const described = control.getAttribute("aria-describedby");
    control.setAttribute("aria-describedby", described ? `${described} ${box.id}` : box.id);
  }
  box.hidden = false;
  box.textContent = message;
}

// Hides a control's refusal, if it shows one.
export function clearControlError(control) {
  const box = document.getElementById(`${control.id}-error`);
  if (box) {
    box.hidden = true;
    box.textContent = "";
  }
}

// Hides the message box (a new, valid view replaces whatever went wrong before).
export function clearError() {
  const box = $("error");
  box.hidden = true;
  box.textContent = "";
}
