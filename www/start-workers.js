// Starts the inference workers while the browser is still parsing the article: their threads
// start, and their module compiles, alongside the page's own start (on two cores that saves
// about a quarter of a second before the first chart). A classic script in the head, so it
// runs before the article is parsed; index.js takes the workers over (InferencePool), and
// they fetch the shown network once the page has read which it is.
//
// A worker that fails before index.js listens is remembered in `failure`, so that the page
// still says so.
window.calibraWorkers = Array.from({ length: Math.max(1, Math.min(4, Math.floor((navigator.hardwareConcurrency || 2) / 2))) }, () => {
  const worker = new Worker(new URL("worker.js", document.baseURI), { type: "module" });
  const failure = new Promise((resolve) => worker.addEventListener("error", resolve, { once: true }));
  return { worker, failure };
});
