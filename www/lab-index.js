// @ts-check
// The labs' index (nav#lab-index in index.html) and the skip link to it. A link moves to its
// lab without touching the URL's hash, which holds the page's state (index.js reads it), and
// the lab in view is marked (aria-current); the index's height is the page's scroll padding, so
// that whatever is scrolled to lands below it, and each sticky slider bar's --index-height, so
// that the bars stop under it.

const index = /** @type {HTMLElement} */ (document.getElementById("lab-index"));
/** @type {((landed: Promise<void>) => void)[]} */
const jumpListeners = [];

/**
 * Calls `listener` at the start of each jump with a promise that resolves once the jump's
 * scroll ends: the page draws nothing until then (index.js), so that the labs it passes, which
 * would draw as they came into view and grow, do not move its target while it flies.
 * @param {(landed: Promise<void>) => void} listener
 */
export function onJump(listener) {
  jumpListeners.push(listener);
}
const links = [...index.querySelectorAll("a")];
const reducedMotion = matchMedia("(prefers-reduced-motion: reduce)");

/** Scrolls to `target` (at once when the reader asks for reduced motion) and focuses it, or
 * its first heading, so that the next Tab continues from there. The labs passed on the way are
 * not drawn (onJump); once the scroll ends, the labs in view draw, and one just above the
 * window may grow: the browser's scroll anchoring keeps the target in place, and where it does
 * not, the target is put back (a few times at most).
 * @param {HTMLElement} target */
function moveTo(target) {
  // A browser without scrollend draws the labs as the jump passes them.
  if ("onscrollend" in window) {
    const landed = new Promise((resolve) => {
      addEventListener("scrollend", () => resolve(undefined), { once: true });
      // A jump to where the page already is scrolls nowhere and ends no scroll.
      setTimeout(resolve, 3000);
    });
    for (const listener of jumpListeners) listener(landed);
  }
  let corrections = 3;
  const realign = () => {
    const offset = target.getBoundingClientRect().top - index.getBoundingClientRect().height;
    if (Math.abs(offset) > 2 && corrections-- > 0) target.scrollIntoView({ behavior: "instant", block: "start" });
    else removeEventListener("scrollend", realign);
  };
  addEventListener("scrollend", realign);
  target.scrollIntoView({ behavior: reducedMotion.matches ? "auto" : "smooth", block: "start" });
  const focus = /** @type {HTMLElement} */ (target.querySelector("h2") ?? target);
  if (!focus.hasAttribute("tabindex")) focus.setAttribute("tabindex", "-1");
  focus.focus({ preventScroll: true });
}

/** @param {HTMLAnchorElement} link */
function follow(link) {
  link.addEventListener("click", (event) => {
    const target = document.getElementById((link.getAttribute("href") ?? "").slice(1));
    if (!target) return;
    event.preventDefault();
    moveTo(target);
  });
}
for (const link of links) follow(link);
for (const link of document.querySelectorAll("a.skip-link")) follow(/** @type {HTMLAnchorElement} */ (link));

// The lab crossing the line a third of the way down the window is the one being read.
const current = new IntersectionObserver(
  (entries) => {
    for (const entry of entries) {
      if (!entry.isIntersecting) continue;
      for (const link of links) {
        if (link.getAttribute("href") === `#${entry.target.id}`) link.setAttribute("aria-current", "location");
        else link.removeAttribute("aria-current");
      }
    }
  },
  { rootMargin: "-33% 0px -66% 0px" },
);
for (const link of links) {
  const lab = document.getElementById((link.getAttribute("href") ?? "").slice(1));
  if (lab) current.observe(lab);
}

// Set on the bars and as the root's own scroll padding, never as a custom property of the root:
// every element inherits those, and setting one there restyled the whole article before the
// page's script could run (docs/benchmarks.md, "Loading").
const sliderBars = /** @type {NodeListOf<HTMLElement>} */ (document.querySelectorAll(".slider-bar"));
new ResizeObserver(([entry]) => {
  const height = `${entry.borderBoxSize[0].blockSize}px`;
  document.documentElement.style.scrollPaddingTop = height;
  for (const bar of sliderBars) bar.style.setProperty("--index-height", height);
}).observe(index);
