// @ts-check
// The page offline: registers the service worker (sw.js) once the first chart is on screen and
// the test images are inferred, says beside each lab what the network did not deliver for it,
// with a retry, offers a reload when a new build is ready (never a mix of two builds' files),
// and keeps the whole site for offline use when the reader asks (the footer's button).
import { $ } from "./dom.js";

/** @typedef {import("./inference-pool.js").Unfetched} Unfetched */

const MANIFEST_URL = "build-manifest.json";

/**
 * What a lab says of a file the network did not deliver.
 * @param {Unfetched} unfetched
 * @param {(model: number) => string} title a network's name
 */
function unfetchedSentence({ what, model, set, offline, message }, title) {
  const thing = what === "network" ? `The network “${title(model)}”` : what === "odin" ? "ODIN's module" : set === "mnist" ? "The MNIST digits" : `The images “${set}”`;
  const verb = what === "images" && set === "mnist" ? "have" : "has";
  return offline ? `${thing} ${verb} not been downloaded yet, and you are offline.` : `${thing} could not be downloaded (${message}).`;
}

// "19.2 MB".
const megabytes = (/** @type {number} */ bytes) => `${(bytes / 1e6).toFixed(1)} MB`;

/**
 * Sends `message` to service worker `worker` and calls `onAnswer` with each answer; resolves
 * with the last, once it is {status: "done"} or {status: "failed"}.
 * @param {ServiceWorker} worker
 * @param {object} message
 * @param {(answer: any) => void} [onAnswer]
 * @returns {Promise<any>}
 */
function ask(worker, message, onAnswer = () => {}) {
  const channel = new MessageChannel();
  return new Promise((resolve) => {
    channel.port1.onmessage = ({ data }) => {
      onAnswer(data);
      if (data.status !== "progress") resolve(data);
    };
    worker.postMessage(message, [channel.port2]);
  });
}

export class Offline {
  /**
   * @param {{ title: (model: number) => string, onRetry: () => void }} options
   *   title: a network's name; onRetry: the reader asked to fetch again what was missing
   */
  constructor({ title, onRetry }) {
    this.title = title;
    this.onRetry = onRetry;
    /** @type {Promise<ServiceWorkerRegistration | null> | null} */
    this.registration = null;
    // Each lab's notice, by the lab's id.
    /** @type {Map<string, HTMLElement>} */
    this.notices = new Map();
  }

  /** Whether this browser, on this address, can keep the site (a secure context). */
  get possible() {
    return "serviceWorker" in navigator && window.isSecureContext;
  }

  /**
   * Shows, at the top of each lab, what the network did not deliver for it, with a retry; a
   * lab with nothing missing shows nothing.
   * @param {Iterable<Unfetched>} unfetched
   */
  showUnfetched(unfetched) {
    /** @type {Map<string, string[]>} */
    const sentences = new Map();
    for (const item of unfetched) {
      for (const lab of item.labs) sentences.set(lab, [...(sentences.get(lab) ?? []), unfetchedSentence(item, this.title)]);
    }
    for (const [lab, notice] of this.notices) if (!sentences.has(lab)) notice.hidden = true;
    for (const [lab, lines] of sentences) {
      const notice = this.notice(lab);
      notice.querySelector("p").textContent = lines.join(" ");
      notice.hidden = false;
    }
  }

  /** Lab `lab`'s notice, made under its heading the first time. */
  notice(/** @type {string} */ lab) {
    if (!this.notices.has(lab)) {
      const notice = document.createElement("div");
      notice.className = "unfetched";
      notice.setAttribute("role", "alert");
      const retry = document.createElement("button");
      retry.type = "button";
      retry.textContent = "Retry";
      retry.addEventListener("click", () => this.onRetry());
      notice.append(document.createElement("p"), retry);
      $(lab).querySelector("h2").after(notice);
      this.notices.set(lab, notice);
    }
    return this.notices.get(lab);
  }

  /**
   * Registers the service worker (once; the first call once the test images are inferred), has it keep what
   * the page has already fetched, and shows the footer's button with the site's size.
   * @returns {Promise<ServiceWorkerRegistration | null>}
   */
  register() {
    this.registration ??= this.possible ? this.#register() : Promise.resolve(null);
    return this.registration;
  }

  async #register() {
    const container = navigator.serviceWorker;
    /** @type {ServiceWorkerRegistration} */
    let registration;
    try {
      registration = await container.register("sw.js");
    } catch {
      // Offline, a revisit's registration stands; a first one waits for the next visit.
      registration = await container.getRegistration();
    }
    // None where the browser refuses service workers (a policy, a test's block).
    if (!registration) return null;
    // A new build is ready once its worker has installed while this page has a controller.
    const offerUpdate = () => {
      if (registration.waiting && container.controller) $("offline-update").hidden = false;
    };
    offerUpdate();
    registration.addEventListener("updatefound", () => {
      const installing = registration.installing;
      installing?.addEventListener("statechange", () => installing.state === "installed" && offerUpdate());
    });
    // The network sent a file of another build: look for it now.
    container.addEventListener("message", ({ data }) => data?.type === "stale" && registration.update().catch(() => {}));
    $("offline-reload").addEventListener("click", () => {
      container.addEventListener("controllerchange", () => location.reload(), { once: true });
      if (registration.waiting) registration.waiting.postMessage({ type: "activate" });
      else location.reload();
    });
    // Every visit sweeps: a first one fetched its files before the worker was there, and a
    // revisit in Chromium fetches what the build's cache lacks past the worker (sw.js's static
    // routes). A reload or a closed tab keeps what the page fetched since the last sweep.
    window.addEventListener("pagehide", () => container.controller?.postMessage({ type: "sweep" }));
    await this.sweep();
    this.showSize();
    return registration;
  }

  /** Resolves once the service worker has kept what the browser's HTTP cache holds of the site. */
  async sweep() {
    const ready = await navigator.serviceWorker.ready;
    await ask(ready.active, { type: "sweep" });
  }

  /** Writes the site's size on the footer's button, from the build's manifest. */
  async showSize() {
    try {
      const { files } = await (await fetch(MANIFEST_URL)).json();
      const total = Object.values(files).reduce((sum, entry) => sum + entry.bytes, 0);
      $("keep-offline").textContent = `Keep everything for offline use (${megabytes(total)})`;
    } catch {
      // Offline and not kept: the button keeps its plain label.
    }
  }

  /** Wires the footer's button: keeps every file of the build, saying how far it is. */
  wireKeepButton() {
    const button = /** @type {HTMLButtonElement} */ ($("keep-offline"));
    const status = $("keep-offline-status");
    if (!this.possible) {
      button.disabled = true;
      status.textContent = "This browser cannot keep calibra for offline use from this address (it needs https or localhost).";
      return;
    }
    button.addEventListener("click", async () => {
      button.disabled = true;
      status.textContent = "Starting…";
      let total = 0;
      try {
        if (!(await this.register())) throw new Error("the service worker could not be registered");
        const ready = await navigator.serviceWorker.ready;
        const answer = await ask(ready.active, { type: "keep-all" }, (progress) => {
          if (progress.status !== "progress") return;
          total = progress.total;
          status.textContent = `Downloading: ${megabytes(progress.bytes)} of ${megabytes(total)}…`;
        });
        if (answer.status === "failed") throw new Error(answer.message);
        status.textContent = `Done: all ${megabytes(total)} are kept in this browser; every lab now works offline here.`;
      } catch (error) {
        status.textContent = `Not everything could be kept: ${error.message}. Try again once the network is back.`;
      } finally {
        button.disabled = false;
      }
    });
  }
}
