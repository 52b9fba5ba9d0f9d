// Ingest validation through the real route handlers on a real database: text that is no text (a
// lone UTF-16 surrogate), steps sent in parts (their total size, expiry, discard and replacement)
// and estimator parameters (checked, or translated from the trainer's names, before a step is
// stored). Each refusal names the field and writes nothing.
import { beforeAll, describe, expect, it } from "vitest";
import { NextRequest } from "next/server";
import { useTempDatabase } from "../helpers/temp-db";

useTempDatabase("ingest-validation");
// a small total for a step in parts, so a test crosses it with small parts (read by the ingest thread, started after this)
process.env.TURNLENS_MAX_STEP_PARTS_MB = "0.02";
const importRoute = await import("@/app/api/v1/runs/import/route");
const metricsRoute = await import("@/app/api/v1/runs/[id]/metrics/route");
const stepsRoute = await import("@/app/api/v1/runs/[id]/steps/route");
const batchRoute = await import("@/app/api/v1/runs/[id]/steps/batch/route");
const partsRoute = await import("@/app/api/v1/runs/[id]/steps/parts/route");
const finishRoute = await import("@/app/api/v1/runs/[id]/finish/route");
const creditRoute = await import("@/app/api/v1/runs/[id]/steps/[step]/groups/[groupId]/credit/route");
const { countRows } = await import("../helpers/db-inspect");
const { ingestStepPart } = await import("@/lib/ingest/batches");
const { getRawDb } = await import("@/lib/db/raw");
const { writeRolloutStep } = await import("@/lib/db/rollouts");

type Handler = (req: NextRequest, ctx: { params: Promise<Record<string, string>> }) => Promise<Response>;
async function call(
  h: Handler,
  method: string,
  url: string,
  o: { raw?: string; body?: unknown; params?: Record<string, string>; headers?: Record<string, string> },
) {
  const body = o.raw !== undefined ? o.raw : o.body !== undefined ? JSON.stringify(o.body) : undefined;
  const res = await h(new NextRequest(new URL(url, "http://127.0.0.1:3000"), { method, headers: { "content-type": "application/json", ...o.headers }, body }), {
    params: Promise.resolve(o.params ?? {}),
  });
  // biome-ignore lint/suspicious/noExplicitAny: responses of several routes, read field by field
  return { status: res.status, json: (await res.json()) as any };
}

const tables = ["Run", "Metric", "RolloutStep", "Turn", "IngestBatch", "IngestStepPart"];
const counts = () => tables.map((t) => countRows(t));
const turn = (observation = "o") => ({ observation, action: "left", reward: 1 });
const step = (n: number, extra: object = {}) => ({ step: n, groups: [{ uid: "t0", envId: "sokoban", trajectories: [{ turns: [turn()] }] }], ...extra });

async function importRun(name: string) {
  const r = await call(importRoute.POST, "POST", "/api/v1/runs/import", { body: { name, envId: "sokoban", estimator: "gigpo" } });
  expect(r.status).toBe(201);
  const id = r.json.id as string;
  const o = (x: { raw?: string; body?: unknown }) => ({ ...x, params: { id }, headers: { "x-turnlens-write-key": r.json.writeKey as string } });
  return { id, o };
}

describe("lone surrogates", () => {
  let run: Awaited<ReturnType<typeof importRun>>;
  beforeAll(async () => {
    run = await importRun("surrogates");
  });

  it("refuses a JSON-escaped lone surrogate (400 naming the field) in metric, step, batch, part and import bodies; a pair is text", async () => {
    const before = counts();
    // JSON.stringify writes a lone surrogate as the escape \ud800, as a client's encoder would
    const lone = "a\ud800b";
    const cases: [Handler, { raw?: string; body?: unknown }, string][] = [
      [
        stepsRoute.POST,
        { body: step(1, { groups: [{ uid: "t0", envId: "sokoban", trajectories: [{ turns: [turn(lone)] }] }] }) },
        "body.groups.0.trajectories.0.turns.0.observation",
      ],
      [batchRoute.POST, { body: { steps: [step(1), step(2, { diagnostics: { note: "x\udc00" } })] } }, "body.steps.1.diagnostics.note"],
      [
        partsRoute.POST,
        { body: { ...step(1, { groups: [{ uid: lone, envId: "sokoban", trajectories: [{ turns: [turn()] }] }] }), part: 0, parts: 2 } },
        "body.groups.0.uid",
      ],
      // a metric key: its pattern refused it before, naming no surrogate; it is named as it reads
      [metricsRoute.POST, { body: { points: [{ step: 1, values: { [`k${lone}`]: 1 } }] } }, "body.points.0.values.ka\ufffdb"],
    ];
    for (const [h, body, field] of cases) {
      const r = await call(h, "POST", "", run.o(body));
      expect(r.status, JSON.stringify(r.json)).toBe(400);
      expect(r.json.issues[0].path, JSON.stringify(r.json)).toBe(field);
      expect(r.json.issues[0].message).toMatch(/lone UTF-16 surrogate/);
    }
    const imp = await call(importRoute.POST, "POST", "/api/v1/runs/import", { body: { name: `run ${lone}` } });
    expect([imp.status, imp.json.issues[0].path]).toEqual([400, "body.name"]);
    expect(counts()).toEqual(before);
    const pair = await call(stepsRoute.POST, "POST", "", run.o({ raw: JSON.stringify(step(3)).replace('"o"', '"\\ud83d\\ude00"') }));
    expect(pair.status).toBe(201);
  });
});

describe("steps in parts", () => {
  /** `n` groups of one trajectory whose observation is `size` characters */
  const groups = (from: number, n: number, size = 10) =>
    Array.from({ length: n }, (_, g) => ({ uid: `g${from + g}`, envId: "sokoban", trajectories: [{ turns: [turn("x".repeat(size))] }] }));
  const part = (stepN: number, i: number, parts: number, extra: object = {}) => ({ step: stepN, part: i, parts, groups: groups(10 * i, 2), ...extra });
  const held = () => countRows("IngestStepPart");

  it("refuses with 413 naming the limit the part that takes a step past the total, and drops the step's waiting parts", async () => {
    const run = await importRun("parts-total");
    const send = (body: object) => call(partsRoute.POST, "POST", "", run.o({ body }));
    // 20,000 characters in all (TURNLENS_MAX_STEP_PARTS_MB=0.02): 3 parts of ~6,100 fit, the 4th does not
    const big = (i: number) => part(1, i, 5, { groups: groups(10 * i, 1, 6_000) });
    for (let i = 0; i < 3; i++) expect((await send(big(i))).status).toBe(201);
    expect(held()).toBe(3);
    const over = await send(big(3));
    expect(over.status, JSON.stringify(over.json)).toBe(413);
    expect(over.json.error).toMatch(/over the 20,000 a step in parts may hold \(0\.02 MB, TURNLENS_MAX_STEP_PARTS_MB\)/);
    expect(over.json.issues[0].path).toBe("body");
    expect(held()).toBe(0);
    // nothing left: the step starts afresh, and a part resent is stored anew, not answered from a record
    expect((await send(big(0))).json).toEqual({ complete: false, part: 0, parts: 5, received: 1 });
    expect((await call(partsRoute.DELETE, "DELETE", `/api/v1/runs/${run.id}/steps/parts`, run.o({}))).status).toBe(200);
    expect(held()).toBe(0);
  });

  it("replaces a waiting part sent again with other content (a corrected part count), and refuses other content once the step is stored", async () => {
    const run = await importRun("parts-replace");
    const send = (body: object) => call(partsRoute.POST, "POST", "", run.o({ body }));
    expect((await send(part(2, 0, 3))).status).toBe(201);
    const wrong = await send(part(2, 1, 4)); // part 1 says 4 parts, part 0 said 3
    expect([wrong.status, wrong.json.issues[0].path]).toEqual([409, "body.parts"]);
    expect((await send(part(2, 0, 2))).json).toEqual({ complete: false, part: 0, parts: 2, received: 1, replaced: true });
    const last = await send(part(2, 1, 2));
    expect([last.status, last.json.complete, last.json.turns]).toEqual([201, true, 4]);
    expect(held()).toBe(0);
    expect((await send(part(2, 1, 2))).status).toBe(200); // a retry of the last part: its record
    const late = await send(part(2, 0, 3));
    expect([late.status, late.json.issues[0].path]).toEqual([409, "body.part"]);
  });

  it("drops waiting parts when the run finishes, on DELETE /steps/parts, and a time limit after the step's newest part", async () => {
    const run = await importRun("parts-expire");
    const send = (body: object) => call(partsRoute.POST, "POST", "", run.o({ body }));
    const discard = (q: string) => call(partsRoute.DELETE, "DELETE", `/api/v1/runs/${run.id}/steps/parts${q}`, run.o({}));
    for (const s of [3, 4]) expect((await send(part(s, 0, 2))).status).toBe(201);
    const one = await discard("?step=3");
    expect([one.status, one.json]).toEqual([200, { discarded: [{ step: 3, parts: 1 }] }]);
    expect(held()).toBe(1);
    expect((await send(part(3, 0, 2))).json.received).toBe(1); // sent afresh: its record went with it
    expect((await discard("")).json).toEqual({
      discarded: [
        { step: 3, parts: 1 },
        { step: 4, parts: 1 },
      ],
    });
    expect(held()).toBe(0);

    // the time limit (TURNLENS_STEP_PARTS_TTL_HOURS, 24): a part arriving a day later drops every stale step's parts, of any run
    const db = getRawDb();
    const t0 = Date.parse("2026-01-01T00:00:00Z");
    ingestStepPart(run.id, { ...part(5, 0, 2), batchId: undefined } as never, db, t0);
    ingestStepPart(run.id, { ...part(6, 0, 2) } as never, db, t0 + 20 * 3_600_000);
    expect(held()).toBe(2);
    const other = await importRun("parts-expire-other");
    ingestStepPart(other.id, { ...part(1, 0, 2) } as never, db, t0 + 25 * 3_600_000);
    expect(held()).toBe(2); // step 5 dropped (25 h), step 6 kept (5 h), the other run's part added
    expect(ingestStepPart(run.id, { ...part(5, 0, 2) } as never, db, t0 + 25 * 3_600_000).body).toEqual({ complete: false, part: 0, parts: 2, received: 1 });

    // finishing the run drops its waiting parts
    const fin = await call(finishRoute.POST, "POST", "", run.o({ body: { status: "succeeded" } }));
    expect(fin.status).toBe(200);
    expect(held()).toBe(1); // the other run's part only
  });

  it("declares DELETE /runs/{id}/steps/parts in the route table, which refuses it without the write key", async () => {
    const { routes } = await import("@/lib/api/routes");
    expect([routes.stepPartsDiscard.method, routes.stepPartsDiscard.path]).toEqual(["DELETE", "/runs/{id}/steps/parts"]);
    const run = await importRun("parts-key");
    const r = await call(partsRoute.DELETE, "DELETE", `/api/v1/runs/${run.id}/steps/parts`, { params: { id: run.id } });
    expect(r.status).toBe(403);
  });
});

describe("estimator parameters", () => {
  it("stores gigpo params given in verl-agent's names under TurnLens's, so the credit view recomputes with them", async () => {
    const run = await importRun("verl-agent-names");
    const body = {
      step: 0,
      estimator: "gigpo",
      params: { gamma: 0.95, step_advantage_w: 0.5, invalid_action_penalty_coef: 0.2 },
      groups: [
        {
          uid: "t0",
          envId: "sokoban",
          trajectories: [
            {
              turns: [
                { observation: "a", action: "l", reward: 0, anchor: "s0" },
                { observation: "b", action: "r", reward: 1, anchor: "s1" },
              ],
            },
            { turns: [{ observation: "a", action: "u", reward: 0, anchor: "s0" }] },
          ],
        },
      ],
    };
    const w = await call(stepsRoute.POST, "POST", "", run.o({ body }));
    expect(w.status, JSON.stringify(w.json)).toBe(201);
    expect((await call(stepsRoute.POST, "POST", "", run.o({ body }))).status).toBe(200); // a retry in the same names is the same step
    const groupsRes = await call(
      (await import("@/app/api/v1/runs/[id]/steps/[step]/groups/route")).GET as Handler,
      "GET",
      `/api/v1/runs/${run.id}/steps/0/groups`,
      { params: { id: run.id, step: "0" } },
    );
    const groupId = groupsRes.json.groups[0].id;
    const credit = await call(creditRoute.GET as Handler, "GET", `/api/v1/runs/${run.id}/steps/0/groups/${groupId}/credit?estimator=gigpo`, {
      params: { id: run.id, step: "0", groupId },
    });
    expect(credit.status, JSON.stringify(credit.json).slice(0, 400)).toBe(200);
    expect(credit.json.paramsFrom).toBe("training");
    expect(credit.json.params).toMatchObject({ gamma: 0.95, omega: 0.5, invalidPenalty: 0.2 });
  });

  it("recomputes a step stored in verl-agent's names before ingest renamed them, under TurnLens's names", async () => {
    const run = await importRun("stored-in-trainer-names");
    const body = {
      step: 0,
      estimator: "gigpo",
      params: { gamma: 0.9, step_advantage_w: 0.25 },
      groups: [
        {
          uid: "t0",
          envId: "sokoban",
          taskSeed: 0,
          trajectories: [{ success: false, truncated: false, turns: [{ ...turn(), anchor: "s0", valid: true, done: false }] }],
        },
      ],
    };
    // stored as it was before ingest checked params: the store writes what it is given
    writeRolloutStep(run.id, body, null, getRawDb());
    const groupsRoute = await import("@/app/api/v1/runs/[id]/steps/[step]/groups/route");
    const g = await call(groupsRoute.GET as Handler, "GET", `/api/v1/runs/${run.id}/steps/0/groups`, { params: { id: run.id, step: "0" } });
    const groupId = g.json.groups[0].id;
    const credit = await call(creditRoute.GET as Handler, "GET", `/api/v1/runs/${run.id}/steps/0/groups/${groupId}/credit?estimator=gigpo`, {
      params: { id: run.id, step: "0", groupId },
    });
    expect(credit.status, JSON.stringify(credit.json).slice(0, 400)).toBe(200);
    expect([credit.json.paramsFrom, credit.json.params.omega, credit.json.params.gamma]).toEqual(["training", 0.25, 0.9]);
  });

  it("refuses an unknown parameter or a bad value of a TurnLens estimator at ingest, naming the field, and keeps a trainer's own label's params", async () => {
    const run = await importRun("bad-params");
    const before = counts();
    const cases: [Handler, object, string, RegExp][] = [
      [
        stepsRoute.POST,
        step(0, { estimator: "gigpo", params: { gama: 0.9 } }),
        "body.params.gama",
        /unknown parameter for estimator "gigpo"; known: gamma, omega/,
      ],
      [stepsRoute.POST, step(0, { estimator: "gigpo", params: { gamma: 2 } }), "body.params.gamma", /1/],
      [stepsRoute.POST, step(0, { estimator: "gigpo", params: { omega: 1, step_advantage_w: 0.5 } }), "body.params.step_advantage_w", /omega/],
      [batchRoute.POST, { steps: [step(0), step(1, { estimator: "grpo", params: { gamma: 1 } })] }, "body.steps.1.params.gamma", /unknown parameter/],
      [partsRoute.POST, { ...step(0, { estimator: "gigpo", params: { lam: 1 } }), part: 0, parts: 2 }, "body.params.lam", /unknown parameter/],
    ];
    for (const [h, body, field, msg] of cases) {
      const r = await call(h, "POST", "", run.o({ body }));
      expect(r.status, JSON.stringify(r.json)).toBe(400);
      expect(r.json.issues[0].path).toBe(field);
      expect(r.json.issues[0].message).toMatch(msg);
    }
    expect(counts()).toEqual(before);
    const own = await call(
      stepsRoute.POST,
      "POST",
      "",
      run.o({ body: step(0, { estimator: "verl-agent:gae", params: { trainer: { lam: 0.9 }, note: "x" } }) }),
    );
    expect(own.status).toBe(201);
  });
});
