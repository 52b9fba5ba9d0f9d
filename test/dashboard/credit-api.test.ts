// The dashboard's read endpoints through their real route handlers on a real SQLite file:
// credit recompute (heatmap slice), credit over training, compare data, run-list filters and
// config-value filters.
import { routeCaller } from "../helpers/route-call";
import { beforeAll, describe, expect, it } from "vitest";
import { useTempDatabase } from "../helpers/temp-db";
import { creditGroups, curve, gigpoStep, GIGPO_PARAMS } from "./fixtures";

useTempDatabase("dashboard-api");
const importRoute = await import("@/app/api/v1/runs/import/route");
const stepsRoute = await import("@/app/api/v1/runs/[id]/steps/route");
const groupsRoute = await import("@/app/api/v1/runs/[id]/steps/[step]/groups/route");
const metricsRoute = await import("@/app/api/v1/runs/[id]/metrics/route");
const creditRoute = await import("@/app/api/v1/runs/[id]/steps/[step]/groups/[groupId]/credit/route");
const overviewRoute = await import("@/app/api/v1/runs/[id]/credit/route");
const compareRoute = await import("@/app/api/v1/compare/route");
const filtersRoute = await import("@/app/api/v1/runs/filters/route");
const runsRoute = await import("@/app/api/v1/runs/route");
const { runCredit } = await import("@/lib/credit");

const call = routeCaller();

const steps = [0, 1, 2].map((s) => gigpoStep(s, { groups: 3, G: 4, maxTurns: 6 }));
let runId = "";
let grpoRun = "";
const q = (o: Record<string, unknown>) => new URLSearchParams(Object.entries(o).map(([k, v]) => [k, typeof v === "string" ? v : JSON.stringify(v)])).toString();

beforeAll(async () => {
  const r = await call(importRoute.POST, "POST", "/api/v1/runs/import", {
    body: {
      name: "gigpo-s0",
      envId: "frozenlake",
      estimator: "gigpo",
      tags: ["dash"],
      config: { lr: 1e-4, estimator: "gigpo", estimatorParams: GIGPO_PARAMS, envConfig: { size: 4 } },
    },
  });
  runId = r.json.id;
  for (const s of steps) expect((await call(stepsRoute.POST, "POST", `/api/v1/runs/${runId}/steps`, { body: s, params: { id: runId } })).status).toBe(201);
  await call(metricsRoute.POST, "POST", `/api/v1/runs/${runId}/metrics`, { body: { points: curve(50, 0, 0.8) }, params: { id: runId } });
  const g = await call(importRoute.POST, "POST", "/api/v1/runs/import", {
    body: {
      name: "grpo-s0",
      envId: "frozenlake",
      estimator: "grpo",
      tags: ["dash", "baseline-cmp"],
      config: { lr: 3e-4, estimator: "grpo", envConfig: { size: 6 } },
    },
  });
  grpoRun = g.json.id;
  await call(metricsRoute.POST, "POST", `/api/v1/runs/${grpoRun}/metrics`, { body: { points: curve(40, 1, 0.5) }, params: { id: grpoRun } });
});

async function groupOf(step: number, i: number) {
  const gs = await call(groupsRoute.GET, "GET", `/api/v1/runs/${runId}/steps/${step}/groups`, { params: { id: runId, step: String(step) } });
  return gs.json.groups[i] as { id: string; uid: string };
}

describe("group credit (heatmap slice)", () => {
  it("returns the stored advantages, rewards, validity, anchor groups and turn texts of a group", async () => {
    const g = await groupOf(1, 0);
    const r = await call(creditRoute.GET, "GET", `/api/v1/runs/${runId}/steps/1/groups/${g.id}/credit`, { params: { id: runId, step: "1", groupId: g.id } });
    expect(r.status).toBe(200);
    expect(r.json.source).toBe("stored");
    expect(r.json.estimator).toBe("gigpo");
    expect(r.json.trained).toEqual({ estimator: "gigpo", params: GIGPO_PARAMS });
    const input = steps[1].groups.find((x) => x.uid === g.uid)!;
    expect(r.json.trajectories).toHaveLength(4);
    expect(r.json.advantages).toEqual(input.trajectories.map((t) => t.turns.map((u) => (u as { advantage: number }).advantage)));
    expect(r.json.rewards).toEqual(input.trajectories.map((t) => t.turns.map((u) => u.reward)));
    expect(r.json.valid).toEqual(input.trajectories.map((t) => t.turns.map((u) => u.valid)));
    // equal anchors share an id; the start state is shared by every trajectory
    const first = r.json.anchorGroup.map((row: number[]) => row[0]);
    expect(new Set(first).size).toBe(1);
    expect(r.json.anchorKeys[first[0]]).toBe(input.trajectories[0].turns[0].anchor);
    expect(r.json.texts[0][0].action).toBe(input.trajectories[0].turns[0].action);
    expect(r.json.texts[0][0].observation).toContain("frozen lake");
    expect(r.json.fieldsAll).toEqual(expect.arrayContaining(["anchor", "tokens"]));
  });

  it("recomputes with another estimator over the whole step batch: the values lib/credit gives", async () => {
    const g = await groupOf(2, 1);
    const r = await call(creditRoute.GET, "GET", `/api/v1/runs/${runId}/steps/2/groups/${g.id}/credit?estimator=grpo`, {
      params: { id: runId, step: "2", groupId: g.id },
    });
    expect(r.status).toBe(200);
    expect(r.json.source).toBe("recomputed");
    expect(r.json.params).toEqual({ epsilon: 1e-6 });
    expect(r.json.paramsFrom).toBe("defaults");
    const batch = creditGroups(steps[2]).sort((a, b) => a.uid.localeCompare(b.uid));
    const want = runCredit({ estimator: "grpo", groups: batch });
    const mine = want.trajectories.filter((t) => t.id.startsWith(`${g.uid}/`)).map((t) => t.advantages);
    expect(r.json.advantages.length).toBe(mine.length);
    r.json.advantages.forEach((row: number[], i: number) => {
      row.forEach((v, j) => {
        expect(v).toBeCloseTo(mine[i][j], 12);
      });
    });
    expect(r.json.diagnostics.estimator).toBe("grpo");
    expect(r.json.diagnostics.counts.groups).toBe(3);
  });

  it("recomputes GiGPO as trained (training params by default) equal to what was stored, with its components", async () => {
    const g = await groupOf(0, 2);
    const stored = await call(creditRoute.GET, "GET", `/api/v1/runs/${runId}/steps/0/groups/${g.id}/credit`, {
      params: { id: runId, step: "0", groupId: g.id },
    });
    const r = await call(creditRoute.GET, "GET", `/api/v1/runs/${runId}/steps/0/groups/${g.id}/credit?estimator=gigpo`, {
      params: { id: runId, step: "0", groupId: g.id },
    });
    expect(r.json.paramsFrom).toBe("training");
    expect(r.json.params.gamma).toBe(0.95);
    r.json.advantages.forEach((row: number[], i: number) => {
      row.forEach((v, j) => {
        expect(v).toBeCloseTo(stored.json.advantages[i][j], 12);
      });
    });
    expect(Object.keys(r.json.components)).toEqual(expect.arrayContaining(["episode", "step", "return", "anchorGroup"]));
    expect(r.json.diagnostics.anchorGroups.count).toBeGreaterThan(0);
    // other params change the values
    const p = await call(
      creditRoute.GET,
      "GET",
      `/api/v1/runs/${runId}/steps/0/groups/${g.id}/credit?${q({ estimator: "gigpo", params: { gamma: 0.5, omega: 2 } })}`,
      {
        params: { id: runId, step: "0", groupId: g.id },
      },
    );
    expect(p.json.paramsFrom).toBe("request");
    expect(p.json.params).toMatchObject({ gamma: 0.5, omega: 2, mode: "mean_std_norm" });
    expect(p.json.advantages.flat()).not.toEqual(r.json.advantages.flat());
  });

  it("answers bad requests with 400 naming the problem, and 404 for unknown steps or groups", async () => {
    const g = await groupOf(0, 0);
    const ctx = { params: { id: runId, step: "0", groupId: g.id } };
    const unknown = await call(creditRoute.GET, "GET", `/api/v1/runs/${runId}/steps/0/groups/${g.id}/credit?estimator=nope`, ctx);
    expect(unknown.status).toBe(400);
    expect(unknown.json.issues[0].path).toBe("query.estimator");
    expect(unknown.json.error).toMatch(/query\.estimator: .*"grpo"/);
    const badParam = await call(
      creditRoute.GET,
      "GET",
      `/api/v1/runs/${runId}/steps/0/groups/${g.id}/credit?${q({ estimator: "grpo", params: { bogus: 1 } })}`,
      ctx,
    );
    expect(badParam.status).toBe(400);
    expect(badParam.json.error).toMatch(/params\.bogus: unknown parameter/);
    const badJson = await call(creditRoute.GET, "GET", `/api/v1/runs/${runId}/steps/0/groups/${g.id}/credit?estimator=grpo&params=%7Bnot`, ctx);
    expect(badJson.status).toBe(400);
    expect(badJson.json.issues[0].path).toBe("query.params");
    const needsValue = await call(creditRoute.GET, "GET", `/api/v1/runs/${runId}/steps/0/groups/${g.id}/credit?estimator=gae`, ctx);
    expect(needsValue.status).toBe(400);
    expect(needsValue.json.error).toMatch(/value/);
    const noStep = await call(creditRoute.GET, "GET", `/api/v1/runs/${runId}/steps/9/groups/${g.id}/credit`, {
      params: { id: runId, step: "9", groupId: g.id },
    });
    expect(noStep.status).toBe(404);
    const noGroup = await call(creditRoute.GET, "GET", `/api/v1/runs/${runId}/steps/0/groups/zzz/credit`, { params: { id: runId, step: "0", groupId: "zzz" } });
    expect(noGroup.status).toBe(404);
  });
});

describe("credit over training", () => {
  it("gives step x turn-index mean advantages and per-step diagnostics, stored or recomputed", async () => {
    const r = await call(overviewRoute.GET, "GET", `/api/v1/runs/${runId}/credit`, { params: { id: runId } });
    expect(r.status).toBe(200);
    expect(r.json.steps).toEqual([0, 1, 2]);
    expect(r.json.turns).toBe(6);
    // mean at turn 0 of step 0 = mean of the stored turn-0 advantages
    const t0 = steps[0].groups.flatMap((g) => g.trajectories.map((t) => (t.turns[0] as { advantage: number }).advantage));
    expect(r.json.mean[0][0]).toBeCloseTo(t0.reduce((a, b) => a + b, 0) / t0.length, 12);
    expect(r.json.meanAbs[0][0]).toBeCloseTo(t0.reduce((a, b) => a + Math.abs(b), 0) / t0.length, 12);
    const d = r.json.diagnostics[0];
    expect(d.turns).toBe(steps[0].groups.reduce((a, g) => a + g.trajectories.reduce((b, t) => b + t.turns.length, 0), 0));
    expect(d.singletonRatio).toBeGreaterThan(0);
    expect(d.singletonRatio).toBeLessThan(1);
    expect(d.zeroVarianceShare).toBeGreaterThanOrEqual(0);
    const grpo = await call(overviewRoute.GET, "GET", `/api/v1/runs/${runId}/credit?estimator=grpo&maxSteps=2`, { params: { id: runId } });
    expect(grpo.json.steps).toEqual([0, 2]);
    expect(grpo.json.source).toBe("recomputed");
    // GRPO normalises each group: the batch mean is 0 up to rounding when groups have equal lengths... at least finite
    expect(Number.isFinite(grpo.json.diagnostics[0].advMean)).toBe(true);
  });
});

describe("compare data and run-list filters", () => {
  it("returns the runs and the union of their metric keys", async () => {
    const r = await call(compareRoute.GET, "GET", `/api/v1/compare?runs=${runId},${grpoRun}`);
    expect(r.status).toBe(200);
    expect(r.json.runs.map((x: { name: string }) => x.name)).toEqual(["gigpo-s0", "grpo-s0"]);
    expect(r.json.keys).toContainEqual({ key: "rollout/success_rate", runs: 2 });
    expect((await call(compareRoute.GET, "GET", `/api/v1/compare?runs=`)).status).toBe(400);
    expect((await call(compareRoute.GET, "GET", `/api/v1/compare?runs=${runId},nope`)).status).toBe(404);
  });

  it("lists filter values: environments, estimators, tags, metric keys, config paths", async () => {
    const r = await call(filtersRoute.GET, "GET", `/api/v1/runs/filters`);
    expect(r.json.estimators).toEqual(["gigpo", "grpo"]);
    expect(r.json.tags).toEqual(["baseline-cmp", "dash"]);
    expect(r.json.metricKeys[0]).toEqual({ key: "credit/adv_std", runs: 2 });
    expect(r.json.configKeys).toEqual(expect.arrayContaining(["lr", "envConfig.size", "estimatorParams.gamma"]));
  });

  it("filters runs by config values", async () => {
    const names = async (config: string) => {
      const r = await call(runsRoute.GET, "GET", `/api/v1/runs?${new URLSearchParams({ config })}`);
      expect(r.status, JSON.stringify(r.json)).toBe(200);
      return r.json.runs.map((x: { name: string }) => x.name).sort();
    };
    expect(await names("lr<=1e-4")).toEqual(["gigpo-s0"]);
    expect(await names("envConfig.size>=4")).toEqual(["gigpo-s0", "grpo-s0"]);
    expect(await names("envConfig.size=6")).toEqual(["grpo-s0"]);
    expect(await names("estimator=gigpo; estimatorParams.gamma=0.95")).toEqual(["gigpo-s0"]);
    expect(await names("estimator!=gigpo")).toEqual(["grpo-s0"]);
    expect(await names("estimator~gi")).toEqual(["gigpo-s0"]);
    expect(await names("nothing.here=1")).toEqual([]);
    const bad = await call(runsRoute.GET, "GET", `/api/v1/runs?config=${encodeURIComponent("lr>>3")}`);
    expect(bad.status).toBe(400);
    expect(bad.json.issues[0].path).toBe("query.config");
    const notNum = await call(runsRoute.GET, "GET", `/api/v1/runs?config=${encodeURIComponent("lr>abc")}`);
    expect(notNum.status).toBe(400);
    expect(notNum.json.error).toMatch(/needs a number/);
  });
});
