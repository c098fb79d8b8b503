// Writes the build manifest of a site folder, which the service worker (www/sw.js) caches by:
// every file's path (relative to the site, "/"-separated), the SHA-256 of its bytes (the first
// 16 hex digits) and its size; and the build id, the first 16 hex digits of the SHA-256 of the
// files' list. The id is also written into the folder's sw.js, whose line
// `const BUILD = "unbuilt";` becomes `const BUILD = "<id>";`: a browser looks for a new
// service worker by comparing sw.js's bytes, so a new build (any file changed) is a new worker.
// sw.js and the manifest themselves are not listed.
//
//   node scripts/site-manifest.mjs SITE_DIR     (scripts/build-site runs it on its staging folder)
import { createHash } from "node:crypto";
import { readFileSync, readdirSync, writeFileSync } from "node:fs";
import path from "node:path";

const MANIFEST = "build-manifest.json";
const SERVICE_WORKER = "sw.js";
const UNBUILT = 'const BUILD = "unbuilt";';
const HASH_DIGITS = 16;

const sha256 = (bytes) => createHash("sha256").update(bytes).digest("hex").slice(0, HASH_DIGITS);

// Every file under `dir`, as sorted paths relative to `root`.
function filesUnder(root, dir = root) {
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((entry) => {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) return filesUnder(root, full);
      return entry.isFile() ? [path.relative(root, full).split(path.sep).join("/")] : [];
    })
    .sort();
}

const siteDir = process.argv[2];
if (!siteDir) {
  console.error("usage: node scripts/site-manifest.mjs SITE_DIR");
  process.exit(2);
}
const files = {};
for (const file of filesUnder(siteDir)) {
  if (file === MANIFEST || file === SERVICE_WORKER) continue;
  const bytes = readFileSync(path.join(siteDir, file));
  files[file] = { hash: sha256(bytes), bytes: bytes.length };
}
const build = sha256(JSON.stringify(files));
writeFileSync(path.join(siteDir, MANIFEST), `${JSON.stringify({ build, files }, null, 1)}\n`);
const worker = path.join(siteDir, SERVICE_WORKER);
const source = readFileSync(worker, "utf8");
if (!source.includes(UNBUILT)) {
  console.error(`site-manifest: ${worker} has no line ${UNBUILT}`);
  process.exit(1);
}
writeFileSync(worker, source.replace(UNBUILT, `const BUILD = "${build}";`));
console.log(`build ${build}: ${Object.keys(files).length} files`);
