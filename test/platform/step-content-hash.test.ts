// A step's idempotency hash is made from its columns as stored (lib/db/rollouts.ts packStep), through
// the real step route on a real database: the same content again is a 200 however its JSON is
// written (key order, token arrays packed or not), any change of content is a 409 that stores
// nothing, and a step recorded with the hash of its JSON (what servers wrote before) is still
// recognised on a retry.
import { createHash } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { NextRequest } from "next/server";
import { useTempDatabase } from "../helpers/temp-db";

useTempDatabase("step-content-hash");
const importRoute = await import("@/app/api/v1/runs/import/route");
const stepsRoute = await import("@/app/api/v1/runs/[id]/steps/route");
const { countRows, setBatchHash } = await import("../helpers/db-inspect");
const { rolloutStepInputSchema } = await import("@/lib/schemas/rollouts");

type Handler = (req: NextRequest, ctx: { params: Promise<Record<string, string>> }) => Promise<Response>;

let runId = "";
let writeKey = "";
async function post(raw: string) {
  const res = await (stepsRoute.POST as Handler)(
    new NextRequest(new URL(`/api/v1/runs/${runId}/steps`, "http://127.0.0.1:3000"), {
      method: "POST",
      headers: { "content-type": "application/json", "x-turnlens-write-key": writeKey },
      body: raw,
    }),
    { params: Promise.resolve({ id: runId }) },
  );
  return { status: res.status, json: (await res.json()) as { stepId?: string; error?: string } };
}

const packed = (dtype: "int32" | "float32", xs: number[]) => {
  const b = Buffer.alloc(4 * xs.length);
  for (const [i, x] of xs.entries()) {
    if (dtype === "int32") b.writeInt32LE(x, 4 * i);
    else b.writeFloatLE(x, 4 * i);
  }
  return { dtype, data: b.toString("base64") };
};

/** A two-group step with texts, anchors, info and per-token data (values exact in float32). */
function step(n: number, tokens: "arrays" | "packed" = "arrays") {
  const tok = (ids: number[], lps: number[]) =>
    tokens === "arrays" ? { tokenIds: ids, tokenLogprobs: lps } : { tokenIds: packed("int32", ids), tokenLogprobs: packed("float32", lps) };
  const traj = (g: number, t: number) => ({
    success: t === 0,
    turns: [0, 1, 2].map((k) => ({
      observation: `room ${g}, turn ${k}: you see a key ☃`,
      action: k === 2 ? "open door" : "go north",
      reward: k === 2 && t === 0 ? 1 : 0,
      anchor: `s${k}`,
      advantage: t === 0 ? 0.5 : -0.5,
      info: { won: t === 0 && k === 2 },
      ...tok([10 + k, 20 + t], [-0.5, -1.25]),
    })),
  });
  return {
    step: n,
    estimator: "gigpo",
    params: { gamma: 0.95, omega: 1 },
    groups: [0, 1].map((g) => ({ uid: `task-${g}`, envId: "keys", trajectories: [traj(g, 0), traj(g, 1)] })),
  };
}

/**
 * The JSON with the keys of the step's, groups', trajectories' and turns' objects in reverse order:
 * other bytes, the same content (params and info are kept as given: their key order is stored).
 */
function reversedKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(reversedKeys);
  if (v && typeof v === "object")
    return Object.fromEntries(
      Object.entries(v)
        .reverse()
        .map(([k, x]) => [k, k === "params" || k === "info" ? x : reversedKeys(x)]),
    );
  return v;
}

beforeAll(async () => {
  const res = await (importRoute.POST as Handler)(
    new NextRequest(new URL("/api/v1/runs/import", "http://127.0.0.1:3000"), {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ name: "hash", envId: "keys", estimator: "gigpo" }),
    }),
    { params: Promise.resolve({}) },
  );
  const j = (await res.json()) as { id: string; writeKey: string };
  runId = j.id;
  writeKey = j.writeKey;
});

describe("a step's content hash", () => {
  it("answers the same content 200 with the stored ids, however its JSON is written", async () => {
    const first = await post(JSON.stringify(step(0)));
    expect(first.status).toBe(201);
    for (const raw of [JSON.stringify(step(0)), JSON.stringify(reversedKeys(step(0))), JSON.stringify(step(0, "packed"))]) {
      const again = await post(raw);
      expect(again.status).toBe(200);
      expect(again.json.stepId).toBe(first.json.stepId);
    }
    expect(countRows("RolloutStep", runId)).toBe(1);
  });

  it("answers any change of content 409 and stores nothing of it", async () => {
    const changes: ((s: ReturnType<typeof step>) => void)[] = [
      (s) => (s.groups[1].trajectories[1].turns[2].observation += "!"),
      (s) => (s.groups[0].trajectories[0].turns[1].action = "go south"),
      (s) => (s.groups[0].trajectories[1].turns[0].reward = 0.25),
      (s) => (s.groups[1].trajectories[0].turns[0].anchor = "s9"),
      (s) => (s.groups[0].trajectories[0].turns[0].info = { won: true }),
      (s) => (s.groups[0].trajectories[1].success = true),
      (s) => (s.groups[1].uid = "task-9"),
      (s) => (s.params.omega = 0.5),
      (s) => ((s.groups[0].trajectories[0].turns[0].tokenLogprobs as number[])[1] = -1.5),
      (s) => (s.groups[1].trajectories[1].turns = s.groups[1].trajectories[1].turns.slice(0, 2)),
    ];
    for (const change of changes) {
      const s = step(0);
      change(s);
      const r = await post(JSON.stringify(s));
      expect(r.status, change.toString()).toBe(409);
    }
    expect(countRows("RolloutStep", runId)).toBe(1);
    expect(countRows("Turn", runId)).toBe(12);
  });

  it("recognises a retry of a step recorded with the hash of its JSON (a step stored by an older server)", async () => {
    expect((await post(JSON.stringify(step(1)))).status).toBe(201);
    // the record as an older server made it: SHA-256 of the validated step's JSON
    const { batchId: _b, ...content } = rolloutStepInputSchema.parse(step(1));
    void _b;
    setBatchHash(runId, "step:1", createHash("sha256").update(JSON.stringify(content)).digest("hex"));
    expect((await post(JSON.stringify(step(1)))).status).toBe(200);
    const other = step(1);
    other.groups[0].trajectories[0].turns[0].reward = 2;
    expect((await post(JSON.stringify(other))).status).toBe(409);
    expect(countRows("RolloutStep", runId)).toBe(2);
  });
});
