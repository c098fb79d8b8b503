// What the page's scripts put on `window` for one another and for the tests.

interface Window {
  /** The inference workers start-workers.js starts from the head, which index.js takes over. */
  calibraWorkers: {
    early: { worker: Worker; failure: Promise<ErrorEvent> }[];
    later: number;
    start: () => { worker: Worker; failure: Promise<ErrorEvent> };
  };
  /** The page's timings, call counts and a few accessors, for the benchmarks and the tests. */
  calibra: Record<string, unknown>;
}
