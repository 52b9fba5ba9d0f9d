// A step in parts near the limit a step in parts may hold (TURNLENS_MAX_STEP_PARTS_MB, 256 MB of
// JSON): 7 parts of 36 M characters stored through lib/ingest (ingestStepPart, in-process, a fresh
// SQLite file); prints each part's time and the process's resident memory, the last part storing
// the whole step. The default limit is set from it: the step completes, well within V8's longest
// string (2^29 characters), which the completed step's hash needs in one piece.
//   node --import tsx scripts/bench-step-parts.ts [parts]
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

const parts = Number(process.argv[2] ?? 7);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "turnlens-step-parts-"));
process.env.DATABASE_URL = `file:${path.join(dir, "bench.db")}`;
execFileSync(process.execPath, ["scripts/db-migrate.mjs", "deploy"], { stdio: "pipe", env: process.env });
const { ingestStepPart } = await import("../lib/ingest/batches");
const { createRun } = await import("../lib/db/runs");
const { getRawDb } = await import("../lib/db/raw");
try {
  const { runId } = createRun({ kind: "imported", jobKind: null, status: "running", name: "step-parts", project: "bench", config: {}, envId: "alfworld" });
  const obs = "y".repeat(20_000);
  let total = 0;
  for (let p = 0; p < parts; p++) {
    const groups = Array.from({ length: 30 }, (_, g) => ({
      uid: `p${p}g${g}`,
      envId: "alfworld",
      taskSeed: 0,
      trajectories: Array.from({ length: 2 }, () => ({
        success: false,
        truncated: false,
        turns: Array.from({ length: 30 }, (_, k) => ({ observation: obs + k, action: "go", reward: 0, valid: true, done: false })),
      })),
    }));
    const input = { step: 1, part: p, parts, groups };
    total += JSON.stringify(input).length;
    const t0 = performance.now();
    const r = ingestStepPart(runId, input, getRawDb()).body as { complete: boolean; turns?: number };
    const ms = performance.now() - t0;
    console.log(
      `part ${p}: ${(total / 1e6).toFixed(0)} M characters held, ${ms.toFixed(0)} ms, rss ${Math.round(process.memoryUsage().rss / 1e6)} MB${r.complete ? `, step stored (${r.turns} turns)` : ""}`,
    );
  }
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}
