// `npm run credit`: run the credit CLI as compiled JavaScript (no tsx start-up, no per-run
// TypeScript transform). dist/credit-cli.mjs is built from lib/credit/cli.ts with esbuild (it
// ships with tsx) when missing or older than any lib/credit source; `--build` only builds
// (scripts/setup.sh runs that). Everything else on the command line goes to the CLI.
import { readdirSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const out = join(root, "dist", "credit-cli.mjs");

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
  if (builtAt() >= newestSource(join(root, "lib", "credit"))) return false;
  const esbuild = await import("esbuild");
  esbuild.buildSync({
    entryPoints: [join(root, "lib", "credit", "cli.ts")],
    outfile: out,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    packages: "bundle",
    // zod is bundled too: the file runs from dist/ without resolving node_modules
    banner: { js: "// Built by scripts/credit-cli.mjs from lib/credit/cli.ts; do not edit." },
    logLevel: "error",
  });
  return true;
}

if (process.argv[2] === "--build") {
  const built = await buildIfStale();
  console.log(built ? `credit CLI: built ${out}` : "credit CLI: up to date");
} else {
  await buildIfStale();
  await import(pathToFileURL(out).href);
}
