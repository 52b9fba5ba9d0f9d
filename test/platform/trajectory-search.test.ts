// Trajectory search answers exactly what a scan of every stored turn answers: by words and phrases
// in observations or actions, outcome, length, return, step, environment, task and per-turn
// conditions, over runs or a project, in sort order, across pages (checked on both stores). The
// index follows its trajectories: a deleted run leaves nothing behind, and trajectories stored
// without index entries are indexed on their run's first search.
import { afterAll, describe, expect, it } from "vitest";
import { useTempDatabase } from "../helpers/temp-db";
import type { TurnOut } from "@/lib/schemas/rollouts";
import type { TrajectorySearchQuery } from "@/lib/schemas/search";

const tmp = useTempDatabase("trajectory-search");
const { createRun, deleteRun, finishImportedRunRow, getRun } = await import("@/lib/db/runs");
const { writeRolloutStep, listTrajectories, getTrajectory } = await import("@/lib/db/rollouts");
const { dropSearchIndex, searchTrajectories, searchTerms } = await import("@/lib/db/trajectory-search");
const { trajectorySearchQuerySchema } = await import("@/lib/schemas/search");
const { countRows } = await import("../helpers/db-inspect");
afterAll(() => tmp.cleanup());

// a small deterministic generator (mulberry32)
function rng(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const VOCAB = ["You", "see", "a", "desk", "Desk", "drawer", "search[laptop]", "go to", "café", "42", "open", "the", "fridge.", "apple,", "x9", "take", "Look"];
const ANCHORS = ["room-a", "room-b", '{"x":1}', null];

function seed(project: string, name: string, r: () => number) {
  const runId = createRun({ project, name, kind: "imported", jobKind: null, config: {}, status: "running" }).runId;
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(r() * xs.length)];
  const sentence = (n: number) => Array.from({ length: n }, () => pick(VOCAB)).join(r() < 0.5 ? " " : "  ");
  for (const step of [0, 1, 2, 5]) {
    writeRolloutStep(runId, {
      step,
      groups: [0, 1, 2].map((g) => ({
        uid: `s${step}-g${g}`,
        envId: g === 2 ? "webshop" : "alfworld",
        taskSeed: g,
        trajectories: [0, 1, 2, 3].map(() => {
          const length = 1 + Math.floor(r() * 6);
          return {
            success: r() < 0.4,
            truncated: false,
            turns: Array.from({ length }, () => ({
              observation: sentence(1 + Math.floor(r() * 6)),
              action: sentence(1 + Math.floor(r() * 3)),
              reward: Math.round(r() * 4 - 2) / 2,
              valid: r() < 0.8,
              done: false,
              anchor: pick(ANCHORS),
              advantage: r() < 0.15 ? null : r() < 0.1 ? 0 : Math.round((r() * 4 - 2) * 100) / 100,
            })),
          };
        }),
      })),
    });
  }
  return runId;
}

const r = rng(7);
const runA = seed("p", "a", r);
const runB = seed("p", "b", r);
const runC = seed("q", "c", r);

interface Stored {
  id: string;
  runId: string;
  step: number;
  task: string;
  envId: string;
  reward: number;
  success: boolean;
  length: number;
  turns: TurnOut[];
}
function stored(runId: string): Stored[] {
  const out: Stored[] = [];
  for (let page = 1; ; page++) {
    const { trajectories } = listTrajectories(runId, { page, pageSize: 200 });
    for (const t of trajectories) {
      const d = getTrajectory(t.id)! as ReturnType<typeof getTrajectory> & { uid: string };
      // the seed puts group 2 of every step in webshop
      out.push({
        id: t.id,
        runId,
        step: t.step,
        task: d.uid,
        envId: d.uid.endsWith("g2") ? "webshop" : "alfworld",
        reward: t.reward,
        success: t.success,
        length: t.length,
        turns: d.turns,
      });
    }
    if (trajectories.length < 200) return out;
  }
}
const ALL = [...stored(runA), ...stored(runB), ...stored(runC)];

// The brute force: words by splitting on anything that is not a letter or digit.
const words = (s: string) =>
  s
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter((w) => w && w.length <= 64)
    .join(" ");
function scan(q: TrajectorySearchQuery): Stored[] {
  // the runs named, those of them in the project, or every run
  const runs = [...new Set(ALL.map((t) => t.runId))].filter(
    (id) => (!q.runs || q.runs.includes(id)) && (q.project === undefined || getRun(id).project === q.project),
  );
  const terms = q.text ? searchTerms(q.text).map((t) => ` ${t.join(" ")} `) : [];
  const perTurn = [q.minTurn, q.maxTurn, q.advantage, q.minAdvantage, q.maxAdvantage, q.minReward, q.maxReward, q.valid, q.anchor].some((v) => v !== undefined);
  return ALL.filter((t) => {
    if (!runs.includes(t.runId)) return false;
    if (q.outcome && t.success !== (q.outcome === "success")) return false;
    if (q.minLength !== undefined && t.length < q.minLength) return false;
    if (q.maxLength !== undefined && t.length > q.maxLength) return false;
    if (q.minReturn !== undefined && t.reward < q.minReturn) return false;
    if (q.maxReturn !== undefined && t.reward > q.maxReturn) return false;
    if (q.step !== undefined && t.step !== q.step) return false;
    if (q.minStep !== undefined && t.step < q.minStep) return false;
    if (q.maxStep !== undefined && t.step > q.maxStep) return false;
    if (q.envId !== undefined && t.envId !== q.envId) return false;
    if (q.task !== undefined && t.task !== q.task) return false;
    for (const term of terms) {
      const fields = (u: TurnOut) => (q.in === "observation" ? [u.observation] : q.in === "action" ? [u.action] : [u.observation, u.action]);
      if (!t.turns.some((u) => fields(u).some((f) => ` ${words(f)} `.includes(term)))) return false;
    }
    if (perTurn && !t.turns.some((u) => turnMeets(q, u))) return false;
    return true;
  });
}
function turnMeets(q: TrajectorySearchQuery, u: TurnOut): boolean {
  const a = u.advantage;
  if (q.minTurn !== undefined && u.index < q.minTurn) return false;
  if (q.maxTurn !== undefined && u.index > q.maxTurn) return false;
  if ((q.advantage || q.minAdvantage !== undefined || q.maxAdvantage !== undefined) && a == null) return false;
  if (q.advantage === "positive" && !(a! > 0)) return false;
  if (q.advantage === "negative" && !(a! < 0)) return false;
  if (q.advantage === "zero" && a !== 0) return false;
  if (q.minAdvantage !== undefined && a! < q.minAdvantage) return false;
  if (q.maxAdvantage !== undefined && a! > q.maxAdvantage) return false;
  if (q.minReward !== undefined && u.reward < q.minReward) return false;
  if (q.maxReward !== undefined && u.reward > q.maxReward) return false;
  if (q.valid !== undefined && u.valid !== (q.valid === "true")) return false;
  if (q.anchor !== undefined && u.anchor !== q.anchor) return false;
  return true;
}

/** Every page of a search, in order. */
async function allPages(raw: Record<string, string>, budgetMs?: number) {
  const q = trajectorySearchQuerySchema.parse(raw);
  const hits = [];
  let cursor: string | undefined;
  for (let i = 0; i < 500; i++) {
    const page = await searchTrajectories({ ...q, cursor }, undefined, { budgetMs });
    hits.push(...page.trajectories);
    if (!page.next) return { q, hits };
    cursor = page.next;
  }
  throw new Error("search did not end");
}

const QUERIES: Record<string, string>[] = [
  { runs: runA },
  { pageSize: "7" }, // every run
  { runs: `${runA},${runC}`, project: "p", text: "desk" }, // the named runs in the project: runA only
  { runs: `${runA},${runB}`, text: "desk" },
  { project: "p", text: "Desk drawer", in: "observation" },
  { project: "p", text: '"go to" fridge', pageSize: "3" },
  { runs: runA, text: '"search laptop"', in: "action" },
  { runs: runA, text: "café 42", sort: "return", order: "asc" },
  { runs: `${runA},${runC}`, outcome: "failure", minLength: "2", maxLength: "4", sort: "length" },
  { project: "p", minReturn: "-1", maxReturn: "1.5", minStep: "1", maxStep: "2" },
  { runs: runB, step: "5", envId: "webshop" },
  { runs: runB, task: "s1-g0" },
  { project: "p", minTurn: "2", maxTurn: "2", advantage: "negative" },
  { runs: runA, advantage: "zero", pageSize: "2" },
  { runs: runA, minAdvantage: "-0.5", maxAdvantage: "0.5", valid: "false" },
  { runs: runB, anchor: '{"x":1}', minReward: "0.5" },
  { project: "p", text: "open", in: "action", advantage: "positive", outcome: "success", sort: "return" },
  { project: "q", text: '"the fridge" apple', maxReward: "-1", pageSize: "1" },
  { runs: runA, text: "nothingmatchesthis" },
];

describe("searchTrajectories", () => {
  it.each(QUERIES.map((q, i) => [i, q] as const))("query %i gives exactly the trajectories a scan finds, in order, once", async (_, raw) => {
    const { q, hits } = await allPages(raw);
    const want = scan(q);
    expect(new Set(hits.map((h) => h.id)).size).toBe(hits.length); // no trajectory on two pages
    expect(hits.map((h) => h.id).sort()).toEqual(want.map((t) => t.id).sort());
    const value = (h: { step: number; reward: number; length: number }) => (q.sort === "step" ? h.step : q.sort === "return" ? h.reward : h.length);
    for (let i = 1; i < hits.length; i++) expect(q.order === "desc" ? value(hits[i - 1]) >= value(hits[i]) : value(hits[i - 1]) <= value(hits[i])).toBe(true);
    const byId = new Map(want.map((t) => [t.id, t]));
    for (const h of hits) {
      const t = byId.get(h.id)!;
      expect([h.runId, h.step, h.task, h.envId, h.reward, h.success, h.length]).toEqual([t.runId, t.step, t.task, t.envId, t.reward, t.success, t.length]);
      // the matched turns are those meeting the per-turn conditions (else holding a term)
      const perTurn = [q.minTurn, q.maxTurn, q.advantage, q.minAdvantage, q.maxAdvantage, q.minReward, q.maxReward, q.valid, q.anchor].some(
        (v) => v !== undefined,
      );
      if (perTurn) expect(h.matchedTurns).toEqual(t.turns.filter((u) => turnMeets(q, u)).map((u) => u.index));
    }
    if (raw.text !== "nothingmatchesthis") expect(want.length).toBeGreaterThan(0); // each query tests something
  });

  it.each(QUERIES.map((q, i) => [i, q] as const))("query %i gives the same pages put together when each page checks one candidate", async (_, raw) => {
    // a time budget of 0: a page with a phrase or a per-turn condition stops after its first candidate, partial
    const one = await allPages(raw, 0);
    expect(one.hits).toEqual((await allPages(raw)).hits);
  });

  it("pages without per-turn conditions answer the page size and a cursor while more remain", async () => {
    const q = trajectorySearchQuerySchema.parse({ runs: runA, pageSize: "5" });
    const first = await searchTrajectories(q);
    expect(first.trajectories).toHaveLength(5);
    expect(first.next).not.toBeNull();
    expect((await searchTrajectories({ ...q, cursor: first.next! })).trajectories[0].id).not.toBe(first.trajectories[4].id);
  });

  it("refuses a non-finite number and a forged cursor, naming the field; a reversed range or a word too long to index matches nothing", async () => {
    expect((await searchTrajectories(trajectorySearchQuerySchema.parse({ runs: runA, minLength: "5", maxLength: "2" }))).trajectories).toEqual([]);
    expect(trajectorySearchQuerySchema.safeParse({ runs: runA, minReturn: "1e999" }).success).toBe(false);
    // every finite number as Python or JavaScript prints it is a number here
    for (const x of ["-1.5509206760962212e-233", "1e+16", "-0.0", "0.30000000000000004", "5e-324"])
      expect(trajectorySearchQuerySchema.safeParse({ maxReward: x }).success, x).toBe(true);
    expect(trajectorySearchQuerySchema.safeParse({ runs: runA, cursor: "bm90LWEtY3Vyc29y" }).error?.issues[0].path).toEqual(["cursor"]);
    // any cursor of the documented form is a position: past the ends, the page starts at an end
    const top = await searchTrajectories(trajectorySearchQuerySchema.parse({ runs: runA, cursor: "1e999_999999999999999", pageSize: "3" }));
    expect(top.trajectories.map((h) => h.id)).toEqual(
      (await searchTrajectories(trajectorySearchQuerySchema.parse({ runs: runA, pageSize: "3" }))).trajectories.map((h) => h.id),
    );
    expect((await searchTrajectories(trajectorySearchQuerySchema.parse({ runs: runA, sort: "return", cursor: "-1e999_0" }))).trajectories).toEqual([]);
    // a word too long to be indexed is in no turn
    expect((await searchTrajectories(trajectorySearchQuerySchema.parse({ runs: runA, text: `desk ${"a".repeat(65)}` }))).trajectories).toEqual([]);
  });

  it("indexes trajectories stored without index entries on their run's first search", async () => {
    const runD = seed("p", "d", rng(11));
    const before = (await allPages({ runs: runD, text: "desk" })).hits.map((h) => h.id);
    const runE = seed("p", "e", rng(11)); // the same content, never searched
    dropSearchIndex(runE);
    const after = (await allPages({ runs: runE, text: "desk" })).hits;
    expect(after.length).toBe(before.length);
    expect(after.length).toBeGreaterThan(0);
  });

  it("indexes every trajectory of a step larger than one insert statement under its own key", async () => {
    // 300 trajectories: the index rows go in statements of 200, 64, 32 and 4 rows, each returning
    // the keys it generated; each trajectory's word must lead back to it alone
    const runG = createRun({ project: "big", name: "g", kind: "imported", jobKind: null, config: {}, status: "running" }).runId;
    writeRolloutStep(runG, {
      step: 0,
      groups: Array.from({ length: 30 }, (_, g) => ({
        uid: `g${g}`,
        envId: "alfworld",
        taskSeed: g,
        trajectories: Array.from({ length: 10 }, (_, t) => ({
          success: false,
          truncated: false,
          turns: [{ observation: `room marker${g * 10 + t}`, action: "look", reward: 0, valid: true, done: true, anchor: null, advantage: 0 }],
        })),
      })),
    });
    const byTask = new Map(stored(runG).map((x) => [x.turns[0].observation, x.id]));
    expect(byTask.size).toBe(300);
    for (let i = 0; i < 300; i++) {
      const hits = (await allPages({ runs: runG, text: `marker${i}` })).hits.map((h) => h.id);
      expect(hits).toEqual([byTask.get(`room marker${i}`)]);
    }
  });

  it("a deleted run leaves no index entries behind", async () => {
    const runF = seed("z", "f", rng(3));
    const count = () => countRows("TrajectoryText");
    const keys = () => countRows("TrajectorySearch", runF);
    const n = count();
    expect(keys()).toBe(48);
    finishImportedRunRow(runF, "succeeded", new Date());
    await deleteRun(runF);
    expect(keys()).toBe(0);
    expect(count()).toBe(n - 48);
    expect((await allPages({ project: "z", text: "desk" })).hits).toEqual([]);
  });
});
