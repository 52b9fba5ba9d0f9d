// One task across training and labels, on constructed runs (both stores): a task's timeline equals a
// scan of the stored steps; the diff of two trajectories marks exactly the turns whose actions
// differ; a task found by its prompt (first observation) equals a scan of the stored texts over
// two runs whose uids change every step, old index rows without the prompt's hash included; labels filter the trajectory list and the search, count per step, and survive a re-import
// of the run's steps (identical content again is stored once, keeping the same identities).
import { afterAll, describe, expect, it } from "vitest";
import { useTempDatabase } from "../helpers/temp-db";

const tmp = useTempDatabase("task-timeline-labels");
const { createRun } = await import("@/lib/db/runs");
const { getTrajectory, listTrajectories } = await import("@/lib/db/rollouts");
const { ingestStep } = await import("@/lib/ingest/batches");
const { taskTimeline, trajectoryDiff } = await import("@/lib/db/task-timeline");
const { applyLabel, createLabel, deleteLabel, labelSteps, listLabels, removeLabel, runLabelRows, trajectoryLabels } = await import("@/lib/db/labels");
const { dropSearchIndex, indexMissing, searchTrajectories } = await import("@/lib/db/trajectory-search");
const { forgetPromptHashes, missingPromptHashes } = await import("../helpers/db-inspect");
const { trajectorySearchQuerySchema } = await import("@/lib/schemas/search");
const { taskTimelineQuerySchema } = await import("@/lib/schemas/timeline");
const { createLabelSchema } = await import("@/lib/schemas/labels");
const { rolloutStepInputSchema } = await import("@/lib/schemas/rollouts");
afterAll(() => tmp.cleanup());

const STEPS = [0, 1, 3];
/** Step `s`, 2 tasks x 3 trajectories; task t's trajectory i acts `a{(s + i) % 3}` at turn 1, the rest alike. */
function step(s: number) {
  return rolloutStepInputSchema.parse({
    step: s,
    estimator: "grpo",
    groups: [0, 1].map((t) => ({
      uid: `task-${t}`,
      envId: "alfworld",
      taskSeed: 10 + t,
      trajectories: [0, 1, 2].map((i) => {
        const length = 2 + ((s + i + t) % 3);
        return {
          success: (s + i) % 2 === 0,
          turns: Array.from({ length }, (_, k) => ({
            observation: `room ${t} turn ${k}`,
            action: k === 1 ? `a${(s + i) % 3}` : `go ${k}`,
            reward: k === length - 1 ? s + i : 0,
            advantage: k === 0 && i === 2 ? null : (s - i + k) / 4,
          })),
        };
      }),
    })),
  });
}
function seedRun(name: string) {
  const runId = createRun({ project: "p", name, kind: "imported", jobKind: null, config: {}, status: "running" }).runId;
  for (const s of STEPS) expect(ingestStep(runId, step(s)).status).toBe(201);
  return runId;
}
const runA = seedRun("a");
const runB = seedRun("b");

describe("task timeline", () => {
  it("equals a scan of the stored steps, for a uid and for a seed, over two runs", () => {
    const scan = (runId: string, uid: string) =>
      listTrajectories(runId, { pageSize: 200 })
        .trajectories.filter((t) => t.uid === uid)
        .sort((x, y) => x.step - y.step || x.index - y.index)
        .map((t) => {
          const adv = getTrajectory(t.id)!
            .turns.map((u) => u.advantage)
            .filter((a): a is number => a !== null);
          return { step: t.step, id: t.id, index: t.index, success: t.success, reward: t.reward, length: t.length, adv };
        });
    const byUid = taskTimeline(taskTimelineQuerySchema.parse({ runs: `${runA},${runB}`, task: "task-1" }));
    const bySeed = taskTimeline(taskTimelineQuerySchema.parse({ runs: `${runA},${runB}`, seed: "11", envId: "alfworld" }));
    expect(bySeed).toEqual(byUid);
    expect(byUid.runs.map((r) => r.name)).toEqual(["a", "b"]);
    for (const run of byUid.runs) {
      const rows = scan(run.id, "task-1");
      expect(run.steps.map((s) => s.step)).toEqual(STEPS);
      expect(run.steps.flatMap((s) => s.trajectories.map((t) => t.id))).toEqual(rows.map((r) => r.id));
      for (const s of run.steps) {
        const mine = rows.filter((r) => r.step === s.step);
        const all = mine.flatMap((r) => r.adv);
        expect(s.successRate).toBeCloseTo(mine.filter((r) => r.success).length / mine.length, 12);
        expect(s.meanReturn).toBeCloseTo(mine.reduce((a, r) => a + r.reward, 0) / mine.length, 12);
        expect(s.meanLength).toBeCloseTo(mine.reduce((a, r) => a + r.length, 0) / mine.length, 12);
        expect(s.meanAdvantage).toBeCloseTo(all.reduce((a, x) => a + x, 0) / all.length, 12);
        s.trajectories.forEach((t, k) => {
          expect(t).toMatchObject({ index: mine[k].index, success: mine[k].success, reward: mine[k].reward, length: mine[k].length });
          expect(t.meanAdvantage).toBeCloseTo(mine[k].adv.reduce((a, x) => a + x, 0) / mine[k].adv.length, 12);
        });
      }
    }
    // trajectories indexed without advantage sums (or not at all) are read from their credit columns: the same answer
    dropSearchIndex(runA);
    expect(taskTimeline(taskTimelineQuerySchema.parse({ runs: `${runA},${runB}`, task: "task-1" }))).toEqual(byUid);
    expect(indexMissing([runA])).toBe(18);
    expect(() => taskTimelineQuerySchema.parse({ runs: runA })).toThrow(/exactly one of task, seed or prompt/);
    expect(() => taskTimeline(taskTimelineQuerySchema.parse({ runs: "nope", task: "task-1" }))).toThrow(/run nope not found/);
  });

  it("finds a task by its prompt: equals a scan of the stored first observations, over two runs whose uids differ per step", async () => {
    // TRL/verl style: a fresh uid every step; the prompt is the first observation (spacing varies, compared trimmed);
    // in task 0's group one trajectory starts from another text and so is not the task's
    const prompted = (name: string) => {
      const runId = createRun({ project: "p", name, kind: "imported", jobKind: null, config: {}, status: "running" }).runId;
      for (const s of STEPS) {
        const groups = [0, 1].map((t) => ({
          uid: `${name}-${s}-${t}-${Math.random().toString(36).slice(2, 8)}`,
          envId: "chat",
          taskSeed: s * 10 + t,
          trajectories: [0, 1, 2].map((i) => ({
            success: i === s % 3,
            turns: [
              { observation: t === 0 && i === 2 ? "Solve: 2 + 3" : `${s % 2 ? "  " : ""}Solve: ${t} + 1\n`, action: `${t + 1}`, reward: i },
              { observation: "again", action: "done", reward: 0, advantage: i - 1 },
            ],
          })),
        }));
        expect(ingestStep(runId, rolloutStepInputSchema.parse({ step: s, estimator: "grpo", groups })).status).toBe(201);
      }
      return runId;
    };
    const [runC, runD] = [prompted("c"), prompted("d")];
    // rows indexed before the prompt column (hash null) and trajectories not indexed at all: filled on the first lookup
    forgetPromptHashes(runC);
    dropSearchIndex(runD);
    const scan = (runId: string, prompt: string) =>
      listTrajectories(runId, { pageSize: 200 })
        .trajectories.filter((t) => getTrajectory(t.id)!.turns[0].observation.trim() === prompt)
        .sort((x, y) => x.step - y.step || x.uid.localeCompare(y.uid) || x.index - y.index)
        .map((t) => ({ step: t.step, uid: t.uid, id: t.id }));
    const q = (prompt: string) => taskTimeline(taskTimelineQuerySchema.parse({ runs: `${runC},${runD}`, prompt }));
    const t0 = q("Solve: 0 + 1");
    for (const run of t0.runs) {
      const rows = scan(run.id, "Solve: 0 + 1");
      expect(rows).toHaveLength(STEPS.length * 2);
      expect(run.steps.map((s) => s.step)).toEqual(STEPS);
      expect(new Set(run.steps.map((s) => s.uid)).size).toBe(STEPS.length); // a different uid at each step
      expect(run.steps.flatMap((s) => s.trajectories.map((t) => ({ step: s.step, uid: s.uid, id: t.id })))).toEqual(rows);
      for (const s of run.steps) expect(s.meanAdvantage).toBeCloseTo(-0.5, 12); // advantages -1 and 0 of trajectories 0 and 1
    }
    expect(q("  Solve: 1 + 1 ").runs.map((r) => r.steps.flatMap((s) => s.trajectories.map((t) => t.id)))).toEqual(
      [runC, runD].map((r) => scan(r, "Solve: 1 + 1").map((x) => x.id)),
    );
    expect(q("Solve: 2 + 3").runs.map((r) => r.steps.flatMap((s) => s.trajectories).length)).toEqual([3, 3]);
    expect(q("Solve: 9 + 1").runs.every((r) => r.steps.length === 0)).toBe(true);
    expect(missingPromptHashes([runC, runD])).toBe(0);

    const { routeCaller } = await import("../helpers/route-call");
    const timelineRoute = await import("@/app/api/v1/tasks/timeline/route");
    const call = routeCaller();
    const get = (qs: string) => call(timelineRoute.GET, "GET", `/api/v1/tasks/timeline?runs=${runC}&${qs}`);
    const long = await get(`prompt=${"x".repeat(4001)}`);
    expect([long.status, long.json.issues[0].path]).toEqual([400, "query.prompt"]);
    const both = await get("prompt=Solve&task=x");
    expect([both.status, both.json.issues[0].path, both.json.issues[0].message]).toEqual([400, "query.task", "give exactly one of task, seed or prompt"]);
    const ok = await get(`prompt=${encodeURIComponent("Solve: 0 + 1")}`);
    expect([ok.status, ok.json.runs[0].steps.length]).toEqual([200, STEPS.length]);
  });

  it("diffs two trajectories: exactly the turns whose actions differ are marked, each with its advantage", () => {
    const t = taskTimeline(taskTimelineQuerySchema.parse({ runs: `${runA},${runB}`, task: "task-0" }));
    const [x, y] = [t.runs[0].steps[0].trajectories[0], t.runs[1].steps[2].trajectories[1]];
    const d = trajectoryDiff(x.id, y.id);
    const a = getTrajectory(x.id)!.turns;
    const b = getTrajectory(y.id)!.turns;
    expect(d.turns).toHaveLength(Math.max(a.length, b.length));
    const expected = d.turns.filter((_, i) => a[i]?.action !== b[i]?.action || !a[i] || !b[i]).map((u) => u.index);
    expect(d.turns.filter((u) => u.differs).map((u) => u.index)).toEqual(expected);
    expect(expected).toContain(1); // a0 against a(3 + 1) % 3 = a1
    expect(d.differing).toBe(expected.length);
    d.turns.forEach((u, i) => {
      expect(u.a?.advantage ?? null).toBe(a[i]?.advantage ?? null);
      expect(u.b?.advantage ?? null).toBe(b[i]?.advantage ?? null);
    });
    expect(d.a).toMatchObject({ runId: runA, runName: "a", step: 0, uid: "task-0", index: 0 });
    expect(trajectoryDiff(x.id, x.id).differing).toBe(0);
  });
});

describe("labels", () => {
  it("label trajectories and turns, filter, count per step, and keep them across a re-import", async () => {
    const hack = createLabel({ project: "p", name: "reward hacking" });
    const loops = createLabel({ project: "p", name: "loops", position: 5 });
    expect([hack.position, loops.position]).toEqual([1, 5]);
    expect(() => createLabel({ project: "p", name: "loops" })).toThrow(/has a label named loops/);
    expect(() => createLabel({ project: "nope", name: "x" })).toThrow(/project nope not found/);
    expect(createLabelSchema.safeParse({ project: "p", name: "x".repeat(41) }).success).toBe(false);

    const at = (s: number, uid: string, index: number) =>
      listTrajectories(runA, { step: s, pageSize: 200 }).trajectories.find((t) => t.uid === uid && t.index === index)!.id;
    applyLabel(at(1, "task-0", 2), { labelId: hack.id, turn: null, note: "reward without the goal" });
    applyLabel(at(1, "task-0", 2), { labelId: loops.id, turn: 1, note: "" });
    applyLabel(at(3, "task-1", 0), { labelId: hack.id, turn: 0, note: "" });
    applyLabel(at(3, "task-1", 1), { labelId: hack.id, turn: null, note: "first" });
    applyLabel(at(3, "task-1", 1), { labelId: hack.id, turn: null, note: "again: replaces the note" });
    expect(() => applyLabel(at(0, "task-0", 0), { labelId: hack.id, turn: 9, note: "" })).toThrow(/turn 9 is past/);

    const labelled = (label: string) =>
      listTrajectories(runA, { label, pageSize: 200 })
        .trajectories.map((t) => `${t.step}/${t.uid}/${t.index}`)
        .sort();
    expect(labelled("reward hacking")).toEqual(["1/task-0/2", "3/task-1/0", "3/task-1/1"]);
    expect(labelled("loops")).toEqual(["1/task-0/2"]);
    expect(listTrajectories(runA, { label: "reward hacking" }).total).toBe(3);
    expect(listTrajectories(runB, { label: "reward hacking" }).total).toBe(0);
    const hits = await searchTrajectories(trajectorySearchQuerySchema.parse({ project: "p", label: "reward hacking", text: "room" }));
    expect(hits.trajectories.map((h) => h.id).sort()).toEqual([at(1, "task-0", 2), at(3, "task-1", 0), at(3, "task-1", 1)].sort());

    const steps = labelSteps(runA);
    expect(steps.labels.map((l) => l.name)).toEqual(["reward hacking", "loops"]);
    const key = (p: { step: number; labelId: string; count: number }) => `${p.step} ${p.labelId === hack.id ? "hack" : "loops"} ${p.count}`;
    expect(steps.points.map(key).sort()).toEqual(["1 hack 1", "1 loops 1", "3 hack 2"]);
    expect(trajectoryLabels(at(3, "task-1", 1))).toMatchObject([{ name: "reward hacking", turn: null, note: "again: replaces the note" }]);

    // a re-import sends the same steps again: stored once, every label still found on its trajectory
    const before = runLabelRows(runA, undefined);
    for (const s of STEPS) expect(ingestStep(runA, step(s)).status).toBe(200);
    expect(runLabelRows(runA, undefined)).toEqual(before);
    expect(before.map((r) => [r.step, r.task, r.index, r.turn, r.label])).toEqual([
      [1, "task-0", 2, null, "reward hacking"],
      [1, "task-0", 2, 1, "loops"],
      [3, "task-1", 0, 0, "reward hacking"],
      [3, "task-1", 1, null, "reward hacking"],
    ]);
    expect(before.every((r) => r.trajectoryId !== null)).toBe(true);
    expect(labelled("reward hacking")).toHaveLength(3);

    removeLabel(at(3, "task-1", 0), hack.id, 0);
    expect(() => removeLabel(at(3, "task-1", 0), hack.id, 0)).toThrow(/not found/);
    expect(labelled("reward hacking")).toHaveLength(2);
    deleteLabel(loops.id);
    expect(listLabels("p").map((l) => [l.name, l.uses])).toEqual([["reward hacking", 2]]);
    expect(labelled("loops")).toEqual([]);
  });
});

describe("label routes", () => {
  it("refuse bad bodies with a 400 naming the field and change nothing; writes need the API token when one is set", async () => {
    const { routeCaller } = await import("../helpers/route-call");
    const labelsRoute = await import("@/app/api/v1/labels/route");
    const applyRoute = await import("@/app/api/v1/trajectories/[id]/labels/route");
    const call = routeCaller();
    const before = listLabels("p");
    const long = await call(labelsRoute.POST, "POST", "/api/v1/labels", { body: { project: "p", name: "x".repeat(41) } });
    expect(long.status).toBe(400);
    expect(long.json.issues.map((i: { path: string }) => i.path)).toContain("body.name");
    const digit = await call(labelsRoute.POST, "POST", "/api/v1/labels", { body: { project: "p", name: "ok", position: 10 } });
    expect([digit.status, digit.json.issues[0].path]).toEqual([400, "body.position"]);
    const id = listTrajectories(runB, { pageSize: 1 }).trajectories[0].id;
    const labelId = before[0].id;
    const note = await call(applyRoute.POST, "POST", `/api/v1/trajectories/${id}/labels`, { params: { id }, body: { labelId, note: "n".repeat(1001) } });
    expect([note.status, note.json.issues[0].path]).toEqual([400, "body.note"]);
    expect(listLabels("p")).toEqual(before);
    expect(trajectoryLabels(id)).toEqual([]);

    process.env.TURNLENS_API_TOKEN = "w".repeat(40);
    try {
      const refused = await call(labelsRoute.POST, "POST", "/api/v1/labels", { body: { project: "p", name: "format error" } });
      expect(refused.status).toBe(401);
      expect(listLabels("p")).toEqual(before);
    } finally {
      delete process.env.TURNLENS_API_TOKEN;
    }
    const made = await call(labelsRoute.POST, "POST", "/api/v1/labels", { body: { project: "p", name: "format error" } });
    expect([made.status, made.json.name, made.json.position]).toEqual([201, "format error", 2]);
  });
});
