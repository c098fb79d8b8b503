// Writes the Fashion-MNIST test set the page serves, assets/fashion-mnist/t10k-{images-idx3,
// labels-idx1}-ubyte.gz, from Debian's dataset-fashion-mnist: the same IDX bytes, gzipped again
// with Zopfli (@gfx/zopfli, 5 iterations), which packs them a few percent smaller than the
// files as shipped; every reader downloads the images. src/data_tests.rs checks that the committed files
// unzip to the SHA-256 of Debian's.
// Rerun: (cd scripts && npm install --no-save @gfx/zopfli@1.0.15 && node recompress-test-images.mjs [DIR])
// where DIR holds Debian's files (default /usr/share/datasets/fashion-mnist).
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { gunzipSync } from "node:zlib";

import { gzipAsync } from "@gfx/zopfli";

const ITERATIONS = 5;
const source = process.argv[2] ?? "/usr/share/datasets/fashion-mnist";
const assets = fileURLToPath(new URL("../assets/fashion-mnist/", import.meta.url));

for (const name of ["t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"]) {
  const shipped = readFileSync(path.join(source, name));
  const idx = gunzipSync(shipped);
  const packed = Buffer.from(await gzipAsync(idx, { numiterations: ITERATIONS }));
  if (!gunzipSync(packed).equals(idx)) throw new Error(`${name}: the recompressed file does not unzip to the same bytes`);
  writeFileSync(path.join(assets, name), packed);
  console.log(`${name}: ${shipped.length} -> ${packed.length} bytes`);
}
