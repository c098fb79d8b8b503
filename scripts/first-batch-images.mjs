// Writes the small file the page fetches at once, so that its first batch need not wait for the
// whole file of test images: the IDX header and the first COUNT images of SOURCE (gzipped IDX),
// gzipped, to DEST. scripts/build-site runs it with COUNT = the page's first batch
// (FIRST_BATCH in src/page/mod.rs; tests/e2e/loading.test.mjs checks the two agree).
//
//   node scripts/first-batch-images.mjs SOURCE DEST COUNT
import { readFileSync, writeFileSync } from "node:fs";
import { constants, gunzipSync, gzipSync } from "node:zlib";

// An IDX3 file's header: magic, count, rows, columns (four big-endian 32-bit words).
const HEADER = 16;

const [source, dest, countArg] = process.argv.slice(2);
const count = Number(countArg);
if (!source || !dest || !Number.isInteger(count) || count < 1) {
  throw new Error("usage: node scripts/first-batch-images.mjs SOURCE DEST COUNT (a whole number of images)");
}
const idx = gunzipSync(readFileSync(source));
if (idx.length < HEADER) throw new Error(`${source} ends inside its IDX header`);
const size = idx.readUInt32BE(8) * idx.readUInt32BE(12);
const end = HEADER + count * size;
if (idx.length < end) throw new Error(`${source} holds fewer than ${count} images`);
writeFileSync(dest, gzipSync(idx.subarray(0, end), { level: constants.Z_BEST_COMPRESSION }));
