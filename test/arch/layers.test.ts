// The layering check (scripts/check-layers.mjs) on small made-up trees: it must catch a
// forbidden import whatever form the import takes, and pass the directions ARCHITECTURE.md allows.
import { useScratchTrees } from "../helpers/scratch-tree";
import { describe, expect, it } from "vitest";
// @ts-expect-error: a plain .mjs script without type declarations
import { checkLayers, pythonImportCycles, pythonImports } from "../../scripts/check-layers.mjs";

const tree = useScratchTrees("tl-layers-");

describe("checkLayers", () => {
  it("rejects a component that imports lib/db, through the alias, a relative path or a type import", () => {
    for (const spec of ['import { x } from "@/lib/db/store";', 'import type { X } from "../lib/db/store";', 'export { x } from "../lib/db/store";']) {
      const root = tree({ "lib/db/store.ts": "export const x = 1; export type X = number;", "components/view.tsx": spec });
      const { violations } = checkLayers(root);
      expect(violations).toHaveLength(1);
      expect(violations[0]).toMatch(/^components\/view\.tsx imports .*: components may not import lib\/db/);
    }
  });

  it("rejects an import that runs back up (lib/db -> lib/api, lib/schemas -> lib/runs)", () => {
    const root = tree({
      "lib/api/errors.ts": "export class E extends Error {}",
      "lib/runs/svc.ts": "export const s = 1;",
      "lib/db/runs.ts": 'import { E } from "../api/errors"; export const r = E;',
      "lib/schemas/runs.ts": 'import { s } from "../runs/svc"; export const q = s;',
    });
    const { violations } = checkLayers(root);
    expect(violations.map((v: string) => v.split(" imports ")[0]).sort()).toEqual(["lib/db/runs.ts", "lib/schemas/runs.ts"]);
  });

  it("rejects a store that imports the job queue (lib/db -> lib/jobs): lib/runs writes a run with its job", () => {
    const root = tree({
      "lib/jobs/queue.ts": "export const enqueue = 1;",
      "lib/db/runs.ts": 'import { enqueue } from "../jobs/queue"; export const r = enqueue;',
      "lib/runs/launch.ts": 'import { enqueue } from "../jobs/queue"; export const l = enqueue;',
    });
    const { violations } = checkLayers(root);
    expect(violations).toHaveLength(1);
    expect(violations[0]).toMatch(/^lib\/db\/runs\.ts imports \.\.\/jobs\/queue: lib\/db may not import lib\/jobs/);
  });

  it("passes the allowed direction and imports inside one layer", () => {
    const root = tree({
      "lib/schemas/runs.ts": "export const q = 1;",
      "lib/schemas/more.ts": 'import { q } from "./runs"; export const m = q;',
      "lib/db/runs.ts": 'import { q } from "../schemas/runs"; export const r = q;',
      "lib/runs/launch.ts": 'import { r } from "../db/runs"; export const l = r;',
      "lib/api/routes.ts": 'import { l } from "../runs/launch"; export const a = l;',
      "app/page.tsx": 'import { a } from "@/lib/api/routes"; export default a;',
    });
    expect(checkLayers(root).violations).toEqual([]);
  });

  it("names a layer missing from the table instead of passing it silently", () => {
    const root = tree({ "lib/newroom/x.ts": 'import { q } from "../schemas/runs"; export const x = q;', "lib/schemas/runs.ts": "export const q = 1;" });
    expect(checkLayers(root).violations[0]).toMatch(/layer lib\/newroom is not in LAYERS/);
  });

  it("rejects an import cycle among the engine's Python modules, naming the files that close it", () => {
    const root = tree({
      "workers/engine/__init__.py": "",
      "workers/engine/engine.py": "from .commands import COMMANDS\n",
      "workers/engine/commands/__init__.py": "from . import save\nCOMMANDS = {}\n",
      "workers/engine/commands/save.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..engine import Engine\n",
    });
    const { violations } = checkLayers(root);
    expect(violations).toEqual([
      "workers/engine/commands/__init__.py: Python import cycle workers/engine/commands/__init__.py -> " +
        "workers/engine/commands/save.py -> workers/engine/engine.py -> workers/engine/commands/__init__.py " +
        "(imports must flow one way)",
    ]);
  });

  it("reads every form of a Python import and nothing in strings or comments", () => {
    const text = [
      '"""Docstring: from .b import x would be a cycle."""',
      "import os, workers.engine.b as b  # import workers.engine.c",
      "from ..engine import (",
      "    a,",
      "    b as bee,",
      ")",
      "from . import c; import json",
      "def f():",
      "    from .d import \\",
      "        e",
    ].join("\n");
    expect(pythonImports(text)).toEqual([
      { module: "os", names: null, line: 2 },
      { module: "workers.engine.b", names: null, line: 2 },
      { module: "..engine", names: ["a", "b"], line: 3 },
      { module: ".", names: ["c"], line: 7 },
      { module: "json", names: null, line: 7 },
      { module: ".d", names: ["e"], line: 9 },
    ]);
  });

  it("passes Python modules that import one way, through relative and absolute imports", () => {
    const root = tree({
      "workers/engine/__init__.py": "from .protocol import VERSION\n",
      "workers/engine/errors.py": "",
      "workers/engine/protocol.py": "from .errors import InvalidRequest\nVERSION = 1\n",
      "workers/engine/state.py": "import workers.engine.protocol\nfrom . import errors\n",
      "workers/engine/commands/__init__.py": "from . import ping\n",
      "workers/engine/commands/ping.py": "from ..state import State\nfrom workers.engine.protocol import VERSION\n",
      "workers/engine/engine.py": "from .commands import COMMANDS\nfrom .state import State\n",
    });
    expect(pythonImportCycles(root)).toEqual([]);
    expect(checkLayers(root).violations).toEqual([]);
  });

  it("the repository itself has no import outside the table and its listed debts", () => {
    const { violations } = checkLayers();
    expect(violations).toEqual([]);
  });
});
