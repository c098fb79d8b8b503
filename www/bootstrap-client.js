// @ts-check
// The page's side of the bootstrap worker (bootstrap-worker.js): one request at a time, the
// rivals' before the anatomy chart's before the feature scores' before the paired difference's
// before the ranking's before the intervals' before the normalised temperature's; of the requests of a kind that
// come meanwhile only the last frame's wait (a dragged slider asks at every T it passes, and
// only where it rests matters).

/** @typedef {import("./messages.js").BootstrapRequest} BootstrapRequest */
/** @typedef {import("./messages.js").BootstrapAnswer} BootstrapAnswer */
/** @typedef {import("./messages.js").Halves} Halves */
/** @typedef {import("./messages.js").DifferenceScores} DifferenceScores */
/** @typedef {import("./messages.js").FeatureInputs} FeatureInputs */
/** @typedef {import("./messages.js").RankingScores} RankingScores */
/** @typedef {"rivals" | "anatomy" | "features" | "difference" | "ranking" | "intervals" | "normalized"} RequestType */

/**
 * Posts a message to the bootstrap worker, typed as bootstrap-worker.js reads it.
 * @param {Worker} worker
 * @param {BootstrapRequest} message
 * @param {Transferable[]} [transfer]
 */
const post = (worker, message, transfer = []) => worker.postMessage(message, transfer);

// How long the slider rests before its bootstrap intervals are asked for (requestAtRest).
const INTERVAL_REST_MS = 250;

class BootstrapWorker {
  /**
   * @param {{ halves(): Halves, difference_scores(request: object): DifferenceScores,
   *   feature_inputs(request: object): FeatureInputs, ranking_scores(request: object): RankingScores,
   *   normalized_halves(request: object): Halves }} page
   *   where the data a request is computed on comes from
   * @param {(type: RequestType, request: any, answer: any) => void} onAnswer
   * @param {(message: string) => void} onError
   */
  constructor(page, onAnswer, onError) {
    this.page = page;
    this.worker = new Worker(new URL("./bootstrap-worker.js", import.meta.url), { type: "module" });
    /** @type {string | false} the message being computed, as JSON, or false */
    this.busy = false;
    /** @type {Record<RequestType, any[]>} */
    this.waiting = { rivals: [], anatomy: [], features: [], difference: [], ranking: [], intervals: [], normalized: [] };
    /** @type {string | null} "model:split" of the halves the worker holds */
    this.sent = null;
    this.worker.onmessage = (/** @type {MessageEvent<BootstrapAnswer>} */ event) => {
      this.busy = false;
      const answer = event.data;
      if (answer.status === "error") onError(answer.message);
      else if (answer.status === "intervals") onAnswer("intervals", answer.request, answer.intervals);
      else if (answer.status === "rivals") onAnswer("rivals", answer.request, answer.rivals);
      else if (answer.status === "features") onAnswer("features", answer.request, { knn_neighbours: answer.knn_neighbours, scores: answer.scores });
      else if (answer.status === "ranking") onAnswer("ranking", answer.request, answer.ranking);
      else if (answer.status === "anatomy") onAnswer("anatomy", answer.request, answer.anatomy);
      else if (answer.status === "normalized") onAnswer("normalized", answer.request, answer.comparison);
      else onAnswer("difference", answer.request, answer.difference);
      this.next();
    };
    this.worker.onerror = (event) => onError(event.message || "could not start");
  }

  /**
   * Replaces the waiting requests of one `type` with a frame's (less the one being computed).
   * @param {RequestType} type
   * @param {any[]} requests
   */
  request(type, requests) {
    this.waiting[type] = requests.filter((request) => JSON.stringify({ type, request }) !== this.busy);
    this.next();
  }

  /** Sends the next waiting request, with the halves first if the worker lacks them. */
  next() {
    /** @type {RequestType | undefined} */
    const type = /** @type {RequestType[]} */ (Object.keys(this.waiting)).find((kind) => this.waiting[kind].length > 0);
    if (this.busy || type === undefined) return;
    const request = this.waiting[type].shift();
    // The paired difference's, the ranking's, the feature detectors' and the normalised
    // temperature's data go with the request (transferred); where the page no longer has it (another temperature or split),
    // a later frame asks again.
    const payloads = {
      difference: () => this.page.difference_scores(request),
      ranking: () => this.page.ranking_scores(request),
      features: () => this.page.feature_inputs(request),
      normalized: () => this.page.normalized_halves(request),
    };
    if (type in payloads) {
      let data;
      try {
        data = payloads[type]();
      } catch {
        return this.next();
      }
      this.busy = JSON.stringify({ type, request });
      const buffers = Object.values(data).filter((values) => ArrayBuffer.isView(values)).map((values) => values.buffer);
      post(this.worker, /** @type {BootstrapRequest} */ ({ type, request, ...data }), buffers);
      return;
    }
    const key = `${request.model}:${request.split}`;
    if (this.sent !== key) {
      const halves = this.page.halves();
      if (`${halves.model}:${halves.split}` !== key) return this.next();
      const buffers = [halves.calibration_logits, halves.calibration_labels, halves.evaluation_logits, halves.evaluation_labels].map((values) => values.buffer);
      post(this.worker, { type: "data", ...halves }, buffers);
      this.sent = key;
    }
    /** @type {BootstrapRequest} */
    const message = { type: /** @type {"intervals" | "rivals"} */ (type), request };
    this.busy = JSON.stringify(message);
    post(this.worker, message);
  }

  /** Ends the worker: the data it holds is no longer shown. */
  terminate() {
    this.worker.terminate();
  }
}

/**
 * The bootstrap worker as the page uses it: started at its first request, ended when the data
 * shown changes; its answers kept in Rust's Page, each then redrawing the lab that shows it.
 */
export class Bootstrap {
  /**
   * @param {{ halves(): Halves, difference_scores(request: object): DifferenceScores,
   *   feature_inputs(request: object): FeatureInputs, ranking_scores(request: object): RankingScores,
   *   add_ranking(request: object, answer: object): void,
   *   add_intervals(request: object, answer: object): void, add_rivals(request: object, answer: object): void,
   *   add_difference(request: object, answer: object): void,
   *   add_feature_scores(request: object, knn_neighbours: number, scores: Float64Array): void,
   *   add_anatomy(request: object, answer: object): void,
   *   normalized_halves(request: object): Halves, add_comparison(request: object, answer: object): void }} page
   * @param {(type: RequestType) => void} onKept told which kind of answer was kept
   * @param {(message: string) => void} onError
   */
  constructor(page, onKept, onError) {
    this.page = page;
    this.onKept = onKept;
    this.onError = onError;
    /** @type {BootstrapWorker | null} */
    this.worker = null;
    /** @type {ReturnType<typeof setTimeout> | undefined} */
    this.intervalTimer = undefined;
  }

  /**
   * Asks for requests of one type; of the requests of a kind only the last asked wait.
   * @param {RequestType} type
   * @param {object[]} requests
   */
  request(type, requests) {
    this.worker ??= new BootstrapWorker(this.page, (kind, request, answer) => this.keep(kind, request, answer), (message) => this.onError(`The bootstrap worker failed: ${message}`));
    this.worker.request(type, requests);
  }

  /**
   * Asks for a frame's intervals once the slider has rested for INTERVAL_REST_MS: while it
   * moves, the worker would take a core from the frames (on two cores it lifted the slider
   * frame's p95) for temperatures already left behind. The worker starts at the first request,
   * once inference is done, so it never competes with it.
   * @param {object[]} requests
   */
  requestAtRest(requests) {
    this.cancelIntervals();
    this.intervalTimer = setTimeout(() => this.request("intervals", requests), INTERVAL_REST_MS);
  }

  /** Forgets the intervals asked for at rest and not yet sent: they belong to a state left. */
  cancelIntervals() {
    clearTimeout(this.intervalTimer);
  }

  /**
   * Ends the worker: it holds the halves of the data shown before, so a new one starts with the
   * next request, and no interval or rival computed on the old data can arrive.
   */
  end() {
    this.cancelIntervals();
    this.worker?.terminate();
    this.worker = null;
  }

  /**
   * Keeps intervals, rivals, the anatomy chart's curves, feature scores, a ranking, a paired
   * difference or a comparison of the two temperature scalings the worker computed.
   * @param {RequestType} type
   * @param {object} request
   * @param {any} answer
   */
  keep(type, request, answer) {
    try {
      if (type === "intervals") this.page.add_intervals(request, answer);
      else if (type === "rivals") this.page.add_rivals(request, answer);
      else if (type === "features") this.page.add_feature_scores(request, answer.knn_neighbours, answer.scores);
      else if (type === "ranking") this.page.add_ranking(request, answer);
      else if (type === "anatomy") this.page.add_anatomy(request, answer);
      else if (type === "normalized") this.page.add_comparison(request, answer);
      else this.page.add_difference(request, answer);
    } catch (error) {
      this.onError(error.message);
      return;
    }
    this.onKept(type);
  }
}
