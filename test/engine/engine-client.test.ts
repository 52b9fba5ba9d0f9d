// The TypeScript engine client against the real Python engine (python3 -m workers.engine) and
// against a misbehaving fake engine (test/engine/fixtures/fake_engine.py).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EngineClient, EngineExitedError, EngineProtocolError, EngineRequestError, EngineTimeoutError, type UpdateSample } from "../../workers/engine-client";

const FAKE = path.resolve(__dirname, "fixtures/fake_engine.py");
const GRIDS = ["S F F H\nF H F F\nF F F H\nH F F G", "S F H F\nF F F F\nH F H F\nF F F G"];
const ACTIONS = ["left", "right", "up", "down"];
const CORPUS = [...GRIDS, ACTIONS.join(" ")];

const tinyInit = {
  model: "tiny",
  tiny: { n_layer: 2, n_head: 4, d_model: 32, context_length: 64 },
  tokenizer: { kind: "word" as const, corpus: CORPUS },
  seed: 0,
  threads: 1,
  device: "cpu" as const, // the same device on every machine (a GPU one would pick CUDA under "auto")
};

function fake(mode: string, opts: { timeoutMs?: number; onLog?: (l: string) => void } = {}) {
  return new EngineClient({ args: [FAKE, mode], ...opts });
}

describe("EngineClient with the real engine", () => {
  let engine: EngineClient;
  let dir: string;
  const logs: string[] = [];

  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), "turnlens-engine-"));
    engine = new EngineClient({ onLog: (l) => logs.push(l), timeoutMs: 60_000 });
  });
  afterAll(async () => {
    await engine.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("inits tiny, generates, updates, saves and loads", async () => {
    const pong = await engine.ping();
    expect(pong.protocol_version).toBe(1);
    const info = await engine.init(tinyInit);
    expect(info.device).toBe("cpu");
    expect(info.model_kind).toBe("tiny");
    expect(logs.some((l) => l.includes("model tiny on cpu"))).toBe(true); // stderr reaches onLog

    const gen = await engine.generate({ prompts: GRIDS, n: 4, allowed: ACTIONS });
    expect(gen.responses).toHaveLength(8);
    for (const r of gen.responses) {
      expect(ACTIONS).toContain(r.text);
      expect(r.logprobs).toHaveLength(r.response_ids.length);
    }

    const samples: UpdateSample[] = gen.responses.map((r, i) => ({
      prompt_ids: r.prompt_ids,
      response_ids: r.response_ids,
      old_logprobs: r.logprobs.map((x) => x ?? 0),
      advantages: i % 2 ? 1 : -1,
    }));
    const upd = await engine.update({ samples, epochs: 2, allowed: ACTIONS });
    expect(upd.metrics["perf/num_tokens"]).toBe(8);
    expect(upd.metrics["perf/optimizer_steps"]).toBe(2);
    expect(Number.isFinite(upd.metrics["losses/loss"])).toBe(true);

    const ck = path.join(dir, "ck");
    const saved = await engine.save({ path: ck });
    expect(saved.files).toContain("engine.json");
    const probe = { prompts: GRIDS, responses: ["left", "down"] };
    const before = await engine.logprobs(probe);

    const other = new EngineClient({ timeoutMs: 60_000 });
    try {
      const loaded = await other.load({ path: ck });
      expect(loaded.update_steps).toBe(2);
      expect(await other.logprobs(probe)).toEqual(before);
    } finally {
      await other.close();
    }
  });

  it("turns engine errors into EngineRequestError and keeps serving", async () => {
    const err = await engine.generate({ prompts: ["S F"], temperature: -1 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EngineRequestError);
    expect((err as EngineRequestError).type).toBe("InvalidRequest");
    expect((err as Error).message).toContain("params.temperature");
    expect((await engine.ping()).pong).toBe(true);
  });

  it("answers concurrent requests by id", async () => {
    const [a, b, c] = await Promise.all([engine.ping(), engine.generate({ prompts: [GRIDS[0]], greedy: true, max_new_tokens: 2 }), engine.info()]);
    expect(a.pong).toBe(true);
    expect(b.responses).toHaveLength(1);
    expect(c.initialized).toBe(true);
  });
});

describe("EngineClient failure handling", () => {
  it("times out, rejects and kills the process (real engine)", async () => {
    const engine = new EngineClient();
    const err = await engine.init(tinyInit, { timeoutMs: 1 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EngineTimeoutError);
    expect((err as Error).message).toMatch(/init \(id 1\) timed out after 1 ms/);
    const exit = await engine.exited;
    expect(exit.signal).toBe("SIGKILL");
    await expect(engine.ping()).rejects.toBeInstanceOf(EngineExitedError);
  });

  it("times out on an engine that never answers; other pending requests reject too", async () => {
    const engine = fake("hang");
    const slow = engine.ping({ timeoutMs: 60_000 });
    const err = await engine.ping({ timeoutMs: 300 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EngineTimeoutError);
    await expect(slow).rejects.toBeInstanceOf(EngineExitedError);
    await engine.exited;
    expect(engine.closed).toBe(true);
  });

  it("rejects with a clear error when the engine prints garbage", async () => {
    const engine = fake("garbage");
    const err = await engine.ping({ timeoutMs: 10_000 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EngineProtocolError);
    expect((err as Error).message).toMatch(/not JSON: "Traceback/);
    await engine.exited; // the channel is not trusted any more: the process is killed
  });

  it("names the malformed field of a result", async () => {
    const engine = fake("bad-field");
    const err = await engine.ping({ timeoutMs: 10_000 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EngineProtocolError);
    expect((err as Error).message).toMatch(/result\.initialized/);
    await engine.close(1_000);
  });

  it("reports a malformed envelope", async () => {
    const engine = fake("bad-envelope");
    const err = await engine.ping({ timeoutMs: 10_000 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EngineProtocolError);
    expect((err as Error).message).toMatch(/response\.(id|ok)/);
    await engine.exited;
  });

  it("rejects pending requests when the process dies, with its stderr", async () => {
    const logs: string[] = [];
    const engine = fake("die", { onLog: (l) => logs.push(l) });
    const err = await engine.ping({ timeoutMs: 10_000 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EngineExitedError);
    expect((err as EngineExitedError).code).toBe(3);
    expect((err as Error).message).toContain("simulated crash");
    expect(logs).toContain("fatal: simulated crash");
    await expect(engine.ping()).rejects.toBeInstanceOf(EngineExitedError);
  });

  it("rejects pending requests when the real engine is killed mid-request", async () => {
    const engine = new EngineClient();
    const pending = engine.init(tinyInit);
    engine.kill("SIGTERM");
    const err = await pending.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EngineExitedError);
    expect((err as EngineExitedError).signal).toBe("SIGTERM");
  });

  it("rejects when the interpreter does not exist", async () => {
    const engine = new EngineClient({ python: "/nonexistent/python3" });
    const err = await engine.ping().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EngineExitedError);
    expect((err as Error).message).toMatch(/could not start/);
  });

  it("uses TURNLENS_PYTHON when set", async () => {
    const saved = process.env.TURNLENS_PYTHON;
    process.env.TURNLENS_PYTHON = "/nonexistent/turnlens-python";
    try {
      const engine = new EngineClient({ args: [FAKE, "echo-ok"] });
      const err = await engine.ping().catch((e: unknown) => e);
      expect((err as Error).message).toContain("/nonexistent/turnlens-python");
    } finally {
      if (saved === undefined) delete process.env.TURNLENS_PYTHON;
      else process.env.TURNLENS_PYTHON = saved;
    }
    const ok = new EngineClient({ args: [FAKE, "echo-ok"] });
    expect((await ok.ping()).pong).toBe(true);
    await ok.close(1_000);
  });
});
