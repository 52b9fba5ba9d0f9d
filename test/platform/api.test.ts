// The HTTP API through its real route handlers, on a real SQLite file: validation names the
// field and writes nothing; ingest round-trips; pagination; auth on writes.
import { beforeAll, describe, expect, it } from "vitest";
import { NextRequest } from "next/server";
import { useTempDatabase } from "../helpers/temp-db";

useTempDatabase("api");
const runs = await import("@/app/api/v1/runs/route");
const importRoute = await import("@/app/api/v1/runs/import/route");
const runRoute = await import("@/app/api/v1/runs/[id]/route");
const metricsRoute = await import("@/app/api/v1/runs/[id]/metrics/route");
const seriesRoute = await import("@/app/api/v1/runs/[id]/metrics/series/route");
const exportRoute = await import("@/app/api/v1/runs/[id]/metrics/export/route");
const stepsRoute = await import("@/app/api/v1/runs/[id]/steps/route");
const stepsBatchRoute = await import("@/app/api/v1/runs/[id]/steps/batch/route");
const stepPartsRoute = await import("@/app/api/v1/runs/[id]/steps/parts/route");
const trajRoute = await import("@/app/api/v1/runs/[id]/trajectories/route");
const turnsRoute = await import("@/app/api/v1/runs/[id]/turns/route");
const oneTraj = await import("@/app/api/v1/trajectories/[id]/route");
const cancelRoute = await import("@/app/api/v1/runs/[id]/cancel/route");
const openapi = await import("@/app/api/v1/openapi.json/route");
const finishRoute = await import("@/app/api/v1/runs/[id]/finish/route");
const { countRows } = await import("../helpers/db-inspect");
const { turnsPage } = await import("@/lib/db/rollouts");

type Handler<P> = (req: NextRequest, ctx: { params: Promise<P> }) => Promise<Response>;
async function call<P = Record<string, never>>(
  h: Handler<P>,
  method: string,
  path: string,
  opts: { body?: unknown; raw?: string; params?: P; headers?: Record<string, string> } = {},
) {
  const init: { method: string; body?: string; headers: Record<string, string> } = { method, headers: { "content-type": "application/json", ...opts.headers } };
  if (opts.raw !== undefined) init.body = opts.raw;
  else if (opts.body !== undefined) init.body = JSON.stringify(opts.body);
  const res = await h(new NextRequest(new URL(path, "http://127.0.0.1:3000"), init), { params: Promise.resolve((opts.params ?? {}) as P) });
  const text = await res.text();
  // biome-ignore lint/suspicious/noExplicitAny: responses of every route, read field by field
  let json: any = null;
  try {
    json = JSON.parse(text);
  } catch {
    /* CSV */
  }
  return { status: res.status, json, text, headers: res.headers };
}

/** Rows of a table; "Turn": the turns stored (packed in their trajectories' rows). */
const count = (table: string) => countRows(table);
const rowCounts = () => ["Run", "Job", "Project", "Metric", "RolloutStep", "Turn"].map(count);

/** The export's packed blocks decoded as a reader would (little-endian int64 steps, float64 values and wall times). */
function unpack(blocks: { key: string; count: number; steps: string; values: string; wallTimes: string }[]) {
  const f64 = (b64: string) => {
    const b = Buffer.from(b64, "base64");
    return Array.from({ length: b.length / 8 }, (_, i) => b.readDoubleLE(8 * i));
  };
  return blocks.map((b) => {
    const steps = Buffer.from(b.steps, "base64");
    expect(steps.length).toBe(8 * b.count);
    return {
      key: b.key,
      steps: Array.from({ length: b.count }, (_, i) => Number(steps.readBigInt64LE(8 * i))),
      values: f64(b.values),
      wallTimes: f64(b.wallTimes),
    };
  });
}

describe("launch validation", () => {
  it("rejects bad bodies with 400 naming the field, and writes nothing", async () => {
    const before = rowCounts();
    const cases: [unknown, string][] = [
      [{ jobKind: "baseline", config: { envId: "frozenlake", episodes: 0 } }, "body.config.episodes"],
      [{ jobKind: "baseline", config: { envId: "frozenlake", episodes: "ten" } }, "body.config.episodes"],
      [{ jobKind: "baseline", config: { envId: "frozenlake", bogus: 1 } }, "body.config"],
      [{ jobKind: "nope", config: {} }, "body.jobKind"],
      [{ jobKind: "baseline", config: { envId: "no-such-env" } }, "body.config.envId"],
      [{ jobKind: "baseline", config: { envId: "frozenlake", envConfig: { maxTurns: -3 } } }, "body.config.envConfig.maxTurns"],
    ];
    for (const [body, field] of cases) {
      const r = await call(runs.POST, "POST", "/api/v1/runs", { body });
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(
        r.json.issues.map((i: { path: string }) => i.path),
        JSON.stringify(r.json),
      ).toContain(field);
      expect(r.json.error).toContain(field);
    }
    const bad = await call(runs.POST, "POST", "/api/v1/runs", { raw: "{not json" });
    expect(bad.status).toBe(400);
    expect(bad.json.error).toMatch(/not valid JSON/);
    expect(rowCounts()).toEqual(before);
  });

  it("launches a valid baseline run with its queued job", async () => {
    const r = await call(runs.POST, "POST", "/api/v1/runs", { body: { jobKind: "baseline", name: "ok", config: { envId: "frozenlake", episodes: 16 } } });
    expect(r.status).toBe(201);
    expect(r.json).toMatchObject({ name: "ok", status: "queued", kind: "eval", jobKind: "baseline", envId: "frozenlake" });
    expect(r.json.jobId).toBeTruthy();
    // The stored config carries the environment's defaults, so the run is reproducible as stored.
    expect(Object.keys(r.json.config.envConfig).length).toBeGreaterThan(0);
    const c = await call(cancelRoute.POST, "POST", `/api/v1/runs/${r.json.id}/cancel`, { body: {}, params: { id: r.json.id } });
    expect(c.status).toBe(200);
    expect(c.json.status).toBe("canceled");
  });
});

describe("ingest from an external trainer", () => {
  let runId = "";
  let writeKey = "";
  beforeAll(async () => {
    const r = await call(importRoute.POST, "POST", "/api/v1/runs/import", {
      body: { name: "verl-run", config: { lr: 1e-6 }, envId: "sokoban", estimator: "gigpo", tags: ["verl"] },
    });
    expect(r.status).toBe(201);
    runId = r.json.id;
    writeKey = r.json.writeKey;
    expect(writeKey).toMatch(/^tlw_/);
  });
  const keyed = (o: { body?: unknown; raw?: string; params?: { id: string } }) => ({ ...o, headers: { "x-turnlens-write-key": writeKey } });

  it("logs metrics W&B-style and reads them back downsampled and in full", async () => {
    const points = Array.from({ length: 3000 }, (_, i) => ({ step: i, values: { "train/reward": i / 3000, "train/kl": 0.01 } }));
    const w = await call(metricsRoute.POST, "POST", `/api/v1/runs/${runId}/metrics`, keyed({ body: { points }, params: { id: runId } }));
    expect(w.status).toBe(201);
    expect(w.json).toEqual({ inserted: 6000, replaced: 0 });
    const keys = await call(metricsRoute.GET, "GET", `/api/v1/runs/${runId}/metrics`, { params: { id: runId } });
    expect(keys.json.keys.map((k: { key: string }) => k.key)).toEqual(["train/kl", "train/reward"]);
    const s = await call(seriesRoute.GET, "GET", `/api/v1/runs/${runId}/metrics/series?key=train/reward&maxPoints=500`, { params: { id: runId } });
    expect(s.status).toBe(200);
    expect(s.json.steps.length).toBeLessThanOrEqual(500);
    expect(s.json.steps[0]).toBe(0);
    expect(s.json.steps.at(-1)).toBe(2999);
    const csv = await call(exportRoute.GET, "GET", `/api/v1/runs/${runId}/metrics/export?format=csv&key=train/reward`, { params: { id: runId } });
    expect(csv.text.trim().split("\n").length).toBe(3001);
    const json = await call(exportRoute.GET, "GET", `/api/v1/runs/${runId}/metrics/export?format=json`, { params: { id: runId } });
    expect(json.json).toHaveLength(6000);
    expect(json.json[0]).toEqual({ key: "train/kl", step: 0, value: 0.01, wallTime: expect.any(Number) });
    // columnar: the same points, one block of arrays per key
    const cols = await call(exportRoute.GET, "GET", `/api/v1/runs/${runId}/metrics/export?format=columnar`, { params: { id: runId } });
    type Block = { key: string; steps: number[]; values: number[]; wallTimes: number[] };
    expect(cols.json.map((b: Block) => b.key)).toEqual(["train/kl", "train/reward"]);
    expect(cols.json.flatMap((b: Block) => b.steps.map((step, i) => ({ key: b.key, step, value: b.values[i], wallTime: b.wallTimes[i] })))).toEqual(json.json);
    // packed: the same blocks, each array base64 of little-endian int64 steps and float64 values and wall times
    const packed = await call(exportRoute.GET, "GET", `/api/v1/runs/${runId}/metrics/export?format=packed`, { params: { id: runId } });
    expect(unpack(packed.json)).toEqual(cols.json);
  });

  it("rejects a non-finite metric value naming the field", async () => {
    const before = count("Metric");
    const r = await call(
      metricsRoute.POST,
      "POST",
      `/api/v1/runs/${runId}/metrics`,
      keyed({ raw: '{"points":[{"step":1,"values":{"x":1e999}}]}', params: { id: runId } }),
    );
    expect(r.status).toBe(400);
    expect(r.json.issues[0].path).toBe("body.points.0.values.x");
    expect(count("Metric")).toBe(before);
  });

  it("stores non-finite values sent as their texts, beside the series, and exports them", async () => {
    const r = await call(
      metricsRoute.POST,
      "POST",
      `/api/v1/runs/${runId}/metrics`,
      keyed({ body: { steps: [5000, 5001], values: { "train/nan": ["NaN", 2.5], "train/inf": [null, "-Infinity"] } }, params: { id: runId } }),
    );
    expect([r.status, r.json]).toEqual([201, { inserted: 3, replaced: 0 }]);
    const s = await call(seriesRoute.GET, "GET", `/api/v1/runs/${runId}/metrics/series?key=train/nan`, { params: { id: runId } });
    expect([s.json.steps, s.json.nonFinite]).toEqual([[5001], [{ step: 5000, value: "NaN" }]]);
    // a key with only non-finite points (no finite series), one with none at all, and an unknown run
    const inf = await call(seriesRoute.GET, "GET", `/api/v1/runs/${runId}/metrics/series?key=train/inf`, { params: { id: runId } });
    expect([inf.json.steps, inf.json.nonFinite]).toEqual([[], [{ step: 5001, value: "-Infinity" }]]);
    const none = await call(seriesRoute.GET, "GET", `/api/v1/runs/${runId}/metrics/series?key=never/logged`, { params: { id: runId } });
    expect([none.status, none.json.steps, none.json.nonFinite]).toEqual([200, [], undefined]);
    const unknown = "00000000-0000-4000-8000-000000000000";
    const noRun = await call(seriesRoute.GET, "GET", `/api/v1/runs/${unknown}/metrics/series?key=train/nan`, { params: { id: unknown } });
    expect([noRun.status, noRun.json.error]).toEqual([404, expect.stringContaining(unknown)]);
    const csv = await call(exportRoute.GET, "GET", `/api/v1/runs/${runId}/metrics/export?format=csv&key=train/inf`, { params: { id: runId } });
    expect(csv.text.trim().split("\n").slice(1)).toEqual([expect.stringMatching(/^"train\/inf",5001,-Infinity,/)]);
    const json = await call(exportRoute.GET, "GET", `/api/v1/runs/${runId}/metrics/export?format=json&key=train/nan`, { params: { id: runId } });
    expect(json.json.map((p: { value: unknown }) => p.value)).toEqual(["NaN", 2.5]);
    // packed carries them as the doubles themselves
    const packed = await call(exportRoute.GET, "GET", `/api/v1/runs/${runId}/metrics/export?format=packed&key=train/nan&key=train/inf`, {
      params: { id: runId },
    });
    expect(unpack(packed.json).map((b) => [b.key, b.steps, b.values])).toEqual([
      ["train/nan", [5000, 5001], [Number.NaN, 2.5]],
      ["train/inf", [5001], [-Infinity]],
    ]);
    const bad = await call(
      metricsRoute.POST,
      "POST",
      `/api/v1/runs/${runId}/metrics`,
      keyed({ body: { points: [{ step: 1, values: { x: "nan" } }] }, params: { id: runId } }),
    );
    expect([bad.status, bad.json.issues[0].path]).toEqual([400, "body.points.0.values.x"]);
  });

  it("keeps an imported run's own start and end times, and refuses times that are not", async () => {
    const made = await call(importRoute.POST, "POST", "/api/v1/runs/import", { body: { name: "from-mlflow", startedAt: "2026-03-01T10:00:00.000Z" } });
    expect(made.status).toBe(201);
    expect([made.json.createdAt, made.json.startedAt].map((t: string) => Date.parse(t))).toEqual([
      Date.parse("2026-03-01T10:00:00Z"),
      Date.parse("2026-03-01T10:00:00Z"),
    ]);
    const done = await call(finishRoute.POST, "POST", `/api/v1/runs/${made.json.id}/finish`, {
      body: { status: "succeeded", finishedAt: "2026-03-01T12:30:00+02:00" },
      params: { id: made.json.id },
      headers: { "x-turnlens-write-key": made.json.writeKey },
    });
    expect(Date.parse(done.json.finishedAt)).toBe(Date.parse("2026-03-01T10:30:00Z"));
    for (const [body, path] of [
      [{ name: "x", startedAt: "yesterday" }, "body.startedAt"],
      [{ name: "x", startedAt: "2026-03-02T00:00:00Z", finishedAt: "2026-03-01T00:00:00Z" }, "body.finishedAt"],
      [{ name: "x", startedAt: "2999-01-01T00:00:00Z" }, "body.startedAt"],
    ] as const) {
      const r = await call(importRoute.POST, "POST", "/api/v1/runs/import", { body });
      expect([r.status, r.json.issues[0].path]).toEqual([400, path]);
    }
  });

  it("stores rollouts, pages trajectories and turns, and refuses a repeated step", async () => {
    const step = {
      step: 0,
      estimator: "gigpo",
      groups: [0, 1].map((g) => ({
        uid: `task-${g}`,
        envId: "sokoban",
        taskSeed: g,
        trajectories: [0, 1, 2].map((t) => ({
          success: t === 0,
          turns: Array.from({ length: 4 }, (_, i) => ({
            observation: `<b>obs</b> ${g}/${t}/${i}`,
            action: "left",
            reward: i === 3 && t === 0 ? 1 : 0,
            anchor: `s${i}`,
            advantage: 0.5 - t,
          })),
        })),
      })),
    };
    const w = await call(stepsRoute.POST, "POST", `/api/v1/runs/${runId}/steps`, keyed({ body: step, params: { id: runId } }));
    expect(w.status).toBe(201);
    expect(w.json.turns).toBe(24);
    // a retry after a lost response: same content -> the stored answer; other content -> 409 naming the step
    const again = await call(stepsRoute.POST, "POST", `/api/v1/runs/${runId}/steps`, keyed({ body: step, params: { id: runId } }));
    expect(again.status).toBe(200);
    expect(again.json).toEqual(w.json);
    const other = structuredClone(step);
    other.groups[0].trajectories[0].turns[0].reward = 0.5;
    const clash = await call(stepsRoute.POST, "POST", `/api/v1/runs/${runId}/steps`, keyed({ body: other, params: { id: runId } }));
    expect(clash.status).toBe(409);
    expect(clash.json.issues[0].path).toBe("body.step");
    expect(count("Turn")).toBe(24);

    const trajs = await call(trajRoute.GET, "GET", `/api/v1/runs/${runId}/trajectories?success=true`, { params: { id: runId } });
    expect(trajs.json.total).toBe(2);
    const t = await call(oneTraj.GET, "GET", `/api/v1/trajectories/${trajs.json.trajectories[0].id}`, { params: { id: trajs.json.trajectories[0].id } });
    expect(t.json.turns).toHaveLength(4);
    expect(t.json.reward).toBe(1);
    expect(t.json.turns[0].observation).toMatch(/^<b>obs<\/b>/); // stored as text, verbatim

    const p1 = await call(turnsRoute.GET, "GET", `/api/v1/runs/${runId}/turns?limit=10`, { params: { id: runId } });
    const p2 = await call(turnsRoute.GET, "GET", `/api/v1/runs/${runId}/turns?limit=10&after=${p1.json.next}`, { params: { id: runId } });
    const p3 = await call(turnsRoute.GET, "GET", `/api/v1/runs/${runId}/turns?limit=10&after=${p2.json.next}`, { params: { id: runId } });
    expect([p1, p2, p3].map((p) => p.json.turns.length)).toEqual([10, 10, 4]);
    expect(p3.json.next).toBeNull();
    expect(new Set([...p1.json.turns, ...p2.json.turns, ...p3.json.turns].map((x: { seq: number }) => x.seq)).size).toBe(24);
    // past the end of a run: an empty page; an unknown run: 404 (the routes ask only when nothing was found)
    const past = await call(turnsRoute.GET, "GET", `/api/v1/runs/${runId}/turns?limit=10&after=1000000`, { params: { id: runId } });
    expect([past.status, past.json]).toEqual([200, { turns: [], next: null }]);
    const unknown = "00000000-0000-4000-8000-000000000000";
    const noRun = await call(turnsRoute.GET, "GET", `/api/v1/runs/${unknown}/turns?limit=10`, { params: { id: unknown } });
    expect([noRun.status, noRun.json.error]).toEqual([404, expect.stringContaining(unknown)]);
  });

  it("rejects a malformed rollout naming the field, writing nothing", async () => {
    const before = count("Turn");
    const r = await call(
      stepsRoute.POST,
      "POST",
      `/api/v1/runs/${runId}/steps`,
      keyed({
        body: { step: 5, groups: [{ uid: "u", envId: "sokoban", trajectories: [{ turns: [{ observation: "o", action: "a", reward: "high" }] }] }] },
        params: { id: runId },
      }),
    );
    expect(r.status).toBe(400);
    expect(r.json.issues[0].path).toBe("body.groups.0.trajectories.0.turns.0.reward");
    expect(count("Turn")).toBe(before);
  });

  it("stores several steps in one request as one-step requests would, in order, answering a retry from the records", async () => {
    const mk = (step: number, r: number) => ({
      step,
      groups: [
        {
          uid: "g",
          envId: "sokoban",
          trajectories: [
            {
              turns: [
                { observation: `o${step}`, action: "a", reward: r },
                { observation: "p", action: "b", reward: 0 },
              ],
            },
          ],
        },
      ],
    });
    const before = count("Turn");
    const url = `/api/v1/runs/${runId}/steps/batch`;
    const w = await call(stepsBatchRoute.POST, "POST", url, keyed({ body: { steps: [mk(10, 1), mk(11, 0)] }, params: { id: runId } }));
    expect(w.status).toBe(201);
    expect(w.json.steps.map((s: { turns: number }) => s.turns)).toEqual([2, 2]);
    expect(count("Turn")).toBe(before + 4);
    const seqs = turnsPage(runId, before - 1, 100).turns.map((u) => u.observation);
    expect(seqs).toEqual(["o10", "p", "o11", "p"]); // write order is the batch's order
    // the same step alone is recognised as stored (same hash on either route), and so is the whole batch again
    const alone = await call(stepsRoute.POST, "POST", `/api/v1/runs/${runId}/steps`, keyed({ body: mk(11, 0), params: { id: runId } }));
    expect(alone.status).toBe(200);
    expect(alone.json).toEqual(w.json.steps[1]);
    const again = await call(stepsBatchRoute.POST, "POST", url, keyed({ body: { steps: [mk(10, 1), mk(11, 0)] }, params: { id: runId } }));
    expect([again.status, again.json]).toEqual([200, w.json]);
    // a new step beside one stored with other content: 409 naming that step, and nothing of the batch stored
    const clash = await call(stepsBatchRoute.POST, "POST", url, keyed({ body: { steps: [mk(9, 0), mk(10, 0.5)] }, params: { id: runId } }));
    expect(clash.status).toBe(409);
    expect(clash.json.issues[0].path).toBe("body.steps.1.step");
    const bad = await call(stepsBatchRoute.POST, "POST", url, keyed({ body: { steps: [mk(12, 0), { ...mk(13, 0), groups: [] }] }, params: { id: runId } }));
    expect(bad.status).toBe(400);
    expect(bad.json.issues[0].path).toBe("body.steps.1.groups");
    expect(count("Turn")).toBe(before + 4);
    const noKey = await call(stepsBatchRoute.POST, "POST", url, { body: { steps: [mk(12, 0)] }, params: { id: runId } });
    expect(noKey.status).toBe(403); // the write key is checked as on every ingest route
  });

  it("stores a step sent in parts whole, once the last part arrives, exactly as the step sent in one piece", async () => {
    const mk = async (name: string) => {
      const r = await call(importRoute.POST, "POST", "/api/v1/runs/import", { body: { name } });
      return { id: r.json.id as string, headers: { "x-turnlens-write-key": r.json.writeKey as string } };
    };
    const [split, whole] = [await mk("in-parts"), await mk("in-one-piece")];
    const groups = Array.from({ length: 6 }, (_, g) => ({
      uid: `task-${g}`,
      envId: "alfworld",
      trajectories: Array.from({ length: 2 }, (_, t) => ({
        success: t === 0,
        turns: Array.from({ length: 3 }, (_, k) => ({
          observation: `g${g} t${t} turn ${k}`,
          action: "go north",
          reward: k === 2 ? t : 0,
          advantage: g - t + k / 10,
          tokenIds: [g, t, k],
          tokenLogprobs: [-0.1, -0.2, -0.3],
        })),
      })),
    }));
    const head = { step: 3, estimator: "gigpo", params: { gamma: 0.95 } };
    const part = (i: number, extra: object = {}) => ({ ...head, part: i, parts: 3, groups: groups.slice(2 * i, 2 * i + 2), ...extra });
    const send = (body: object) =>
      call(stepPartsRoute.POST, "POST", `/api/v1/runs/${split.id}/steps/parts`, { body, params: { id: split.id }, headers: split.headers });
    const steps = async () => (await call(stepsRoute.GET, "GET", `/api/v1/runs/${split.id}/steps`, { params: { id: split.id } })).json.steps;

    const a = await send(part(2));
    expect([a.status, a.json]).toEqual([201, { complete: false, part: 2, parts: 3, received: 1 }]);
    expect((await send(part(2))).status).toBe(200); // a retried part: answered from its record
    // other content for a waiting part replaces it (a corrected resend); the original again puts it back
    expect((await send(part(2, { groups: groups.slice(0, 1) }))).json).toMatchObject({ received: 1, replaced: true });
    expect((await send(part(2))).json).toMatchObject({ received: 1, replaced: true });
    const wrongCount = await send({ ...part(0), parts: 4 });
    expect([wrongCount.status, wrongCount.json.issues[0].path]).toEqual([409, "body.parts"]);
    expect((await send(part(0))).json).toEqual({ complete: false, part: 0, parts: 3, received: 2 });
    expect(await steps()).toEqual([]); // nothing visible while a part is missing
    const last = await send(part(1));
    expect([last.status, last.json.complete, last.json.turns]).toEqual([201, true, 36]);
    expect(count("IngestStepPart")).toBe(0);

    const one = await call(stepsRoute.POST, "POST", `/api/v1/runs/${whole.id}/steps`, {
      body: { ...head, groups },
      params: { id: whole.id },
      headers: whole.headers,
    });
    expect(one.status).toBe(201);
    const again = await call(stepsRoute.POST, "POST", `/api/v1/runs/${split.id}/steps`, {
      body: { ...head, groups },
      params: { id: split.id },
      headers: split.headers,
    });
    expect(again.status).toBe(200); // the parts' step is the same step
    const rows = (run: string) => turnsPage(run, -1, 1000).turns.map((u) => [u.seq, u.index, u.observation, u.reward, u.advantage, u.tokens]);
    expect(rows(split.id)).toEqual(rows(whole.id));
    expect(rows(split.id)).toHaveLength(36);
  });

  it("404s unknown runs and refuses to delete a running run", async () => {
    const r = await call(runRoute.GET, "GET", "/api/v1/runs/nope", { params: { id: "nope" } });
    expect(r.status).toBe(404);
    const d = await call(runRoute.DELETE, "DELETE", `/api/v1/runs/${runId}`, { params: { id: runId } });
    expect(d.status).toBe(409);
  });

  it("lists runs with filters and sorts by a metric", async () => {
    const byTag = await call(runs.GET, "GET", "/api/v1/runs?tag=verl");
    expect(byTag.json.runs.map((r: { name: string }) => r.name)).toEqual(["verl-run"]);
    expect(byTag.json.runs[0].summary["train/reward"]).toBeCloseTo(2999 / 3000);
    const sorted = await call(runs.GET, "GET", "/api/v1/runs?sort=metric:train/reward&order=desc");
    expect(sorted.json.runs[0].name).toBe("verl-run");
    const bad = await call(runs.GET, "GET", "/api/v1/runs?pageSize=100000");
    expect(bad.status).toBe(400);
    expect(bad.json.issues[0].path).toBe("query.pageSize");
    // the total is every matching run's, on the first page, the last, one past the end, and under a metric sort
    const first = await call(runs.GET, "GET", "/api/v1/runs?pageSize=1");
    const total = first.json.total as number;
    expect(total).toBeGreaterThan(1);
    expect(total).toBe((await call(runs.GET, "GET", "/api/v1/runs?pageSize=100")).json.runs.length);
    expect((await call(runs.GET, "GET", `/api/v1/runs?pageSize=1&page=${total}`)).json).toMatchObject({ total, runs: [expect.anything()] });
    expect((await call(runs.GET, "GET", `/api/v1/runs?pageSize=1&page=${total + 1}`)).json).toMatchObject({ total, runs: [] });
    expect((await call(runs.GET, "GET", `/api/v1/runs?sort=metric:train/reward&pageSize=1&page=${total + 1}`)).json).toMatchObject({ total, runs: [] });
    expect((await call(runs.GET, "GET", "/api/v1/runs?sort=metric:train/reward&pageSize=1")).json.total).toBe(total);
    expect((await call(runs.GET, "GET", "/api/v1/runs?tag=nothing-has-this&page=2")).json).toMatchObject({ total: 0, runs: [] });
    // each page's rows in the sort's order: pages of 2 put together are the one long page, under every sort
    for (const sort of ["name&order=asc", "createdAt", "metric:train/reward&order=desc"]) {
      const ids = async (q: string) => (await call(runs.GET, "GET", `/api/v1/runs?sort=${sort}&${q}`)).json.runs.map((r: { id: string }) => r.id);
      const whole = await ids("pageSize=100");
      const pages = [];
      for (let page = 1; page <= Math.ceil(total / 2); page++) pages.push(...(await ids(`pageSize=2&page=${page}`)));
      expect(pages).toEqual(whole);
    }
    const newest = (await call(runs.GET, "GET", "/api/v1/runs?pageSize=100")).json.runs.map((r: { createdAt: string }) => r.createdAt);
    expect(newest).toEqual([...newest].sort().reverse());
  });
});

describe("auth and OpenAPI", () => {
  it("needs the bearer token on writes when one is configured", async () => {
    const token = "s3cret-s3cret-s3cret-s3cret-s3cret";
    process.env.TURNLENS_API_TOKEN = token;
    try {
      const before = rowCounts();
      const r = await call(importRoute.POST, "POST", "/api/v1/runs/import", { body: { name: "x" } });
      expect(r.status).toBe(401);
      expect(rowCounts()).toEqual(before);
      const ok = await call(importRoute.POST, "POST", "/api/v1/runs/import", { body: { name: "x" }, headers: { authorization: `Bearer ${token}` } });
      expect(ok.status).toBe(201);
      const read = await call(runs.GET, "GET", "/api/v1/runs");
      expect(read.status).toBe(200);
    } finally {
      delete process.env.TURNLENS_API_TOKEN;
    }
  });

  it("serves an OpenAPI 3.1 document covering the routes", async () => {
    const r = await call(openapi.GET, "GET", "/api/v1/openapi.json");
    expect(r.json.openapi).toBe("3.1.0");
    expect(Object.keys(r.json.paths)).toEqual(expect.arrayContaining(["/runs", "/runs/{id}/metrics/series", "/runs/{id}/steps", "/jobs/{id}/log"]));
    const launch = r.json.paths["/runs"].post.requestBody.content["application/json"].schema;
    expect(launch.$ref).toBe("#/components/schemas/LaunchRunInput");
    expect(JSON.stringify(r.json.components.schemas.LaunchRunInput)).toContain("episodes");
  });
});
