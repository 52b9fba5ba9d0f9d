// Imports flow one way (ARCHITECTURE.md): a check over the TypeScript import graph of app/,
// components/, lib/ and workers/, run by scripts/test.sh after the typecheck.
//
//   node scripts/check-layers.mjs          exit 1 and one line per forbidden import
//
// A file's layer is its top folder (app, components, workers) or lib/<room>. LAYERS says which
// layers each layer may import; imports inside a layer are free. ALLOWED_DEBT names the
// forbidden imports that exist today, each with the issue that removes it: the check passes with
// them, fails on any new one, and reports an entry that no longer matches so it gets deleted.
// Our own script over TypeScript's import scanner (ts.preProcessFile), not dependency-cruiser:
// no extra dependency, and `import type` counts too (a type import still couples the layers).
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/** layer -> the layers it may import. Read top to bottom: app -> lib/api -> lib/runs -> stores -> pure rooms. */
export const LAYERS = {
  // Next.js pages and route handlers. Server pages read lib/db directly (a read-only page needs no service).
  app: ["components", "lib/api", "lib/runs", "lib/ingest", "lib/jobs", "lib/db", "lib/queries", "lib/client",
    "lib/schemas", "lib/charts", "lib/forms", "lib/credit", "lib/envs"],
  // React components: data through lib/queries (HTTP), never the database.
  components: ["lib/queries", "lib/client", "lib/schemas", "lib/charts", "lib/forms", "lib/credit", "lib/envs"],
  // Job processes: the queue, the stores and the pure rooms; the import job stores its rows through
  // the ingest service (the same validation and idempotent batches as the HTTP ingest API).
  workers: ["lib/jobs", "lib/db", "lib/ingest", "lib/schemas", "lib/credit", "lib/envs", "lib/rollout", "lib/policy", "lib/generated"],
  // The HTTP contract: route declarations, errors, OpenAPI; calls services, not the database.
  "lib/api": ["lib/runs", "lib/schemas", "lib/credit", "lib/envs"],
  // Services (launch, actions, catalog) and the ingest pipeline.
  "lib/runs": ["lib/db", "lib/jobs", "lib/schemas", "lib/credit", "lib/envs", "lib/rollout"],
  "lib/ingest": ["lib/db", "lib/schemas"],
  // Stores: SQL and the job queue (the queue is built on the database client; runs enqueue in a transaction).
  "lib/db": ["lib/jobs", "lib/schemas", "lib/credit", "lib/generated"],
  "lib/jobs": ["lib/db", "lib/schemas", "lib/generated"],
  // Browser side: the typed fetch client and the react-query hooks over it.
  "lib/queries": ["lib/client", "lib/schemas", "lib/credit"],
  "lib/client": ["lib/schemas"],
  // UI helpers with no I/O: chart preparation and schema-generated forms.
  "lib/charts": ["lib/schemas", "lib/credit"],
  "lib/forms": ["lib/schemas"],
  // Pure rooms: no I/O, no HTTP, no UI.
  "lib/policy": ["lib/rollout", "lib/envs", "lib/schemas", "lib/credit"],
  "lib/rollout": ["lib/envs", "lib/schemas", "lib/credit"],
  "lib/schemas": ["lib/credit"],
  "lib/envs": ["lib/credit"],
  "lib/credit": [],
  "lib/generated": [],
};

/**
 * Forbidden imports that exist today: "importing file -> imported file", each with the refactor
 * that removes it. None since issue 14; do not add to this list, fix the import.
 */
export const ALLOWED_DEBT = {};

const SCANNED = ["app", "components", "lib", "workers"];
const SKIP_DIRS = new Set(["node_modules", ".next", "generated"]);
const EXTENSIONS = [".ts", ".tsx", ".mts", ".js", ".mjs"];

function sourceFiles(dir, out = []) {
  if (!fs.existsSync(dir)) return out;
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) {
      if (!SKIP_DIRS.has(e.name)) sourceFiles(p, out);
    } else if (/\.(ts|tsx|mts)$/.test(e.name) && !e.name.endsWith(".d.ts")) out.push(p);
  }
  return out;
}

/** The repository file an import specifier names (tsconfig's "@/*" alias or a relative path), else null. */
function resolveImport(root, fromFile, spec) {
  let base;
  if (spec.startsWith("@/")) base = path.join(root, spec.slice(2));
  else if (spec.startsWith(".")) base = path.resolve(path.dirname(fromFile), spec);
  else return null; // a package
  const candidates = [base, ...EXTENSIONS.map((x) => base + x), ...EXTENSIONS.map((x) => path.join(base, "index" + x))];
  // ESM-style "./x.js" naming a TypeScript file
  if (/\.(m?js)$/.test(base)) candidates.push(base.replace(/\.m?js$/, ".ts"), base.replace(/\.m?js$/, ".tsx"));
  return candidates.find((c) => fs.existsSync(c) && fs.statSync(c).isFile()) ?? base;
}

export function layerOf(rel) {
  const parts = rel.split("/");
  return parts[0] === "lib" ? `lib/${parts[1]}` : parts[0];
}

/** Every cross-layer import: { from, to, spec, fromLayer, toLayer }. */
export function crossLayerImports(root = ROOT) {
  const edges = [];
  for (const file of SCANNED.flatMap((d) => sourceFiles(path.join(root, d)))) {
    const info = ts.preProcessFile(fs.readFileSync(file, "utf8"), true, true);
    for (const { fileName: spec } of info.importedFiles) {
      const target = resolveImport(root, file, spec);
      if (!target) continue;
      const from = path.relative(root, file).split(path.sep).join("/");
      const to = path.relative(root, target).split(path.sep).join("/");
      if (to.startsWith("..")) continue;
      const fromLayer = layerOf(from);
      const toLayer = layerOf(to);
      if (fromLayer !== toLayer) edges.push({ from, to, spec, fromLayer, toLayer });
    }
  }
  return edges;
}

export function checkLayers(root = ROOT) {
  const violations = [];
  const usedDebt = new Set();
  for (const e of crossLayerImports(root)) {
    const allowed = LAYERS[e.fromLayer];
    if (!allowed) {
      violations.push(`${e.from}: layer ${e.fromLayer} is not in LAYERS (scripts/check-layers.mjs); add it with what it may import`);
      continue;
    }
    if (!(e.toLayer in LAYERS) && !["test", "scripts"].includes(e.toLayer)) {
      violations.push(`${e.from} imports ${e.spec}: layer ${e.toLayer} is not in LAYERS`);
      continue;
    }
    if (allowed.includes(e.toLayer)) continue;
    const key = `${e.from} -> ${e.to}`;
    if (key in ALLOWED_DEBT) {
      usedDebt.add(key);
      continue;
    }
    violations.push(`${e.from} imports ${e.spec}: ${e.fromLayer} may not import ${e.toLayer} (may: ${allowed.join(", ") || "nothing"})`);
  }
  const staleDebt = Object.keys(ALLOWED_DEBT).filter((k) => !usedDebt.has(k));
  return { violations, staleDebt };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { violations, staleDebt } = checkLayers();
  for (const s of staleDebt) console.warn(`layers: ALLOWED_DEBT entry no longer needed, delete it: ${s}`);
  if (violations.length) {
    console.error(`layers: ${violations.length} import(s) against the layering (ARCHITECTURE.md):`);
    for (const v of violations) console.error("  " + v);
    process.exit(1);
  }
  console.log(`layers: ok (${Object.keys(ALLOWED_DEBT).length - staleDebt.length} known debts, see ALLOWED_DEBT)`);
}
