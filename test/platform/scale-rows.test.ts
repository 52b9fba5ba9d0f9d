// gen:scale (scripts/gen-scale-data.ts) bulk-loads the rows stepRows builds instead of calling
// writeRolloutStep 10^4 times: its figures hold only while those rows are the ones the app stores,
// on either store (the PostgreSQL pass of the test command runs this file on PostgreSQL).
import Database from "better-sqlite3";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { TEST_STORE, useTempDatabase } from "../helpers/temp-db";

const tmp = useTempDatabase("scale-rows");
const { createRun } = await import("@/lib/db/runs");
const { writeRolloutStep } = await import("@/lib/db/rollouts");
const { rolloutStepInputSchema } = await import("@/lib/schemas/rollouts");
const { stepBody, stepRows, STEP_COLS, GROUP_COLS, TRAJECTORY_COLS } = await import("../../scripts/bench-store");
afterAll(() => tmp.cleanup());

/** The table's rows as the store gives them back (pg: typed values; SQLite: 0/1 booleans). */
async function read(table: string, cols: string[], order: string): Promise<Row[]> {
  const sql = `SELECT ${cols.map((c) => `"${c}"`).join(",")} FROM "${table}" ORDER BY ${order}`;
  if (TEST_STORE === "postgresql") {
    const c = new pg.Client({ connectionString: tmp.url });
    await c.connect();
    try {
      return (await c.query({ text: sql, rowMode: "array" })).rows as Row[];
    } finally {
      await c.end();
    }
  }
  const db = new Database(tmp.url.replace(/^file:/, ""), { readonly: true });
  try {
    return db.prepare(sql).raw().all() as Row[];
  } finally {
    db.close();
  }
}

type Row = (string | number | boolean | null | Uint8Array)[];
/** Ids become their order of first appearance, createdAt a constant, booleans SQLite's 0/1. */
function canonical(tables: Row[][], idCols: number[][], createdAtCol: number): Row[][] {
  const ids = new Map<string, string>();
  const id = (v: unknown) => {
    if (!ids.has(v as string)) ids.set(v as string, `id${ids.size}`);
    return ids.get(v as string)!;
  };
  return tables.map((rows, t) =>
    rows.map((r) =>
      r.map((v, c) =>
        idCols[t].includes(c)
          ? id(v)
          : t === 0 && c === createdAtCol
            ? "T"
            : typeof v === "boolean"
              ? v
                ? 1
                : 0
              : v instanceof Uint8Array
                ? Buffer.from(v).toString("hex")
                : v,
      ),
    ),
  );
}

describe("gen:scale's rows", () => {
  it("are the rows writeRolloutStep stores for the same step body, column for column", async () => {
    const runId = createRun({ project: "p", name: "r", kind: "imported", jobKind: null, config: {}, status: "running" }).runId;
    writeRolloutStep(runId, rolloutStepInputSchema.parse(stepBody(0)));
    writeRolloutStep(runId, rolloutStepInputSchema.parse(stepBody(1)));

    const stored = [
      await read("RolloutStep", STEP_COLS, `"step"`),
      await read("RolloutGroup", GROUP_COLS, `"id"`),
      await read("Trajectory", TRAJECTORY_COLS, `"id"`),
    ];

    let n = 0;
    const built = [0, 1].map((step) => stepRows(runId, stepBody(step), step * 1024, "T", () => `gen-${n++}`));
    const generated = [built.flatMap((b) => b.steps), built.flatMap((b) => b.groups), built.flatMap((b) => b.trajectories)];
    expect(stored[2]).toHaveLength(256);
    expect(stored[2].reduce((n, t) => n + (t[TRAJECTORY_COLS.indexOf("length")] as number), 0)).toBe(2048);
    // step id, group id + step id, trajectory id + group id
    const idCols = [[0], [0, 2], [0, 2]];
    expect(canonical(generated, idCols, 6)).toEqual(canonical(stored, idCols, 6));
  });
});
