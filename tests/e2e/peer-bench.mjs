// The side-by-side inference benchmark: calibra's WebAssembly module against TensorFlow.js's
// WebAssembly backend (XNNPACK) and onnxruntime-web's, in the same headless Chromium, on the same
// machine, with the same weights and images, one thread each, batches of 1, 64 and 256. It first
// checks that the three give the same logits (1e-3), then prints img/s, GFLOP/s and the ratio to
// the faster peer as a Markdown table.
// Asserts nothing about speed. scripts/bench runs it after the page benchmark (the site built).
//
//   node tests/e2e/peer-bench.mjs [--json]
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

import wabt from "wabt";

import { SITE_DIR, chromiumVersion, launchBrowser, serveDirectory } from "./helpers.mjs";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const TFJS = path.join(HERE, "node_modules/@tensorflow");
const ORT = path.join(HERE, "node_modules/onnxruntime-web/dist");
// Multiply-adds of one 28×28 image through direct convolutions, counted as 2 FLOP each: conv1
// 28·28·32·9, conv2 14·14·64·288, dense 3136·128 and 128·10 (biases, ReLU and pooling left
// out). The same count for both engines: calibra's convolutions (Winograd's F(2×2, 3×3)) need
// fewer multiplications, so its figure is the direct network's rate, and can pass the peak.
const FLOP_PER_IMAGE = 2 * (28 * 28 * 32 * 9 + 14 * 14 * 64 * 288 + 3136 * 128 + 128 * 10);
const TOLERANCE_LOGITS = 1e-3;
const PEER_NAMES = { tfjs: "TF.js", ort: "onnxruntime-web" };

// FLOP of one iteration of peer/peak.wat: 8 chains × 4 lanes × (multiply + add).
const PEAK_FLOP_PER_ITERATION = 8 * 4 * 2;

// A folder served as one site: the bench page, the built site's module and assets, TF.js's and
// onnxruntime-web's files, and the SIMD128 peak loop compiled from peer/peak.wat (by wabt).
export async function benchFolder() {
  const dir = mkdtempSync(path.join(os.tmpdir(), "calibra-peer-"));
  const links = {
    "index.html": path.join(HERE, "peer/index.html"),
    "peer.js": path.join(HERE, "peer/peer.js"),
    "onnx.js": path.join(HERE, "peer/onnx.js"),
    pkg: path.join(SITE_DIR, "pkg"),
    "pkg-worker": path.join(SITE_DIR, "pkg-worker"),
    assets: path.join(SITE_DIR, "assets"),
    "tf-core.min.js": path.join(TFJS, "tfjs-core/dist/tf-core.min.js"),
    "tf-backend-wasm.min.js": path.join(TFJS, "tfjs-backend-wasm/dist/tf-backend-wasm.min.js"),
  };
  for (const file of ["tfjs-backend-wasm.wasm", "tfjs-backend-wasm-simd.wasm", "tfjs-backend-wasm-threaded-simd.wasm"]) {
    links[file] = path.join(TFJS, "tfjs-backend-wasm/dist", file);
  }
  // onnxruntime-web's WebAssembly-only build; its module loads the runtime beside it.
  for (const file of ["ort.wasm.min.mjs", "ort-wasm-simd-threaded.mjs", "ort-wasm-simd-threaded.wasm"]) {
    links[file] = path.join(ORT, file);
  }
  for (const [name, target] of Object.entries(links)) symlinkSync(target, path.join(dir, name));
  const compiler = await wabt();
  const peak = compiler.parseWat("peak.wat", readFileSync(path.join(HERE, "peer/peak.wat"), "utf8"), { simd: true });
  writeFileSync(path.join(dir, "peak.wasm"), peak.toBinary({}).buffer);
  peak.destroy();
  return dir;
}

async function main() {
  const dir = await benchFolder();
  const site = await serveDirectory(dir);
  const browser = await launchBrowser();
  try {
    const page = await browser.context.newPage();
    await page.goto(site.url);
    await page.waitForFunction(() => window.peerResults !== undefined, null, { timeout: 600_000, polling: 500 });
    const results = await page.evaluate(() => window.peerResults);
    if (results.error) throw new Error(`the benchmark page failed: ${results.error}`);
    for (const [peer, difference] of Object.entries(results.maxLogitDifference)) {
      if (!(difference <= TOLERANCE_LOGITS)) {
        throw new Error(`calibra's and ${PEER_NAMES[peer]}'s logits differ by ${difference} (more than ${TOLERANCE_LOGITS}): not the same network`);
      }
    }
    if (process.argv.includes("--json")) {
      console.log(JSON.stringify({ ...results, flopPerImage: FLOP_PER_IMAGE, peakFlopPerIteration: PEAK_FLOP_PER_ITERATION, browser: chromiumVersion() }, null, 2));
      return;
    }
    const gflops = (rate) => ((rate * FLOP_PER_IMAGE) / 1e9).toFixed(1);
    const peak = (results.peakIterationsPerSecond * PEAK_FLOP_PER_ITERATION) / 1e9;
    const share = (rate) => `${((100 * (rate * FLOP_PER_IMAGE)) / 1e9 / peak).toFixed(0)}%`;
    const difference = (peer) => results.maxLogitDifference[peer].toExponential(1);
    console.log(`Inference side by side: ${chromiumVersion()}, one thread each (the main thread); TF.js ${results.tfBackend} backend with SIMD ${results.tfSimd ? "on" : "off"} and threads ${results.tfThreads ? "on" : "off"}; onnxruntime-web ${results.ortVersion}, wasm backend, one thread; largest logit difference on 256 images from TF.js's ${difference("tfjs")}, from onnxruntime-web's ${difference("ort")}.\n`);
    console.log(`SIMD128 peak of one thread here (peer/peak.wat, f32x4 multiply and add): ${peak.toFixed(1)} GFLOP/s.\n`);
    console.log("GFLOP/s counts a direct convolution's operations for every engine. calibra's convolutions run Winograd's F(2×2, 3×3), with 2.25 times fewer multiplications, so its share of the peak can pass 100%.\n");
    console.log("| batch | calibra img/s | calibra GFLOP/s (of peak) | TF.js wasm img/s | TF.js GFLOP/s (of peak) | onnxruntime-web img/s | onnxruntime-web GFLOP/s (of peak) | calibra / best peer |");
    console.log("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    const rate = (value) => `${Math.round(value).toLocaleString("en")} | ${gflops(value)} (${share(value)})`;
    for (const row of results.rows) {
      const best = row.tfjs >= row.ort ? "tfjs" : "ort";
      console.log(`| ${row.batch} | ${rate(row.calibra)} | ${rate(row.tfjs)} | ${rate(row.ort)} | ${(row.calibra / row[best]).toFixed(2)}× (${PEER_NAMES[best]}) |`);
    }
  } finally {
    await browser.close();
    await site.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  main().catch((error) => {
    console.error(error.message);
    process.exit(1);
  });
}
