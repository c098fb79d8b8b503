// The side-by-side inference benchmark's page (tests/e2e/peer-bench.mjs serves and drives it):
// the very same weights and test images through calibra's inference worker's module
// (Model.logits; the images are read by the page's module)
// through TensorFlow.js with its WebAssembly backend (XNNPACK, one thread: without cross-origin
// isolation it runs its non-threaded SIMD build) and through onnxruntime-web's WebAssembly
// backend (SIMD, one thread), after checking that all three give the same logits. Each engine
// runs batches of 1, 64 and 256 on one thread, the main one (the call calibra's inference worker
// makes). Each peer runs at its best-known configuration: its weights laid out once, before any
// timing, as it prefers them (TF.js: NHWC filters and the first dense layer's rows permuted to
// the NHWC flattening order, so that no activation is transposed, and [in, out] products fused
// with their bias and ReLU; onnxruntime-web: a session per batch size with the batch dimension
// fixed, full graph optimisation), and the pixels given to each as it takes them, prepared once
// outside the timed loop (the peers get float32 in [0, 1]; calibra takes the bytes and
// converts them inside its call, which its time includes). With ?check-only the page only
// compares the logits (tests/e2e/peer.test.mjs: two independent implementations of the
// network).
import initPage, { parse_images } from "./pkg/calibra.js";
import initWorker, { Model } from "./pkg-worker/calibra.js";
import * as ort from "./ort.wasm.min.mjs";
import { onnxModel } from "./onnx.js";

const WEIGHTS_URL = "assets/models/fmnist-ce.safetensors";
const IMAGES_URL = "assets/fashion-mnist/t10k-images-idx3-ubyte.gz";
const SIDE = 28;

const bytesOf = async (url) => new Uint8Array(await (await fetch(url)).arrayBuffer());
// The page's module reads IDX files unzipped: the browser unzips them.
const unzippedBytesOf = async (url) => new Uint8Array(await new Response((await fetch(url)).body.pipeThrough(new DecompressionStream("gzip"))).arrayBuffer());

// The tensors of a safetensors file in the format the networks ship in (src/model/shipped.rs),
// read into f32 as calibra reads them: F16 tensors as they are, and the I8 matrix as each byte
// times its row's scale (the F32 tensor of the same name with "_scale" appended, which is not
// one of the network's). { name: { shape, data: Float32Array } }.
const SCALE_SUFFIX = "_scale";
function readSafetensors(bytes) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const headerLength = Number(view.getBigUint64(0, true));
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + headerLength)));
  const data = (entry) => bytes.slice(8 + headerLength + entry.data_offsets[0], 8 + headerLength + entry.data_offsets[1]).buffer;
  const tensors = {};
  for (const [name, entry] of Object.entries(header)) {
    if (name === "__metadata__" || name.endsWith(SCALE_SUFFIX)) continue;
    if (entry.dtype === "F16") {
      tensors[name] = { shape: entry.shape, data: Float32Array.from(new Float16Array(data(entry))) };
    } else if (entry.dtype === "I8" && header[name + SCALE_SUFFIX]?.dtype === "F32") {
      const scales = new Float32Array(data(header[name + SCALE_SUFFIX]));
      const columns = entry.shape[1];
      tensors[name] = { shape: entry.shape, data: Float32Array.from(new Int8Array(data(entry)), (q, i) => q * scales[Math.floor(i / columns)]) };
    } else {
      throw new Error(`${name}: ${entry.dtype}, expected F16, or I8 with row scales`);
    }
  }
  return tensors;
}

// An [out, in] matrix as [in, out], the layout of a product without a transposed operand.
function transposed({ shape: [rows, columns], data }) {
  const out = new Float32Array(data.length);
  for (let r = 0; r < rows; r++) for (let c = 0; c < columns; c++) out[c * rows + r] = data[r * columns + c];
  return { shape: [columns, rows], data: out };
}

// candle flattens the last feature maps [C, H, W] channel first; an NHWC network flattens them
// [H, W, C]. The first dense layer's columns reordered once so that the NHWC features multiply
// the same weights (no transpose of the activation at run time).
function nhwcColumns({ shape: [rows, columns], data }, channels) {
  const cells = columns / channels;
  const out = new Float32Array(data.length);
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < channels; c++) {
      for (let cell = 0; cell < cells; cell++) out[r * columns + cell * channels + c] = data[r * columns + c * cells + cell];
    }
  }
  return { shape: [rows, columns], data: out };
}

// The network in TF.js ops, NHWC throughout, every layer one fused op (convolution or product,
// bias and ReLU together, as TF.js's converter emits for a trained model): candle's conv filters
// [out, in, kh, kw] become [kh, kw, in, out] and the dense weights [in, out], once. Takes
// float32 pixels in [0, 1].
function tfNetwork(tensors) {
  const tensor = ({ shape, data }) => tf.tensor(data, shape);
  const filter = (name) => tf.tidy(() => tf.transpose(tensor(tensors[name]), [2, 3, 1, 0]));
  const channels = tensors["conv2.bias"].shape[0];
  const w = {
    conv1: filter("conv1.weight"), b1: tensor(tensors["conv1.bias"]),
    conv2: filter("conv2.weight"), b2: tensor(tensors["conv2.bias"]),
    dense1: tensor(transposed(nhwcColumns(tensors["dense1.weight"], channels))), d1: tensor(tensors["dense1.bias"]),
    dense2: tensor(transposed(tensors["dense2.weight"])), d2: tensor(tensors["dense2.bias"]),
  };
  return (floats, n) => tf.tidy(() => {
    const x = tf.tensor4d(floats, [n, SIDE, SIDE, 1]);
    const block = (input, filter, bias) => tf.maxPool(tf.fused.conv2d({ x: input, filter, strides: 1, pad: "same", bias, activation: "relu" }), 2, 2, "valid");
    const flat = tf.reshape(block(block(x, w.conv1, w.b1), w.conv2, w.b2), [n, -1]);
    const hidden = tf.fused.matMul({ a: flat, b: w.dense1, bias: w.d1, activation: "relu" });
    return tf.fused.matMul({ a: hidden, b: w.dense2, bias: w.d2 }).dataSync();
  });
}

// The network through onnxruntime-web's WebAssembly backend, one thread, from the same tensors
// converted to ONNX (onnx.js), one session per batch size with the batch dimension fixed
// (freeDimensionOverrides) so that its optimiser sees static shapes. Takes float32 pixels in
// [0, 1]; its `run` answers with a promise, as onnxruntime-web's API does.
async function ortNetwork(tensors) {
  ort.env.wasm.numThreads = 1;
  ort.env.wasm.wasmPaths = new URL("./", location.href).href;
  const model = onnxModel(tensors);
  const sessions = new Map();
  const sessionFor = async (n) => {
    if (!sessions.has(n)) {
      sessions.set(n, await ort.InferenceSession.create(model, { executionProviders: ["wasm"], graphOptimizationLevel: "all", freeDimensionOverrides: { N: n } }));
    }
    return sessions.get(n);
  };
  return async (floats, n) => {
    const session = await sessionFor(n);
    const { logits } = await session.run({ images: new ort.Tensor("float32", floats, [n, 1, SIDE, SIDE]) });
    return logits.data;
  };
}

// The largest difference between two engines' logits.
function largestDifference(mine, theirs) {
  let largest = 0;
  for (let i = 0; i < mine.length; i++) largest = Math.max(largest, Math.abs(mine[i] - theirs[i]));
  return mine.length === theirs.length ? largest : Infinity;
}

// Images per second of `run(pixels, n)` over `total` images in batches of `batch`, after one
// warm-up batch; the best of `rounds` passes (the least disturbed by the machine). `images` is
// the engine's own input (bytes for calibra, floats for the peers), prepared before timing.
// Every engine's batch is awaited (onnxruntime-web's runs are asynchronous; awaiting the others'
// plain results costs a microtask).
async function throughput(run, images, batch, total, rounds = 3) {
  const size = SIDE * SIDE;
  await run(images.subarray(0, batch * size), batch);
  let best = 0;
  for (let round = 0; round < rounds; round++) {
    const started = performance.now();
    for (let start = 0; start + batch <= total; start += batch) await run(images.subarray(start * size, (start + batch) * size), batch);
    best = Math.max(best, (Math.floor(total / batch) * batch) / ((performance.now() - started) / 1000));
  }
  return best;
}

// Iterations a second of peak.wasm's loop (see peak.wat), the best of five runs of 2·10⁷.
async function simdPeak() {
  const { instance } = await WebAssembly.instantiate(await bytesOf("peak.wasm"));
  const iterations = 2e7;
  instance.exports.run(1e6);
  let best = 0;
  for (let round = 0; round < 5; round++) {
    const started = performance.now();
    instance.exports.run(iterations);
    best = Math.max(best, iterations / ((performance.now() - started) / 1000));
  }
  return best;
}

async function main() {
  const [weights, imageFile] = await Promise.all([bytesOf(WEIGHTS_URL), unzippedBytesOf(IMAGES_URL), initPage(), initWorker()]);
  const images = parse_images(imageFile, IMAGES_URL);
  tf.wasm.setWasmPaths(new URL("./", location.href).href);
  await tf.setBackend("wasm");
  await tf.ready();
  const model = new Model(weights);
  const calibra = (pixels) => model.logits(pixels);
  const tensors = readSafetensors(weights);
  const tfjs = tfNetwork(tensors);
  const onnx = await ortNetwork(tensors);
  const floats = Float32Array.from(images, (p) => p / 255);
  // Honest comparison first: the same logits on 256 images.
  const check = 256;
  const mine = calibra(images.subarray(0, check * SIDE * SIDE));
  const peerInput = floats.subarray(0, check * SIDE * SIDE);
  const results = {
    maxLogitDifference: { tfjs: largestDifference(mine, tfjs(peerInput, check)), ort: largestDifference(mine, await onnx(peerInput, check)) },
    tfBackend: tf.getBackend(),
    tfSimd: await tf.env().getAsync("WASM_HAS_SIMD_SUPPORT"),
    tfThreads: await tf.env().getAsync("WASM_HAS_MULTITHREAD_SUPPORT"),
    ortVersion: ort.env.versions.web,
    rows: [],
  };
  const timed = !new URLSearchParams(location.search).has("check-only");
  for (const batch of timed ? [1, 64, 256] : []) {
    const total = batch === 1 ? 256 : 2048;
    results.rows.push({
      batch,
      calibra: await throughput(calibra, images, batch, total),
      tfjs: await throughput(tfjs, floats, batch, total),
      ort: await throughput(onnx, floats, batch, total),
    });
  }
  if (timed) results.peakIterationsPerSecond = await simdPeak();
  window.peerResults = results;
  document.getElementById("status").textContent = "done";
}

main().catch((error) => {
  window.peerResults = { error: error.stack ?? String(error) };
});
