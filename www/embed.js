// @ts-check
// The embed view (#embed=<figure id>): one figure alone with its lab's slider, sized to the
// frame, for an <iframe> in a blog post; and presentation mode (#present=1), the same view in
// large type with buttons and keys to the next figure. Rust's state says which figure (or
// "none": the whole article) and whether it is presented; this file only shows and hides what
// the DOM already holds.

let shown = null;
// The figure presentation mode showed last, to return to when it ends.
let lastPresented = null;
// Inside a frame, the embed view's height as last told to the page holding the frame.
let toldHeight = 0;
// The method notes presentation mode opened under its figure: each notes element, where it
// stood in the article, and whether it was open there.
/** @type {{ notes: HTMLDetailsElement, place: Comment, open: boolean }[]} */
let presentedNotes = [];

// Puts the notes presentation mode showed back in their place in the article, as they were.
function restoreNotes() {
  for (const { notes, place, open } of presentedNotes) {
    place.replaceWith(notes);
    notes.open = open;
  }
  presentedNotes = [];
}

// Opens, right under `figure`, the method notes ("More", details[data-present-with]) that name
// `figureId`: a figure presented alone keeps what the article says beside it of its method.
function presentNotes(figure, figureId) {
  let after = figure;
  for (const notes of document.querySelectorAll(`details[data-present-with~="${figureId}"]`)) {
    const place = document.createComment("notes presented");
    notes.replaceWith(place);
    presentedNotes.push({ notes: /** @type {HTMLDetailsElement} */ (notes), place, open: /** @type {HTMLDetailsElement} */ (notes).open });
    after.after(notes);
    /** @type {HTMLDetailsElement} */ (notes).open = true;
    after = notes;
  }
  return presentedNotes.map(({ notes }) => notes);
}

// An embed view inside an <iframe> tells the page holding it how tall it is, whenever that
// changes (the figure drawn, a caption rewrapped): the embed code's script sets the frame's
// height from it, so the figure is never cut off nor followed by a blank band. The height is
// no secret: any page may hear it.
const heightReporter = new ResizeObserver(() => {
  const height = Math.ceil(document.documentElement.scrollHeight);
  if (!document.body.classList.contains("embed") || height === toldHeight) return;
  toldHeight = height;
  window.parent.postMessage({ type: "calibra:embed-height", height }, "*");
});

// Shows the whole page for "none", or only `figureId`'s canvas, its caption and menu, its lab's
// slider bar and the controls marked data-embed-with for it; `articleHref` is the link back to
// the article in the same state, kept current at every call. `present` adds presentation mode,
// whose bar names the figure's place among `figures` (Rust's list).
export function showEmbed({ figureId, articleHref, present, figures }) {
  const link = /** @type {HTMLAnchorElement} */ (document.getElementById("embed-article-link"));
  link.href = articleHref;
  const view = `${figureId}:${present}`;
  if (view === shown) return;
  shown = view;
  const embedded = figureId !== "none";
  // Presentation mode presents a figure; with none embedded it is the article.
  const presenting = present && embedded;
  document.body.classList.toggle("present", presenting);
  const nav = document.getElementById("presentation-nav");
  nav.hidden = !presenting;
  for (const element of document.querySelectorAll(".embed-keep, .embed-path")) element.classList.remove("embed-keep", "embed-path");
  restoreNotes();
  document.body.classList.toggle("embed", embedded);
  link.hidden = !embedded || presenting;
  if (!embedded) {
    // Leaving presentation mode returns the reader to the figure last presented, not to the
    // top of the article.
    if (lastPresented) document.getElementById(lastPresented)?.closest("figure")?.scrollIntoView({ block: "center" });
    lastPresented = null;
    return;
  }
  lastPresented = presenting ? figureId : null;
  if (window.parent !== window && !presenting) heightReporter.observe(document.body);
  if (presenting) {
    const index = figures.findIndex((figure) => figure.id === figureId);
    document.getElementById("presentation-position").textContent = `Figure ${index + 1} of ${figures.length}: ${figures[index].title}`;
    window.scrollTo(0, 0);
  }
  const canvas = document.getElementById(figureId);
  const lab = canvas.closest(".lab");
  const figure = canvas.closest("figure");
  const kept = [
    presenting ? nav : link.parentElement,
    canvas,
    figure,
    document.querySelector(".status"),
    lab.querySelector(".slider-bar"),
    ...document.querySelectorAll(`[data-embed-with~="${figureId}"]`),
    ...(presenting ? presentNotes(figure, figureId) : []),
  ];
  for (const element of kept) {
    element.classList.add("embed-keep");
    for (let parent = element.parentElement; parent && parent !== document.body; parent = parent.parentElement) parent.classList.add("embed-path");
  }
}
