// Per-token data of a turn: the BLOB codec (lib/db/token-data.ts) round-trips and refuses
// inconsistent input, and the ingest API stores what a trainer sends, with and without token
// fields, rejecting mismatched lengths with the field named.
import { beforeAll, describe, expect, it } from "vitest";
import { NextRequest } from "next/server";
import { useTempDatabase } from "../helpers/temp-db";

useTempDatabase("token-data");
const { encodeTokenData, decodeTokenData, TokenDataError } = await import("@/lib/db/token-data");
const importRoute = await import("@/app/api/v1/runs/import/route");
const stepsRoute = await import("@/app/api/v1/runs/[id]/steps/route");
const trajRoute = await import("@/app/api/v1/runs/[id]/trajectories/route");
const oneTraj = await import("@/app/api/v1/trajectories/[id]/route");
const { countRows, packedTurnColumns } = await import("../helpers/db-inspect");
const { unpackTurnTexts, unpackTurnTokens } = await import("@/lib/db/trajectory-pack");

const f32 = (x: number) => Math.fround(x);

describe("token data codec", () => {
  it("round-trips ids, floats (as float32) and UTF-8 texts, each array optional", () => {
    const d = {
      ids: [0, 7, 151_643, -1, 2 ** 31 - 1],
      texts: ["", "héllo", " 世界", "\n", "🙂"],
      logprobs: [-0.1, -2.5, -1e-7, 0, -30.25],
      advantages: [0.5, 0.5, -1.25, 3, 0],
      entropies: [1.1, 0, 2.2, 0.3, 4.4],
    };
    const back = decodeTokenData(encodeTokenData(d));
    expect(back.ids).toEqual(d.ids);
    expect(back.texts).toEqual(d.texts);
    expect(back.logprobs).toEqual(d.logprobs.map(f32));
    expect(back.advantages).toEqual(d.advantages.map(f32));
    expect(back.entropies).toEqual(d.entropies.map(f32));
    // the size is the documented layout: 8-byte header, 4 bytes per id and per float, 4 per text offset + UTF-8
    const utf8 = d.texts.reduce((s, t) => s + Buffer.byteLength(t), 0);
    expect(encodeTokenData(d).length).toBe(8 + 5 * 4 * 4 + 5 * 4 + utf8);

    const idsOnly = decodeTokenData(encodeTokenData({ ids: [3, 4], texts: null, logprobs: null, advantages: null, entropies: null }));
    expect(idsOnly).toEqual({ ids: [3, 4], texts: null, logprobs: null, advantages: null, entropies: null });
    const some = decodeTokenData(encodeTokenData({ ids: [3], texts: null, logprobs: null, advantages: null, entropies: [0.75] }));
    expect(some.entropies).toEqual([0.75]);
    expect(some.logprobs).toBeNull();
    expect(decodeTokenData(encodeTokenData({ ids: [], texts: [], logprobs: [], advantages: null, entropies: null })).texts).toEqual([]);
  });

  it("refuses arrays whose length differs from the ids, non-finite floats, non-int32 ids, and bad BLOBs", () => {
    const base = { ids: [1, 2, 3], texts: null, logprobs: null, advantages: null, entropies: null };
    expect(() => encodeTokenData({ ...base, logprobs: [0, 0] })).toThrow(/logprobs: 2 values for 3 token ids/);
    expect(() => encodeTokenData({ ...base, texts: ["a"] })).toThrow(/texts: 1 values for 3 token ids/);
    expect(() => encodeTokenData({ ...base, entropies: [0, NaN, 0] })).toThrow(/entropies\[1\]/);
    expect(() => encodeTokenData({ ...base, ids: [1, 2 ** 31] })).toThrow(TokenDataError);
    const blob = encodeTokenData({ ...base, logprobs: [0, 0, 0], texts: ["a", "b", "c"] });
    expect(() => decodeTokenData(blob.subarray(0, 20))).toThrow(/bytes, 3 tokens need at least/);
    expect(() => decodeTokenData(blob.subarray(0, 4))).toThrow(/shorter than its header/);
    const v2 = Buffer.from(blob);
    v2[0] = 2;
    expect(() => decodeTokenData(v2)).toThrow(/unknown version 2/);
  });
});

type Handler<P> = (req: NextRequest, ctx: { params: Promise<P> }) => Promise<Response>;
async function call<P>(h: Handler<P>, method: string, path: string, params: P, body?: unknown, headers: Record<string, string> = {}) {
  const init = { method, headers: { "content-type": "application/json", ...headers }, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) };
  const res = await h(new NextRequest(new URL(path, "http://127.0.0.1:3000"), init), { params: Promise.resolve(params) });
  // biome-ignore lint/suspicious/noExplicitAny: responses of several routes, read field by field
  return { status: res.status, json: (await res.json()) as any };
}

describe("ingest with per-token fields", () => {
  let runId = "";
  let key: Record<string, string> = {};
  beforeAll(async () => {
    const r = await call(importRoute.POST, "POST", "/api/v1/runs/import", {}, { name: "tokens", envId: "sokoban" });
    expect(r.status).toBe(201);
    runId = r.json.id;
    key = { "x-turnlens-write-key": r.json.writeKey };
  });
  const turnCount = () => countRows("Turn");
  const step = (n: number, turns: Record<string, unknown>[]) => ({ step: n, groups: [{ uid: "u", envId: "sokoban", trajectories: [{ turns }] }] });
  const post = (body: unknown) => call(stepsRoute.POST, "POST", `/api/v1/runs/${runId}/steps`, { id: runId }, body, key);
  const turnsOf = async (n: number) => {
    const t = await call(trajRoute.GET, "GET", `/api/v1/runs/${runId}/trajectories?step=${n}`, { id: runId });
    const id = t.json.trajectories[0].id;
    return (await call(oneTraj.GET, "GET", `/api/v1/trajectories/${id}`, { id })).json.turns as { tokens: unknown; action: string }[];
  };

  it("stores and answers token ids, texts, log-probs, advantages and entropies; turns without them answer tokens: null", async () => {
    const w = await post(
      step(0, [
        {
          observation: "o",
          action: "go left",
          reward: 0,
          tokenIds: [11, 5, 12],
          tokenTexts: ["go", " ", "left"],
          tokenLogprobs: [-0.5, -0.01, -1.5],
          tokenAdvantages: [0.25, 0.25, -0.5],
          tokenEntropies: [1.2, 0.1, 0.9],
        },
        { observation: "o2", action: "up", reward: 1, tokenIds: [13], tokenLogprobs: [-0.2] },
        { observation: "o3", action: "down", reward: 0 },
      ]),
    );
    expect(w.status, JSON.stringify(w.json)).toBe(201);
    const turns = await turnsOf(0);
    expect(turns[0].tokens).toEqual({
      ids: [11, 5, 12],
      texts: ["go", " ", "left"],
      logprobs: [-0.5, -0.01, -1.5].map(f32),
      advantages: [0.25, 0.25, -0.5],
      entropies: [1.2, 0.1, 0.9].map(f32),
    });
    expect(turns[1].tokens).toEqual({ ids: [13], texts: null, logprobs: [f32(-0.2)], advantages: null, entropies: null });
    expect(turns[2].tokens).toBeNull();
    // the token arrays are stored packed, not in the turn's info
    const [row] = packedTurnColumns(runId);
    expect(unpackTurnTokens(row.turnTokens, 3).map((b) => b?.length ?? null)).toEqual([8 + 3 * 4 * 4 + 3 * 4 + 7, 8 + 2 * 4, null]);
    expect(unpackTurnTexts(row.turnTexts).info).toEqual([null, null, null]);
  });

  it("takes token numbers packed (base64 of little-endian int32 / float32) and stores what the arrays store", async () => {
    const pack = (dtype: "int32" | "float32", xs: number[]) => {
      const b = Buffer.alloc(4 * xs.length);
      xs.forEach((x, i) => {
        if (dtype === "int32") b.writeInt32LE(x, 4 * i);
        else b.writeFloatLE(x, 4 * i);
      });
      return { dtype, data: b.toString("base64") };
    };
    const ids = [11, -5, 151_643];
    const [lp, adv, ent] = [
      [-0.5, -0.01, -1.5],
      [0.25, 0.25, -0.5],
      [1.2, 0.1, 0.9],
    ];
    const w = await post(
      step(7, [
        {
          observation: "o",
          action: "a",
          reward: 0,
          tokenIds: pack("int32", ids),
          tokenTexts: ["x", "y", "z"],
          tokenLogprobs: pack("float32", lp),
          tokenAdvantages: pack("float32", adv),
          tokenEntropies: pack("float32", ent),
        },
        { observation: "o", action: "a", reward: 0, tokenIds: ids, tokenTexts: ["x", "y", "z"], tokenLogprobs: lp, tokenAdvantages: adv, tokenEntropies: ent },
      ]),
    );
    expect(w.status, JSON.stringify(w.json)).toBe(201);
    const [packed, plain] = await turnsOf(7);
    expect(packed.tokens).toEqual(plain.tokens);
    expect(packed.tokens).toEqual({ ids, texts: ["x", "y", "z"], logprobs: lp.map(f32), advantages: adv.map(f32), entropies: ent.map(f32) });
    // the fast check and the schema agree on packed turns (same object: same content hash)
    const { rolloutStepFast, rolloutStepInputSchema } = await import("@/lib/schemas/rollouts");
    const body = step(8, [{ observation: "o", action: "a", reward: 0, tokenIds: pack("int32", ids), tokenLogprobs: pack("float32", lp) }]);
    expect(rolloutStepFast(body)).toEqual(rolloutStepInputSchema.parse(body));
  });

  it("stores 65,536 packed token ids and float values (the documented limit), and refuses 65,537 naming the field", async () => {
    const n = 65_536;
    const ids = Buffer.alloc(4 * n);
    const lps = Buffer.alloc(4 * n);
    for (let i = 0; i < n; i++) {
      ids.writeInt32LE(i * 7, 4 * i);
      lps.writeFloatLE(-i / n, 4 * i);
    }
    const turn = (idBytes: Buffer, lpBytes: Buffer) => ({
      observation: "o",
      action: "a",
      reward: 0,
      tokenIds: { dtype: "int32", data: idBytes.toString("base64") },
      tokenLogprobs: { dtype: "float32", data: lpBytes.toString("base64") },
    });
    const w = await post(step(20, [turn(ids, lps)]));
    expect(w.status, JSON.stringify(w.json).slice(0, 500)).toBe(201);
    const [stored] = await turnsOf(20);
    const tokens = stored.tokens as { ids: number[]; logprobs: number[] };
    expect(tokens.ids).toHaveLength(n);
    expect([tokens.ids[1], tokens.ids[n - 1], tokens.logprobs[n - 1]]).toEqual([7, (n - 1) * 7, f32(-(n - 1) / n)]);

    const before = turnCount();
    const one = Buffer.alloc(4);
    for (const [field, body] of [
      ["tokenIds", turn(Buffer.concat([ids, one]), Buffer.concat([lps, one]))],
      ["tokenLogprobs", { ...turn(ids, Buffer.concat([lps, one])), tokenIds: Array.from({ length: n + 1 }, (_, i) => i) }],
    ] as const) {
      const r = await post(step(21, [body]));
      expect(r.status).toBe(400);
      const issue = r.json.issues.find((i: { path: string }) => i.path.startsWith(`body.groups.0.trajectories.0.turns.0.${field}`));
      expect(issue, JSON.stringify(r.json.issues).slice(0, 500)).toBeTruthy();
      expect(issue.message).toMatch(/at most 65536 values/);
    }
    expect(turnCount()).toBe(before);
  });

  it("refuses a packed array that is not whole values, holds a non-finite float, or disagrees in length, naming it", async () => {
    const before = turnCount();
    const f = (xs: number[]) => {
      const b = Buffer.alloc(4 * xs.length);
      xs.forEach((x, i) => {
        b.writeFloatLE(x, 4 * i);
      });
      return { dtype: "float32", data: b.toString("base64") };
    };
    const cases: [Record<string, unknown>, string, RegExp][] = [
      [{ tokenIds: [1, 2], tokenLogprobs: f([0.5, NaN]) }, "tokenLogprobs.data", /value 1 is NaN, not a finite number/],
      [
        { tokenIds: [1, 2], tokenLogprobs: { dtype: "float32", data: Buffer.alloc(6).toString("base64") } },
        "tokenLogprobs.data",
        /6 bytes, not a whole number of 4-byte values/,
      ],
      [{ tokenIds: [1, 2], tokenEntropies: f([0.5]) }, "tokenEntropies", /tokenEntropies has 1 entries, tokenIds has 2/],
      [{ tokenIds: [1], tokenAdvantages: { dtype: "float32", data: "not base64!" } }, "tokenAdvantages.data", /base64/],
      [{ tokenIds: { dtype: "float32", data: f([1]).data } }, "tokenIds.dtype", /int32/],
    ];
    for (const [extra, field, msg] of cases) {
      const r = await post(step(9, [{ observation: "o", action: "a", reward: 0, ...extra }]));
      expect(r.status, JSON.stringify(extra)).toBe(400);
      const issue = r.json.issues.find((i: { path: string }) => i.path === `body.groups.0.trajectories.0.turns.0.${field}`);
      expect(issue, JSON.stringify(r.json.issues)).toBeTruthy();
      expect(issue.message).toMatch(msg);
    }
    expect(turnCount()).toBe(before);
  });

  it("rejects token arrays whose lengths disagree, or that come without tokenIds, naming the field and writing nothing", async () => {
    const before = turnCount();
    const cases: [Record<string, unknown>, string, RegExp][] = [
      [{ tokenIds: [1, 2], tokenLogprobs: [-1] }, "tokenLogprobs", /tokenLogprobs has 1 entries, tokenIds has 2/],
      [{ tokenIds: [1], tokenTexts: ["a", "b"] }, "tokenTexts", /tokenTexts has 2 entries/],
      [{ tokenEntropies: [0.5] }, "tokenEntropies", /tokenEntropies needs tokenIds/],
      [{ tokenIds: [1.5] }, "tokenIds.0", /int/i],
      [{ tokenIds: [1], tokenAdvantages: ["x"] }, "tokenAdvantages.0", /number/],
    ];
    for (const [extra, field, msg] of cases) {
      const r = await post(
        step(1, [
          { observation: "o", action: "a", reward: 0 },
          { observation: "o", action: "a", reward: 0, ...extra },
        ]),
      );
      expect(r.status, JSON.stringify(extra)).toBe(400);
      const issue = r.json.issues.find((i: { path: string }) => i.path === `body.groups.0.trajectories.0.turns.1.${field}`);
      expect(issue, JSON.stringify(r.json.issues)).toBeTruthy();
      expect(issue.message).toMatch(msg);
    }
    const tooMany = await post(step(1, [{ observation: "o", action: "a", reward: 0, tokenIds: Array(65_537).fill(1) }]));
    expect(tooMany.status).toBe(400);
    expect(tooMany.json.issues[0].path).toBe("body.groups.0.trajectories.0.turns.0.tokenIds");
    expect(turnCount()).toBe(before);
  });
});
