// An exported policy evaluated in onnxruntime-node must behave as the PyTorch policy it came from:
// the same tokens for the same text, and the same greedy success on the same held-out tasks.
import fs from "node:fs";
import path from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { killAllWorkers, spawnWorker, useTempDatabase, waitFor } from "../helpers/workers";

const db = useTempDatabase("onnx-eval");
const { launchRun } = await import("../../lib/runs/launch");
const { launchRunSchema } = await import("../../lib/schemas/runs");
const { getRun } = await import("../../lib/db/runs");
const { readSeries } = await import("../../lib/db/metric-series");
const { listCheckpoints } = await import("../../lib/db/checkpoints");
const { TinyTokenizer } = await import("../../lib/policy/tiny-tokenizer");
const { turnsPage } = await import("../../lib/db/rollouts");
const { EngineClient } = await import("../../workers/engine-client");

afterEach(killAllWorkers);
afterAll(() => db.cleanup());

const finished = (runId: string) => ["succeeded", "failed", "canceled"].includes(getRun(runId).status);
const lastValue = (runId: string, key: string) => readSeries(runId, key, { maxPoints: 100_000 }).values.at(-1);

describe("onnx-eval job", () => {
  it("reproduces the torch policy's greedy success on the held-out tasks, tokenizing identically", async () => {
    const train = await launchRun(
      launchRunSchema.parse({
        jobKind: "train",
        name: "source",
        config: { steps: 6, groupsPerStep: 4, groupSize: 4, evalInterval: 3, evalEpisodes: 40, checkpointInterval: 6, threads: 1, exportOnnx: true },
      }),
    );
    spawnWorker();
    await waitFor("training finished", () => finished(train.runId), 150_000, 200);
    expect(getRun(train.runId).status).toBe("succeeded");
    const torchGreedy = lastValue(train.runId, "eval/greedy_success")!;

    const evalRun = await launchRun(
      launchRunSchema.parse({ jobKind: "onnx-eval", name: "onnx", config: { sourceRunId: train.runId, episodes: 40, episodesPerBatch: 20 } }),
    );
    await waitFor("onnx eval finished", () => finished(evalRun.runId), 60_000, 200);
    const run = getRun(evalRun.runId);
    expect(run.status, run.error ?? "").toBe("succeeded");
    expect(run.parentRunId).toBe(train.runId);
    expect(lastValue(evalRun.runId, "eval/episodes")).toBe(40);
    expect(lastValue(evalRun.runId, "eval/success_rate_cum")).toBeCloseTo(torchGreedy, 9);
    // It measured how many of its held-out instances the source's training could draw: none.
    expect(readSeries(evalRun.runId, "eval/train_overlap", { maxPoints: 100 }).values).toEqual([0, 0]);
    // The TypeScript tokenizer gives the engine's ids for the same text, and the ONNX policy took
    // the action the torch policy takes greedily in every state it visited.
    const ckpt = listCheckpoints(train.runId).at(-1)!;
    const tok = new TinyTokenizer(JSON.parse(fs.readFileSync(path.join(path.dirname(ckpt.onnxPath!), "policy.tokenizer.json"), "utf8")));
    const turns = turnsPage(evalRun.runId, -1, 1000).turns;
    expect(turns.length).toBeGreaterThan(40);
    const engine = new EngineClient();
    try {
      await engine.load({ path: ckpt.torchPath, threads: 1 });
      const prompts = ["PFFH\nFHFF\nFFFF\nHFFG\nAction:", "FFFF\nFPFH\nFFHF\nHFFG\nAction: ~unknown chars~"];
      const g = await engine.generate({ prompts, greedy: true, allowed: ["up", "down", "left", "right"] });
      g.responses.forEach((r, i) => {
        expect(tok.encodePrompt(prompts[i])).toEqual(r.prompt_ids);
        expect(tok.decode(r.response_ids)).toBe(r.text);
      });
      const torch = await engine.generate({ prompts: turns.map((t) => `${t.observation}\nAction:`), greedy: true, allowed: ["up", "down", "left", "right"] });
      expect(torch.responses.map((r) => r.text)).toEqual(turns.map((t) => t.action));
    } finally {
      await engine.close();
    }
  }, 240_000);

  it("refuses to evaluate a run that is not a training run, naming the field", async () => {
    const base = await launchRun(launchRunSchema.parse({ jobKind: "baseline", config: { envId: "frozenlake", episodes: 8 } }));
    await expect(launchRun(launchRunSchema.parse({ jobKind: "onnx-eval", config: { sourceRunId: base.runId } }))).rejects.toThrow(/body\.config\.sourceRunId/);
  });
});
