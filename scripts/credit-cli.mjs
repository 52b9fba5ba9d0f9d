#!/usr/bin/env node
// The credit command, `turnlens-credit` (package.json "bin"; also `npm run credit`): runs the CLI
// as compiled JavaScript (no tsx start-up, no per-run TypeScript transform). dist/credit-cli.cjs
// is built from cli/credit/main.ts with esbuild (it ships with tsx) when missing or older than any
// cli/credit or lib/credit source; `--build` only builds (scripts/setup.sh runs that). Everything
// else on the command line goes to the CLI.
//
// The bundle (zod included) is compiled through vm.Script with a V8 code cache kept next to it
// (dist/credit-cli.cjs.v8cache): compiling the 0.9 MB bundle from source is about a quarter of
// the CLI's start-up. The cache starts with a SHA-1 of the bundle and the Node version, since V8
// itself checks only the source's length; a missing, stale or rejected cache is rewritten when
// the run ends, after the functions that ran are compiled, so it holds their bytecode too.
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, realpathSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import vm from "node:vm";

// the real path: the bin is reached through a symlink (npm link, node_modules/.bin)
const root = join(dirname(realpathSync(fileURLToPath(import.meta.url))), "..");
const out = join(root, "dist", "credit-cli.cjs");
const cacheFile = `${out}.v8cache`;

function newestSource(dir) {
  let t = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) t = Math.max(t, newestSource(p));
    else if (e.name.endsWith(".ts")) t = Math.max(t, statSync(p).mtimeMs);
  }
  return t;
}

function builtAt() {
  try {
    return statSync(out).mtimeMs;
  } catch {
    return -1;
  }
}

async function buildIfStale() {
  if (builtAt() >= Math.max(newestSource(join(root, "cli", "credit")), newestSource(join(root, "lib", "credit")))) return false;
  const esbuild = await import("esbuild");
  esbuild.buildSync({
    entryPoints: [join(root, "cli", "credit", "main.ts")],
    outfile: out,
    bundle: true,
    platform: "node",
    // CommonJS: vm.Script (and its code cache) compiles a script, not an ES module
    format: "cjs",
    target: "node20",
    packages: "bundle",
    // zod is bundled too: the file runs from dist/ without resolving node_modules
    banner: { js: "// Built by scripts/credit-cli.mjs from cli/credit/main.ts; do not edit." },
    logLevel: "error",
  });
  rmSync(cacheFile, { force: true });
  return true;
}

/** Runs the bundle as CommonJS, with the code cache when it is this bundle's. */
function run() {
  const source = readFileSync(out, "utf8");
  const stamp = createHash("sha1").update(source).update(process.version).digest();
  let cached;
  try {
    const c = readFileSync(cacheFile);
    if (c.length > stamp.length && c.subarray(0, stamp.length).equals(stamp)) cached = c.subarray(stamp.length);
  } catch {
    // no cache yet
  }
  // one line of wrapper, so the bundle's line numbers stay as they are in stack traces
  const script = new vm.Script(`(function (exports, require, module, __filename, __dirname) {${source}\n})`, { filename: out, cachedData: cached });
  if (cached === undefined || script.cachedDataRejected) {
    process.once("exit", () => {
      try {
        const tmp = `${cacheFile}.${process.pid}`;
        writeFileSync(tmp, Buffer.concat([stamp, script.createCachedData()]));
        renameSync(tmp, cacheFile); // atomic: two first runs at once each write a whole file
      } catch {
        // a read-only dist/: run without the cache
      }
    });
  }
  const module = { exports: {} };
  script.runInThisContext()(module.exports, createRequire(out), module, out, dirname(out));
}

if (process.argv[2] === "--build") {
  const built = await buildIfStale();
  console.log(built ? `credit CLI: built ${out}` : "credit CLI: up to date");
} else {
  await buildIfStale();
  run();
}
