// @ts-check
// Starts the inference workers while the browser is still parsing the article: their threads
// start, and their module compiles, alongside the page's own start, which brings the first
// chart sooner (docs/benchmarks.md). A classic script in the head, so it
// runs before the article is parsed; index.js takes the workers over (InferencePool), and
// they load the shown network once the page has read which it is.
//
// The page reads which network it shows only once its own module is in and has compiled (Rust
// reads the link), and the weights' request then waited for both. Where the link names no
// network, or the one the page shows without a name (the script's data-model, with its
// weights' path in data-weights), the workers ask for those weights at once ("prefetch"), and
// the page's "load" takes the download over; a link that names another network waits for the
// page, as before, so no unneeded weights share the line.
//
// Half the cores (one to four) get a worker at once: the page's own start needs the others.
// Once the page has drawn, the pool may start `later` more, up to one a core (at most four),
// while it has images queued: a second worker brings all the images in sooner, but started at
// once it delays the first chart (docs/benchmarks.md).
//
// A worker that fails before index.js listens is remembered in `failure`, so that the page
// still says so.
(() => {
  // Logits kept by an earlier visit (logits-cache.js's hint, read at once): the cache note is
  // likely shown, so style.css keeps its space from the first paint, and the article does not
  // move down when index.js shows it (CachedLogits.showNote drops the class once it knows).
  let kept = false;
  try {
    kept = localStorage.getItem("calibra-logits-kept") !== null;
  } catch {
    // No localStorage (a blocked storage): no space kept, as on a first visit.
  }
  if (kept) document.documentElement.classList.add("logits-kept");
  const cores = navigator.hardwareConcurrency || 2;
  const start = () => {
    const worker = new Worker(new URL("worker.js", document.baseURI), { type: "module" });
    const failure = new Promise((resolve) => worker.addEventListener("error", resolve, { once: true }));
    return { worker, failure };
  };
  const early = Math.max(1, Math.min(4, Math.floor(cores / 2)));
  const workers = Array.from({ length: early }, start);
  const { model, weights } = /** @type {HTMLScriptElement} */ (document.currentScript).dataset;
  const named = new URLSearchParams(location.hash.slice(1)).get("model");
  if (weights && (named === null || named === model)) {
    // A revisit likely finds the network's logits kept and infers nothing at first: its
    // workers do not warm their code up, which would hold back the weights' digest, by which
    // the kept logits are found.
    for (const { worker } of workers) worker.postMessage({ type: "prefetch", url: weights, warm: !kept });
  }
  window.calibraWorkers = { early: workers, later: Math.max(0, Math.min(4, cores) - early), start };
})();
