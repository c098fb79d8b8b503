// Two independent implementations of the network, TensorFlow.js (WebAssembly backend, XNNPACK)
// and onnxruntime-web (WebAssembly backend, the weights converted to ONNX by peer/onnx.js), built
// from the same safetensors in the same browser, give the logits calibra's module gives on the
// first 256 test images. The benchmark's page (tests/e2e/peer/) in its ?check-only mode.
import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { after, before, test } from "node:test";

import { collectProblems, launchBrowser, serveDirectory } from "./helpers.mjs";
import { benchFolder } from "./peer-bench.mjs";

// Two float32 engines summing in other orders: a few ulps of logits that reach |z| ≈ 40
// (measured: 9.5e-6).
const TOLERANCE_LOGITS = 1e-4;

let dir;
let site;
let browser;
let problems;

before(async () => {
  dir = await benchFolder();
  site = await serveDirectory(dir);
  browser = await launchBrowser();
  problems = collectProblems(browser.context);
});

after(async () => {
  await browser?.close();
  await site?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test("TF.js's and onnxruntime-web's logits of the same weights equal calibra's on 256 test images", { timeout: 120_000 }, async () => {
  const page = await browser.context.newPage();
  await page.goto(`${site.url}?check-only`);
  await page.waitForFunction(() => window.peerResults !== undefined, null, { timeout: 100_000, polling: 250 });
  const results = await page.evaluate(() => window.peerResults);
  assert.equal(results.error, undefined, results.error);
  assert.equal(results.tfBackend, "wasm");
  for (const peer of ["tfjs", "ort"]) {
    const difference = results.maxLogitDifference[peer];
    assert.ok(difference <= TOLERANCE_LOGITS, `${peer}: largest difference ${difference}`);
  }
  assert.deepEqual(problems, []);
});
