// @ts-check
// The link: the hash Rust writes for each state, put into the address at most every
// HASH_WRITE_MS, so that the link always ends on the last state.

// Least time between two writes of the link's hash. Each history.replaceState costs the
// browser process's own thread several milliseconds, once per slider move; and Chromium ignores a page's history changes past 200 in 10 seconds, which a slider
// dragged at 60 frames a second passes, so the link could miss the last position.
const HASH_WRITE_MS = 200;

export class HashWriter {
  constructor() {
    /** @type {string | null} the hash not yet written */
    this.pending = null;
    /** @type {ReturnType<typeof setTimeout> | null} the timer that writes it */
    this.timer = null;
    this.lastWrite = -Infinity;
    /** @type {string | null} the address's hash as this page last saw it (after its own write, or a hashchange) */
    this.known = null;
  }

  /**
   * Writes `hash` into the address: at once when the last write is HASH_WRITE_MS old, otherwise
   * when it is (the latest hash asked for by then).
   * @param {string} hash
   */
  write(hash) {
    this.pending = hash;
    const wait = this.lastWrite + HASH_WRITE_MS - performance.now();
    if (wait <= 0) this.flush();
    else this.timer ??= setTimeout(() => this.flush(), wait);
  }

  /**
   * Writes the hash waiting to be written, if any. A hash that changed since the page last saw
   * it (a link followed, the address edited) is not overwritten: its hashchange, still to come,
   * applies that state and writes its hash.
   */
  flush() {
    clearTimeout(this.timer);
    this.timer = null;
    if (this.pending === null) return;
    if (this.known === null || location.hash === this.known) {
      // The default view's link is the address alone, without an empty "#".
      history.replaceState(null, "", this.pending ? `#${this.pending}` : `${location.pathname}${location.search}`);
      this.known = location.hash;
      this.lastWrite = performance.now();
    }
    this.pending = null;
  }

  /** Notes a hash the address changed to by itself (a hashchange). */
  seen() {
    this.known = location.hash;
  }

  /** The address of this view, its hash up to date (the figure menus' "Copy link"). */
  link() {
    this.flush();
    return location.href;
  }
}
