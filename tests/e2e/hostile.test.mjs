// Hostile links: 1,000 URL-hash states, random and crafted (junk, huge and non-numbers, markup,
// unknown and repeated keys, broken percent-encoding, very long values), each read by the page.
// No console error, no markup from the hash ever becomes an element, every ignored entry is
// reported as text, and the page still answers afterwards. The page's Content-Security-Policy
// holds throughout (a violation is a console error).
import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { collectProblems, launchBrowser, nextFrames, openSite, readMetrics } from "./helpers.mjs";

const STATES = 1000;

let site;
let browser;
let page;
let problems;

before(async () => {
  site = await openSite();
  browser = await launchBrowser();
  problems = collectProblems(browser.context);
  page = await browser.context.newPage();
  await page.goto(site.url);
  await page.waitForFunction(() => window.calibra?.limits, null, { timeout: 60_000 });
});

after(async () => {
  await browser?.close();
  await site?.close();
  // Checked once every page of the file has run: a lone test would pass when run alone.
  assert.deepEqual(problems, [], "no console error, uncaught exception or failed request");
});

// Crafted entries, then seeded random ones (xorshift), `count` in all.
function hostileHashes(count) {
  const keys = ["model", "t", "bins", "binning", "split", "alpha", "score", "randomized", "raps_lambda", "k_reg", "saps_lambda", "mondrian", "gallery", "tau", "ood", "ood_score", "evil", ""];
  const values = [
    "<img src=x onerror=\"document.body.dataset.pwned=1\">", "<script>document.body.dataset.pwned=1</script>", "\"><svg onload=alert(1)>",
    "1e309", "-1e309", "NaN", "Infinity", "-0", "0x10", "1_000", "", " ", "%", "%E0%A4%A", "%00", "\u202e", "🙂", "x".repeat(10_000),
    "4294967296", "-1", "0.0000001", "1e-320", "30.5", "aps;drop", "ce&t=2", "true", "1.0", "01",
  ];
  let seed = 0x9e3779b9;
  const next = () => {
    seed ^= seed << 13; seed >>>= 0;
    seed ^= seed >>> 17;
    seed ^= seed << 5; seed >>>= 0;
    return seed;
  };
  const hashes = [
    "#", "#&&&", "#=1", "#t", "#t=", "#t=2&t=3", "#%", "#t=%ZZ", `#${"a=1&".repeat(2000)}`,
    ...values.map((v) => `#t=${encodeURIComponent(v)}&score=${encodeURIComponent(v)}`),
    ...values.map((v) => `#${v}`),
  ];
  while (hashes.length < count) {
    const entries = [];
    for (let i = next() % 6; i >= 0; i--) {
      const key = keys[next() % keys.length];
      const value = next() % 3 === 0 ? String((next() % 100_000) / (1 + (next() % 997))) : values[next() % values.length];
      entries.push(`${encodeURIComponent(key)}=${next() % 4 === 0 ? value : encodeURIComponent(value)}`);
    }
    hashes.push(`#${entries.join("&")}`);
  }
  return hashes.slice(0, count);
}

test(`${STATES} hostile hash states: no error, no injected markup, every rejection reported as text`, { timeout: 300_000 }, async () => {
  const hashes = hostileHashes(STATES);
  const result = await page.evaluate(async (list) => {
    const box = document.getElementById("error");
    const elementsBefore = document.getElementsByTagName("*").length;
    let reported = 0;
    for (const hash of list) {
      // A hash equal to the current one fires no event: then the wait ends after 100 ms.
      const changed = new Promise((resolve) => {
        window.addEventListener("hashchange", resolve, { once: true });
        setTimeout(resolve, 100);
      });
      location.hash = hash;
      await changed;
      if (!box.hidden && box.textContent.includes("partly ignored")) reported += 1;
      if (box.children.length > 0) return { injected: box.innerHTML };
    }
    return {
      reported,
      pwned: document.body.dataset.pwned ?? null,
      images: document.querySelectorAll("img, script:not([src]), svg").length,
      grew: document.getElementsByTagName("*").length - elementsBefore,
    };
  }, hashes);
  assert.equal(result.injected, undefined, `markup from the hash became elements: ${result.injected}`);
  assert.equal(result.pwned, null, "no script from the hash ran");
  assert.equal(result.images, 0, "no element from the hash");
  assert.ok(result.reported > STATES / 2, `most hostile states are reported as ignored entries (${result.reported})`);

  // The page still answers: a valid link takes effect and the readout follows it.
  await page.evaluate(() => { location.hash = "#t=2.5&score=lac"; });
  await nextFrames(page, 3);
  const metrics = await readMetrics(page);
  assert.equal(metrics.temperature, 2.5);
  assert.equal(await page.inputValue("#score"), "lac");
  assert.equal(await page.locator("#error").isHidden(), true, "a valid link clears the message");
});
