// gen:scale (scripts/gen-scale-data.ts) bulk-loads the rows stepRows builds instead of calling
// writeRolloutStep 10^4 times: its figures hold only while those rows are the ones the app stores,
// on either store (the PostgreSQL pass of the test command runs this file on PostgreSQL).
import { afterAll, describe, expect, it } from "vitest";
import { useTempDatabase } from "../helpers/temp-db";

const tmp = useTempDatabase("scale-rows");
const { createRun } = await import("@/lib/db/runs");
const { writeRolloutStep } = await import("@/lib/db/rollouts");
const { rolloutStepInputSchema } = await import("@/lib/schemas/rollouts");
const { tableRows } = await import("../helpers/db-inspect");
const { openBulkSink } = await import("@/lib/db/bulk-load");
const { dbDateTime } = await import("@/lib/db/raw");
const { orderedId } = await import("@/lib/db/ids");
const { turnTextsRef } = await import("@/lib/db/trajectory-pack");
const { stepBody, stepRows, STEP_COLS, GROUP_COLS, TRAJECTORY_COLS } = await import("../../scripts/bench-store");
afterAll(() => tmp.cleanup());

const newRun = (name: string) => createRun({ project: "p", name, kind: "imported", jobKind: null, config: {}, status: "running" }).runId;

/** A run's step, group and trajectory rows as the store gives them back, in the order they were made (UUIDv7 ids). */
const stored = (runId: string) => [
  tableRows("RolloutStep", STEP_COLS, ["step"], runId) as Row[],
  tableRows("RolloutGroup", GROUP_COLS, ["id"], runId) as Row[],
  tableRows("Trajectory", TRAJECTORY_COLS, ["id"], runId) as Row[],
];
// step id, group id + step id, trajectory id + group id
const ID_COLS = [[0], [0, 2], [0, 2]];

type Row = (string | number | boolean | null | Uint8Array)[];
/** Ids become their order of first appearance (a turnTexts reference's too), createdAt a constant, booleans SQLite's 0/1. */
function canonical(tables: Row[][], idCols: number[][], createdAtCol: number): Row[][] {
  const ids = new Map<string, string>();
  const id = (v: unknown) => {
    if (!ids.has(v as string)) ids.set(v as string, `id${ids.size}`);
    return ids.get(v as string)!;
  };
  const textsRef = (v: Uint8Array) => {
    const ref = turnTextsRef(v);
    return ref && `texts of ${id(ref.holder)} at ${ref.place}`;
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
                ? (textsRef(v) ?? Buffer.from(v).toString("hex"))
                : v,
      ),
    ),
  );
}

describe("gen:scale's rows", () => {
  it("are the rows writeRolloutStep stores for the same step body, column for column", () => {
    const runId = newRun("written");
    writeRolloutStep(runId, rolloutStepInputSchema.parse(stepBody(0)));
    writeRolloutStep(runId, rolloutStepInputSchema.parse(stepBody(1)));
    const rows = stored(runId);

    let n = 0;
    const built = [0, 1].map((step) => stepRows(runId, stepBody(step), step * 1024, "T", () => `gen-${n++}`));
    const generated = [built.flatMap((b) => b.steps), built.flatMap((b) => b.groups), built.flatMap((b) => b.trajectories)];
    expect(rows[2]).toHaveLength(256);
    expect(rows[2].reduce((n, t) => n + (t[TRAJECTORY_COLS.indexOf("length")] as number), 0)).toBe(2048);
    expect(canonical(generated, ID_COLS, 6)).toEqual(canonical(rows, ID_COLS, 6));
  });

  it("load through lib/db/bulk-load.ts's sink into the rows writeRolloutStep stores", async () => {
    const written = newRun("written-2");
    const loaded = newRun("loaded");
    for (const step of [0, 1]) writeRolloutStep(written, rolloutStepInputSchema.parse(stepBody(step)));
    const built = [0, 1].map((step) => stepRows(loaded, stepBody(step), step * 1024, dbDateTime(), orderedId));
    const sink = await openBulkSink(tmp.url);
    try {
      await sink.write([
        ["RolloutStep", STEP_COLS, built.flatMap((b) => b.steps)],
        ["RolloutGroup", GROUP_COLS, built.flatMap((b) => b.groups)],
        ["Trajectory", TRAJECTORY_COLS, built.flatMap((b) => b.trajectories)],
      ]);
    } finally {
      await sink.close();
    }
    const a = stored(written);
    const b = stored(loaded);
    expect(b[2]).toHaveLength(256);
    // the run id differs: compare with it blanked (column 1 of every table)
    const blank = (tables: Row[][]) => tables.map((rows) => rows.map((r) => r.map((v, c) => (c === 1 ? "run" : v))));
    expect(canonical(blank(b), ID_COLS, 6)).toEqual(canonical(blank(a), ID_COLS, 6));
  });
});
