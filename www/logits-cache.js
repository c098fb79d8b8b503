// @ts-check
// The logits cache: a network's logits on an image set, with its penultimate features (the
// feature-based OOD detectors read them), kept in this browser's IndexedDB between visits under
// the SHA-256 of the network's weights and of the images (see cached-logits.js), so that a
// revisit draws everything without inference and a changed network or image set never meets
// old logits. The features are kept apart, in a store of their own under the same key: a
// revisit's first frame needs the logits alone, and reading a set's features (twelve times its
// logits' bytes) would delay it. A corrupted copy's features are not kept. It holds at most
// ENTRIES sets (the test images' logits take 0.4 MB and their features 5.1 MB, an OOD set's 0.08
// and 1 MB, a corrupted copy's logits 0.4 MB), the oldest stored dropped first: room for all 13
// networks on the test images and the OOD sets (52 sets, about 115 MB, where logits alone took
// 8 MB) and for a dozen corrupted copies of the shift lab, each a set of its own.
//
// Without IndexedDB or crypto.subtle (a page served over plain HTTP from a host other than
// localhost), or when the browser refuses to store, every lookup misses and nothing is kept:
// the page then infers as it would without a cache.

const DATABASE = "calibra-logits";
const STORE = "logits";
const FEATURES_STORE = "features";
export const ENTRIES = 64;

// Whether this browser can keep logits at all.
export const available = typeof indexedDB === "object" && globalThis.crypto?.subtle !== undefined;

let opened = null;

// Set once logits have been kept: a hint, in localStorage, that read at once says whether asking
// the database is worth it. On a first visit IndexedDB, opening (and creating) its database,
// answered long after the navigation, and the first batch waited for it. The database stays the truth: a hint whose logits are gone costs only that wait.
// start-workers.js reads it too, under this name, to keep the cache note's space.
const KEPT_HINT = "calibra-logits-kept";

// The page's localStorage; the inference worker, which has none, imports this module only to
// hash (its use there throws, and is caught).
const storage = () => /** @type {{ localStorage: { getItem(key: string): string | null, setItem(key: string, value: string): void } }} */ (/** @type {unknown} */ (globalThis)).localStorage;

// Whether the hint says logits were kept; true where localStorage cannot be read.
export function keptBefore() {
  try {
    return storage().getItem(KEPT_HINT) !== null;
  } catch {
    return true;
  }
}

// The database, opened (and created) once.
function database() {
  opened ??= new Promise((resolve, reject) => {
    // Version 2 added the features' store (version 1 kept them in the logits' entries).
    const request = indexedDB.open(DATABASE, 2);
    request.onupgradeneeded = () => {
      const db = request.result;
      if (!db.objectStoreNames.contains(STORE)) db.createObjectStore(STORE, { keyPath: "key" }).createIndex("stored", "stored");
      db.createObjectStore(FEATURES_STORE, { keyPath: "key" });
    };
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
  return opened;
}

// Runs `work` on the logits' store and the features' in one transaction; once the transaction
// has committed, resolves with what `work` returned: a request's result, or anything else as it
// is then (an object the requests' handlers filled).
async function transaction(mode, work) {
  const db = await database();
  return new Promise((resolve, reject) => {
    const tx = db.transaction([STORE, FEATURES_STORE], mode);
    const value = work(tx.objectStore(STORE), tx.objectStore(FEATURES_STORE));
    tx.oncomplete = () => resolve(value instanceof IDBRequest ? value.result : value);
    tx.onerror = () => reject(tx.error);
    tx.onabort = () => reject(tx.error);
  });
}

// The SHA-256 of some bytes, in hex.
export async function sha256(bytes) {
  const hash = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return Array.from(hash, (byte) => byte.toString(16).padStart(2, "0")).join("");
}

// Features per image, as the inference worker returns them.
export const FEATURES = 128;

// The key of one network's logits on one image set (and of its features): both digests and the
// row width. A version 1 entry (logits alone, from before the features) and a version 2 entry
// (the test images keyed by their pixels, not their file) are never read.
const weightsPrefix = (weightsDigest) => `v3:${weightsDigest}:`;
export const cacheKey = (weightsDigest, imagesDigest, classes) => `${weightsPrefix(weightsDigest)}${imagesDigest}:${classes}`;

// Whether any logits of the network with these weights are kept, on any image set; without a
// digest, whether any logits at all are kept.
export async function holdsAny(weightsDigest) {
  if (!available || !keptBefore()) return false;
  const prefix = weightsDigest === undefined ? "" : weightsPrefix(weightsDigest);
  try {
    return (await transaction("readonly", (store) => store.count(IDBKeyRange.bound(prefix, `${prefix}\uffff`)))) > 0;
  } catch {
    return false;
  }
}

// The logits stored under `key` ({logits: Float32Array, features: whether their features are
// kept too, stored: ms since 1970}), or null.
export async function lookup(key) {
  if (!available) return null;
  try {
    const { entry, features } = await transaction("readonly", (store, featureStore) => ({
      entry: store.get(key),
      features: featureStore.count(key),
    }));
    return entry.result ? { logits: new Float32Array(entry.result.logits), features: features.result > 0, stored: entry.result.stored } : null;
  } catch {
    return null;
  }
}

// The features stored under `key` (Float32Array), or null.
export async function lookupFeatures(key) {
  if (!available) return null;
  try {
    const entry = await transaction("readonly", (_, featureStore) => featureStore.get(key));
    return entry ? new Float32Array(entry.features) : null;
  } catch {
    return null;
  }
}

// Keeps `logits` and `features` (Float32Array, or null for none) under `key`, dropping the
// oldest entries beyond ENTRIES with their features.
export async function keep(key, logits, features) {
  if (!available) return;
  try {
    await transaction("readwrite", (store, featureStore) => {
      store.put({ key, logits: logits.slice().buffer, stored: Date.now() });
      if (features) featureStore.put({ key, features: features.slice().buffer });
      else featureStore.delete(key);
      const count = store.count();
      count.onsuccess = () => {
        let excess = count.result - ENTRIES;
        if (excess <= 0) return;
        store.index("stored").openCursor().onsuccess = (event) => {
          const cursor = event.target.result;
          if (cursor && excess-- > 0) {
            featureStore.delete(cursor.primaryKey);
            cursor.delete();
            cursor.continue();
          }
        };
      };
    });
    storage().setItem(KEPT_HINT, "1");
  } catch {
    // A browser that refuses to store (quota, private mode) simply gets no cache.
  }
}

// Drops the entries under `keys`.
export async function forget(keys) {
  if (!available || !keys.length) return;
  try {
    await transaction("readwrite", (store, featureStore) => {
      for (const key of keys) {
        store.delete(key);
        featureStore.delete(key);
      }
    });
  } catch {
    // Nothing kept, nothing to drop.
  }
}
