// @ts-check
// Each figure's "Save or share" menu: PNG (the figure at twice its size on screen, for slides),
// SVG and CSV (from Rust: the same plot code on the SVG backend, and the numbers the figure draws), the code of an <iframe>
// showing the figure alone (the embed view), and a link to this view (the address, whose hash
// is the page state). Rust lists the figures (limits().figures).

// Width of the <iframe> the embed code writes, in CSS pixels: a blog column's.
const EMBED_WIDTH = 720;
// Room above and below the figure in the embed view: its slider bar, caption and menu.
const EMBED_CHROME_HEIGHT = 260;

// Adds a menu to every <figure> that holds one of the page's canvases. `page` gives the SVG and
// CSV of a figure in the page's state, `embedHash(id)` the hash of the
// embed view of figure `id`, `link()` the address of this view; failures go to `onError`.
export function addFigureMenus({ figures, page, embedHash, link, onError }) {
  const byId = new Map(figures.map((figure) => [figure.id, figure]));
  for (const element of document.querySelectorAll("main figure")) {
    const shown = [...element.querySelectorAll("canvas")].map((canvas) => byId.get(canvas.id)).filter(Boolean);
    if (shown.length) element.append(menu(shown, { page, embedHash, link, onError }));
  }
}

function menu(figures, { page, embedHash, link, onError }) {
  const details = document.createElement("details");
  details.className = "figure-menu";
  const summary = document.createElement("summary");
  summary.textContent = "Save or share";
  details.append(summary);
  const status = document.createElement("span");
  status.className = "figure-menu-status";
  status.setAttribute("role", "status");
  for (const figure of figures) {
    const row = document.createElement("div");
    row.className = "figure-menu-row";
    if (figures.length > 1) {
      const name = document.createElement("span");
      name.textContent = `${capitalised(figure.title)}:`;
      row.append(name);
    }
    const save = (kind, make) => button(kind, `Download the ${figure.title} as ${kind}`, async () => {
      download(await make(), `${figure.file_stem}.${kind.toLowerCase()}`);
    });
    row.append(
      save("PNG", () => pngAtTwice(page.figure_svg(figure.id))),
      save("SVG", () => new Blob([page.figure_svg(figure.id)], { type: "image/svg+xml" })),
      save("CSV", () => new Blob([page.figure_csv(figure.id)], { type: "text/csv" })),
      button("Copy embed code", `Copy embed code for the ${figure.title}`, async () => {
        await navigator.clipboard.writeText(embedCode(figure, embedHash(figure.id)));
        status.textContent = "Embed code copied.";
      }),
    );
    details.append(row);
  }
  const copyLink = button("Copy link to this view", null, async () => {
    await navigator.clipboard.writeText(link());
    status.textContent = "Link copied.";
  });
  const linkRow = document.createElement("div");
  linkRow.className = "figure-menu-row";
  linkRow.append(copyLink, status);
  details.append(linkRow);
  // Each button's failure is shown, never thrown away.
  details.addEventListener("figure-menu-error", (event) => onError(/** @type {CustomEvent<string>} */ (event).detail));
  return details;
}

function button(text, label, action) {
  const element = document.createElement("button");
  element.type = "button";
  element.textContent = text;
  if (label) element.setAttribute("aria-label", label);
  element.addEventListener("click", () => {
    Promise.resolve().then(action).catch((error) => {
      element.dispatchEvent(new CustomEvent("figure-menu-error", { bubbles: true, detail: error.message ?? String(error) }));
    });
  });
  return element;
}

// The script of the embed code: it sets each calibra frame's height to the one its embed view
// reports (embed.js), so that the frame fits its figure exactly.
const RESIZE_SCRIPT = `<script>addEventListener("message", (event) => { if (event.data?.type !== "calibra:embed-height") return; for (const frame of document.querySelectorAll("iframe[data-calibra-embed]")) if (frame.contentWindow === event.source) frame.height = String(event.data.height); });</script>`;

// An <iframe> of the embed view, about as tall as the figure needs at EMBED_WIDTH, and the
// script that makes it exactly as tall once it has drawn (where the host keeps scripts).
function embedCode(figure, hash) {
  const canvas = document.getElementById(figure.id);
  const ratio = canvas.clientHeight / Math.max(1, canvas.clientWidth);
  const height = Math.round(EMBED_WIDTH * ratio + EMBED_CHROME_HEIGHT);
  const src = new URL(`#${hash}`, location.href).href;
  return `<iframe src="${src}" width="${EMBED_WIDTH}" height="${height}" title="calibra: ${figure.title}" loading="lazy" style="border: 0; max-width: 100%" data-calibra-embed></iframe>\n${RESIZE_SCRIPT}`;
}

const capitalised = (text) => text.charAt(0).toUpperCase() + text.slice(1);

// Scale of a saved PNG against the figure's size on screen: sharp on a projector whatever the
// reader's screen (the canvas itself has only the screen's device pixels).
const PNG_SCALE = 2;

// The figure's SVG (Rust's, at the canvas's CSS size) drawn at PNG_SCALE times that size on
// white, as a PNG. A data: URL, which the page's Content-Security-Policy allows for images.
async function pngAtTwice(svg) {
  const image = new Image();
  image.src = `data:image/svg+xml;charset=utf-8,${encodeURIComponent(svg)}`;
  await image.decode();
  const canvas = new OffscreenCanvas(PNG_SCALE * image.naturalWidth, PNG_SCALE * image.naturalHeight);
  const context = canvas.getContext("2d");
  context.fillStyle = "#fff";
  context.fillRect(0, 0, canvas.width, canvas.height);
  context.drawImage(image, 0, 0, canvas.width, canvas.height);
  return canvas.convertToBlob({ type: "image/png" });
}

// Saves a blob under `name` through a temporary link.
export function download(blob, name) {
  const url = URL.createObjectURL(blob);
  const link = document.createElement("a");
  link.href = url;
  link.download = name;
  link.hidden = true;
  document.body.append(link);
  link.click();
  link.remove();
  // Released once the browser has long started the download.
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}
