// @ts-check
// What the page measures of itself, which the benchmarks and the tests read (window.calibra,
// see scripts/bench): its timings, and the wasm calls of each animation frame.

/** @type {{ corruptions: { set: string, millis: number }[], [key: string]: any }} */
export const timings = { draws: [], conformalDraws: [], oodDraws: [], shiftDraws: [], corruptions: [], intervals: [], firstChart: null, firstChartImages: null, inferenceDone: {} };
// calls.frames holds the number of wasm calls each animation frame made, calls.named the calls
// of each method.
/** @type {{ total: number, frames: number[], named: Record<string, number> }} */
export const calls = { total: 0, frames: [], named: {} };

/**
 * Counts every call into the wasm module's Page, for the one-call-per-frame check.
 * @template {object} T
 * @param {T} target
 * @returns {T}
 */
export function counted(target) {
  return /** @type {T} */ (new Proxy(/** @type {object} */ (target), {
    get(object, key) {
      const value = Reflect.get(object, key);
      if (typeof value !== "function") return value;
      return (/** @type {any[]} */ ...args) => {
        calls.total += 1;
        calls.named[String(key)] = (calls.named[String(key)] ?? 0) + 1;
        return value.apply(object, args);
      };
    },
  }));
}
