// Ingest validation through the real route handlers on a real database: text that is no text (a
// lone UTF-16 surrogate). Each refusal names the field and writes nothing.
import { beforeAll, describe, expect, it } from "vitest";
import { NextRequest } from "next/server";
import { useTempDatabase } from "../helpers/temp-db";

useTempDatabase("ingest-validation");
const importRoute = await import("@/app/api/v1/runs/import/route");
const metricsRoute = await import("@/app/api/v1/runs/[id]/metrics/route");
const stepsRoute = await import("@/app/api/v1/runs/[id]/steps/route");
const batchRoute = await import("@/app/api/v1/runs/[id]/steps/batch/route");
const partsRoute = await import("@/app/api/v1/runs/[id]/steps/parts/route");
const { countRows } = await import("@/lib/db/inspect");

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
