// Imports flow one way (ARCHITECTURE.md): a check over the TypeScript import graph of app/,
// components/, lib/, workers/ and cli/, run by scripts/test.sh after the typecheck.
//
//   node scripts/check-layers.mjs          exit 1 and one line per forbidden import
//
// A file's layer is its top folder (app, components, workers) or lib/<room>. LAYERS says which
// layers each layer may import; imports inside a layer are free. ALLOWED_DEBT names the
// forbidden imports that exist today, each with the issue that removes it: the check passes with
// them, fails on any new one, and reports an entry that no longer matches so it gets deleted.
// Our own script over TypeScript's import scanner (ts.preProcessFile), not dependency-cruiser:
// no extra dependency, and `import type` counts too (a type import still couples the layers).
//
// The Python engine (PY_PACKAGES) gets a second check: its module graph, built from every
// `import` / `from ... import` statement (inside functions and TYPE_CHECKING blocks too), must
// have no cycle; one is reported as the chain of files that closes it.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/** layer -> the layers it may import. Read top to bottom: app -> lib/api -> lib/runs -> stores -> pure rooms. */
export const LAYERS = {
  // Next.js pages and route handlers. Server pages read lib/db directly (a read-only page needs no service).
  app: [
    "components",
    "lib/api",
    "lib/runs",
    "lib/ingest",
    "lib/jobs",
    "lib/db",
    "lib/queries",
    "lib/client",
    "lib/schemas",
    "lib/charts",
    "lib/forms",
    "lib/credit",
    "lib/envs",
  ],
  // React components: data through lib/queries (HTTP), never the database.
  components: ["lib/queries", "lib/client", "lib/schemas", "lib/charts", "lib/forms", "lib/credit", "lib/envs", "lib/stats"],
  // Job processes: the queue, the stores and the pure rooms; the import job stores its rows through
  // the ingest service (the same validation and idempotent batches as the HTTP ingest API).
  workers: ["lib/jobs", "lib/db", "lib/ingest", "lib/schemas", "lib/credit", "lib/envs", "lib/rollout", "lib/policy", "lib/generated"],
  // The HTTP contract: route declarations, errors, OpenAPI; calls services, not the database.
  // lib/ingest: route() tells the ingest pool when reads are being answered (it leaves them a core)
  "lib/api": ["lib/runs", "lib/schemas", "lib/credit", "lib/envs", "lib/ingest"],
  // Services (launch, actions, catalog) and the ingest pipeline.
  "lib/runs": ["lib/db", "lib/jobs", "lib/schemas", "lib/credit", "lib/envs", "lib/rollout"],
  "lib/ingest": ["lib/db", "lib/schemas"],
  // Stores: SQL only; lib/db never imports lib/jobs (the queue is built on it, not the other way:
  // lib/runs opens the transaction that writes a run and its job).
  "lib/db": ["lib/schemas", "lib/credit", "lib/generated"],
  "lib/jobs": ["lib/db", "lib/schemas", "lib/generated"],
  // Browser side: the typed fetch client and the react-query hooks over it.
  // Browser side: the typed fetch client and the react-query hooks over it. lib/queries reads the
  // route declarations (lib/api/routes.ts imports only zod schemas; test/client/typed-client.test.ts
  // checks the browser's import closure), never the rest of lib/api.
  "lib/queries": ["lib/api", "lib/client", "lib/schemas", "lib/credit"],
  "lib/client": ["lib/schemas"],
  // UI helpers with no I/O: chart preparation and schema-generated forms.
  "lib/charts": ["lib/schemas", "lib/credit"],
  "lib/forms": ["lib/schemas"],
  // Pure rooms: no I/O, no HTTP, no UI.
  "lib/policy": ["lib/rollout", "lib/envs", "lib/schemas", "lib/credit"],
  "lib/rollout": ["lib/envs", "lib/schemas", "lib/credit"],
  "lib/schemas": ["lib/credit"],
  "lib/envs": ["lib/credit"],
  // two-sample tests (pure): the experiment scripts and the compare page's group difference
  "lib/stats": ["lib/envs"],
  "lib/credit": [],
  "lib/generated": [],
  // Command lines: byte-level readers and writers around a pure room (stdin, stdout, exit codes).
  cli: ["lib/credit"],
};

/**
 * Forbidden imports that exist today: "importing file -> imported file", each with the refactor
 * that removes it. None today; do not add to this list, fix the import.
 */
export const ALLOWED_DEBT = {};

const SCANNED = ["app", "components", "lib", "workers", "cli"];
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

/** Python packages whose modules must import one way (no cycle): the engine's rooms. */
export const PY_PACKAGES = ["workers/engine"];

function pythonFiles(dir, out = []) {
  if (!fs.existsSync(dir)) return out;
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) {
      if (e.name !== "__pycache__") pythonFiles(p, out);
    } else if (e.name.endsWith(".py")) out.push(p);
  }
  return out;
}

/** "workers/engine/commands/__init__.py" -> "workers.engine.commands". */
function pythonModule(rel) {
  const parts = rel.replace(/\.py$/, "").split("/");
  if (parts[parts.length - 1] === "__init__") parts.pop();
  return parts.join(".");
}

/**
 * The import statements of a Python source: { module, names, line }, with module as written
 * ("..state", "os.path") and names the imported names of a `from` import (null for `import x`).
 * Triple-quoted strings and comments are dropped first; parenthesised and backslash-continued
 * lists are joined.
 */
export function pythonImports(text) {
  // blank out triple-quoted strings, keeping their newlines so line numbers stay right
  const code = text.replace(/("""|''')[\s\S]*?\1/g, (m) => m.replace(/[^\n]/g, " "));
  const lines = code.split("\n");
  const out = [];
  const names = (list) =>
    list
      .replace(/[()]/g, "")
      .split(",")
      .map((n) =>
        n
          .trim()
          .split(/\s+as\s+/)[0]
          .trim(),
      )
      .filter(Boolean);
  for (let i = 0; i < lines.length; i++) {
    let stmt = lines[i].replace(/#.*$/, "");
    if (!/^\s*(import|from)\s/.test(stmt)) continue;
    const line = i + 1;
    while ((/\\\s*$/.test(stmt) || (stmt.includes("(") && !stmt.includes(")"))) && i + 1 < lines.length) {
      stmt = stmt.replace(/\\\s*$/, " ") + " " + lines[++i].replace(/#.*$/, "");
    }
    for (const part of stmt.split(";")) {
      let m = /^\s*from\s+([\w.]+)\s+import\s+(.+)$/.exec(part);
      if (m) {
        out.push({ module: m[1], names: names(m[2]), line });
        continue;
      }
      m = /^\s*import\s+(.+)$/.exec(part);
      if (m) for (const mod of names(m[1])) out.push({ module: mod, names: null, line });
    }
  }
  return out;
}

/** Import edges { from, to, line } between the modules of PY_PACKAGES, as repository files. */
export function pythonImportGraph(root = ROOT) {
  const files = PY_PACKAGES.flatMap((d) => pythonFiles(path.join(root, d))).map((f) => path.relative(root, f).split(path.sep).join("/"));
  const fileOf = new Map(files.map((f) => [pythonModule(f), f]));
  const edges = [];
  for (const file of files) {
    const mod = pythonModule(file);
    const pkg = file.endsWith("/__init__.py") ? mod : mod.split(".").slice(0, -1).join(".");
    for (const imp of pythonImports(fs.readFileSync(path.join(root, file), "utf8"))) {
      let base = imp.module;
      const dots = /^\.*/.exec(base)[0].length;
      if (dots) {
        const parts = pkg.split(".");
        base = [...parts.slice(0, parts.length - (dots - 1)), base.slice(dots)].filter(Boolean).join(".");
      }
      // `from pkg import name` imports the submodule pkg.name when there is one, else pkg itself
      const targets = imp.names ? imp.names.map((n) => (fileOf.has(`${base}.${n}`) ? `${base}.${n}` : base)) : [base];
      for (const t of new Set(targets)) {
        if (fileOf.has(t) && t !== mod) edges.push({ from: file, to: fileOf.get(t), line: imp.line });
      }
    }
  }
  return edges;
}

/** One import cycle per knot of PY_PACKAGES' modules, as files [a, b, ..., a]. */
export function pythonImportCycles(root = ROOT) {
  const next = new Map();
  for (const e of pythonImportGraph(root)) {
    if (!next.has(e.from)) next.set(e.from, new Set());
    next.get(e.from).add(e.to);
  }
  // Tarjan's strongly connected components: each one of 2+ modules holds a cycle
  const index = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const components = [];
  const visit = (v) => {
    index.set(v, index.size);
    low.set(v, index.get(v));
    stack.push(v);
    onStack.add(v);
    for (const w of next.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v), low.get(w)));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v), index.get(w)));
    }
    if (low.get(v) === index.get(v)) {
      const comp = [];
      let w;
      do {
        w = stack.pop();
        onStack.delete(w);
        comp.push(w);
      } while (w !== v);
      if (comp.length > 1) components.push(comp);
    }
  };
  for (const v of [...next.keys()].sort()) if (!index.has(v)) visit(v);
  // name a shortest cycle through each component's first file (breadth-first inside it)
  return components.map((comp) => {
    const inComp = new Set(comp);
    const start = [...comp].sort()[0];
    const prev = new Map();
    const queue = [start];
    while (queue.length && !prev.has(start)) {
      const v = queue.shift();
      for (const w of [...(next.get(v) ?? [])].sort()) {
        if (!inComp.has(w) || prev.has(w)) continue;
        prev.set(w, v);
        queue.push(w);
      }
    }
    const cycle = [start];
    for (let v = prev.get(start); v !== start; v = prev.get(v)) cycle.unshift(v);
    return [start, ...cycle];
  });
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
  for (const cycle of pythonImportCycles(root)) {
    violations.push(`${cycle[0]}: Python import cycle ${cycle.join(" -> ")} (imports must flow one way)`);
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
