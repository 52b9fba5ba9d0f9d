// A group's trajectories share one Brotli stream of texts, held by the first of them; the others
// refer to it (lib/db/trajectory-pack.ts). Every reader must give each trajectory its own texts:
// one trajectory alone (its holder not among the rows read), a group, a step, a run's turns, and a
// search; a group too large for one stream splits into several; and rows written before texts were
// shared (one trajectory's texts deflated) read as they did.
import zlib from "node:zlib";
import { afterAll, describe, expect, it } from "vitest";
import { useTempDatabase } from "../helpers/temp-db";

const tmp = useTempDatabase("shared-texts");
const { createRun } = await import("@/lib/db/runs");
const { writeRolloutStep, getTrajectory, listTrajectories, turnsPage } = await import("@/lib/db/rollouts");
const { groupTexts, stepTexts } = await import("@/lib/db/credit");
const { SHARED_RAW_BYTES, turnTextsRef } = await import("@/lib/db/trajectory-pack");
const { readTurnTexts } = await import("@/lib/db/trajectory-texts");
const { overwriteTurnTexts, stepIdOfGroup, trajectoryTextRows } = await import("../helpers/db-inspect");
afterAll(() => tmp.cleanup());

const obs = (g: number, t: number, i: number, size = 0) => `g${g} t${t} turn ${i} "quoted"\né ${"x".repeat(size)}`;

function writeStep(runId: string, step: number, trajectories: number, size = 0) {
  writeRolloutStep(runId, {
    step,
    groups: [0, 1].map((g) => ({
      uid: `g${g}`,
      envId: "sokoban",
      taskSeed: g,
      trajectories: Array.from({ length: trajectories }, (_, t) => ({
        success: t % 2 === 0,
        truncated: false,
        turns: Array.from({ length: 3 }, (_, i) => ({
          observation: obs(g, t, i, size),
          action: `a${t}.${i}`,
          reward: i,
          valid: true,
          done: i === 2,
          info: i === 1 ? { note: `n${t}` } : undefined,
        })),
      })),
    })),
  });
}

const rowsOf = (runId: string) => trajectoryTextRows(runId);

describe("shared turn texts", () => {
  it("gives each trajectory its own texts through every reader", () => {
    const runId = createRun({ project: "p", name: "shared", kind: "imported", jobKind: null, config: {}, status: "running" }).runId;
    writeStep(runId, 0, 4);
    const rows = rowsOf(runId);
    // one stream a group, in its first trajectory's row; the others refer to it
    for (const r of rows)
      expect(turnTextsRef(r.turnTexts)?.holder ?? null).toBe(r.index === 0 ? null : rows.find((h) => h.groupId === r.groupId && h.index === 0)!.id);
    const byId = new Map(listTrajectories(runId, { pageSize: 100 }).trajectories.map((t) => [t.id, t]));
    for (const r of rows) {
      const t = byId.get(r.id)!;
      const g = t.uid === "g0" ? 0 : 1;
      const turns = getTrajectory(r.id)!.turns; // alone: its holder read for it
      expect(turns.map((u) => [u.observation, u.action, u.info])).toEqual(
        [0, 1, 2].map((i) => [obs(g, r.index, i), `a${r.index}.${i}`, i === 1 ? { note: `n${r.index}` } : null]),
      );
      expect(readTurnTexts([{ id: r.id, turnTexts: r.turnTexts }])[0].observation).toEqual(turns.map((u) => u.observation));
    }
    const group = groupTexts(rows[0].groupId);
    expect([...group.keys()]).toEqual(rows.filter((r) => r.groupId === rows[0].groupId).map((r) => r.id));
    for (const [id, texts] of group) expect(texts.map((x) => x.observation)).toEqual(getTrajectory(id)!.turns.map((u) => u.observation));
    const step = stepTexts(stepIdOfGroup(rows[0].groupId));
    for (const r of rows) expect(step.get(r.id)!.actions).toContain(`a${r.index}.2`);
    // a run's turns from a cursor that starts past every holder of the page
    const page = turnsPage(runId, 3 * rows.length - 4, 10).turns;
    expect(page.map((u) => u.observation)).toEqual(
      rows
        .slice(-2)
        .flatMap((r) => getTrajectory(r.id)!.turns.map((u) => u.observation))
        .slice(-3),
    );
  });

  it("splits a group's texts into streams of at most SHARED_RAW_BYTES", () => {
    const runId = createRun({ project: "p", name: "big", kind: "imported", jobKind: null, config: {}, status: "running" }).runId;
    // 5 trajectories of 3 x ~150 KB observations a group: ~450 KB each, two to a stream at most
    const size = Math.floor(SHARED_RAW_BYTES / 7);
    writeStep(runId, 0, 5, size);
    const rows = rowsOf(runId).filter((r) => r.groupId === rowsOf(runId)[0].groupId);
    const holders = rows.map((r) => turnTextsRef(r.turnTexts)?.holder ?? r.id);
    expect(holders).toEqual([rows[0].id, rows[0].id, rows[2].id, rows[2].id, rows[4].id]);
    for (const r of rows) expect(getTrajectory(r.id)!.turns[2].observation).toBe(obs(0, r.index, 2, size));
  });

  it("reads a row written before texts were shared (one trajectory's texts deflated)", () => {
    const runId = createRun({ project: "p", name: "old", kind: "imported", jobKind: null, config: {}, status: "running" }).runId;
    writeStep(runId, 0, 2);
    const [row] = rowsOf(runId);
    const old = { observation: ["before", 'with "quotes"\n'], action: ["x", "y"], info: [null, { k: 1 }] };
    overwriteTurnTexts(row.id, zlib.deflateSync(JSON.stringify(old), { level: 6 }), 2);
    const turns = getTrajectory(row.id)!.turns;
    expect(turns.map((u) => [u.observation, u.action, u.info])).toEqual([
      ["before", "x", null],
      ['with "quotes"\n', "y", { k: 1 }],
    ]);
  });
});
