// What the runners that drive a PyTorch policy share (train, checkpoint-eval): the train config
// and its held-out set, the engine's install check, start-up and restarts, the engine-backed
// `Generate` of the rollout loop, and greedy held-out evaluation. One implementation, so an
// evaluation job scores a checkpoint exactly as training scored it in-process.
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { trainConfigSchema, type TrainConfig } from "../../lib/schemas/train";
import { getEnvSpec } from "../../lib/envs/registry";
import { createRng, mixSeed } from "../../lib/envs/rng";
import { heldOutSet, type HeldOutSet } from "../../lib/envs/heldout";
import type { Env } from "../../lib/envs/types";
import { getEstimator } from "../../lib/credit";
import { rollout, type Generate, type GenResult, type RolloutGroup } from "../../lib/rollout/rollout";
import { projectRoot } from "../../lib/db/url";
import { EngineClient, EngineExitedError, EngineTimeoutError } from "../engine-client";
import type { JobContext } from "./types";

/**
 * Training and held-out evaluation never share an instance (not just a seed): evaluation plays
 * the held-out set's distinct instances (seeds from 2^30 up), training redraws any seed whose
 * instance is held out (lib/envs/heldout.ts). Each evaluation stores the overlap it measured.
 */
export function heldOutFor(cfg: TrainConfig): HeldOutSet {
  return heldOutSet(cfg.envId, cfg.envConfig, cfg.evalEpisodes);
}

/** Parses and checks a train config against the environment and estimator registries. */
export function parseTrainConfig(payload: unknown): TrainConfig {
  const cfg = trainConfigSchema.parse(payload);
  const envConfig = getEnvSpec(cfg.envId).configSchema.parse(cfg.envConfig) as Record<string, unknown>;
  const estimatorParams = getEstimator(cfg.estimator).paramsSchema.parse(cfg.estimatorParams) as Record<string, unknown>;
  return { ...cfg, envConfig, estimatorParams };
}

/** The one command that installs the engine's Python packages (README "Quick start"). */
export const ENGINE_INSTALL_COMMAND = "bash scripts/setup.sh";

/**
 * A job on a machine whose Python lacks the engine's packages (a view-only install:
 * `bash scripts/start.sh --view-only`). Its message is the whole story (what is missing, the
 * command that installs it), so its stack is that message too: the job log and the run page
 * show one readable line, not a trace. Not retryable: another attempt here would fail the same way.
 */
export class EngineNotInstalledError extends Error {
  readonly retryable = false;
  constructor(message: string) {
    super(message);
    this.name = "EngineNotInstalledError";
    this.stack = `${this.name}: ${message}`;
  }
}

/** The distributions of workers/engine/requirements.txt the engine runs on (pytest is for its tests only). */
export function engineRequirements(text: string): string[] {
  return text
    .split("\n")
    .map((l) => l.replace(/#.*/, "").trim())
    .filter(Boolean)
    .map((l) => l.split(/[<>=!~;[\s]/)[0])
    .filter((name) => name && name.toLowerCase() !== "pytest");
}

/**
 * Checks, in well under a second and without importing torch, that `python` has every engine
 * package installed (by distribution metadata, so import names do not matter). Throws
 * EngineNotInstalledError naming what is missing and how to install it. An interpreter that does
 * not answer within `timeoutMs` is not judged here (the engine's own start reports on it); `signal`
 * (the job's cancel) stops the check. `jobs` names the jobs that need it in the message.
 */
export async function assertEngineInstalled(
  opts: { python?: string; signal?: AbortSignal; timeoutMs?: number; onSlow?: (msg: string) => void; jobs?: string } = {},
): Promise<void> {
  const python = opts.python ?? (process.env.TURNLENS_PYTHON || "python3");
  const jobs = opts.jobs ?? "train jobs";
  const reqFile = path.join(projectRoot(), "workers", "engine", "requirements.txt");
  const names = engineRequirements(fs.readFileSync(reqFile, "utf8"));
  const probe = [
    "import sys, importlib.metadata as m",
    "def has(n):",
    "    try:",
    "        m.distribution(n)",
    "        return True",
    "    except m.PackageNotFoundError:",
    "        return False",
    "print(' '.join(n for n in sys.argv[1:] if not has(n)))",
  ].join("\n");
  const r = await new Promise<{ code: number | null; stdout: string; stderr: string; error?: NodeJS.ErrnoException; timedOut?: boolean }>((resolve) => {
    const child = spawn(python, ["-c", probe, ...names], { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (b: Buffer) => (stdout += b.toString()));
    child.stderr.on("data", (b: Buffer) => (stderr += b.toString()));
    const stop = () => child.kill("SIGKILL");
    const timer = setTimeout(() => {
      stop();
      resolve({ code: null, stdout, stderr, timedOut: true });
    }, opts.timeoutMs ?? 30_000);
    opts.signal?.addEventListener("abort", stop, { once: true });
    const done = (v: { code: number | null; error?: NodeJS.ErrnoException }) => {
      clearTimeout(timer);
      opts.signal?.removeEventListener("abort", stop);
      resolve({ ...v, stdout, stderr });
    };
    child.on("error", (error: NodeJS.ErrnoException) => done({ code: null, error }));
    child.on("close", (code) => done({ code }));
  });
  if (opts.signal?.aborted) return;
  if (r.timedOut) {
    opts.onSlow?.(`"${python}" did not answer the engine package check within ${Math.round((opts.timeoutMs ?? 30_000) / 1000)} s; starting the engine anyway`);
    return;
  }
  const how = `Install them with \`${ENGINE_INSTALL_COMMAND}\` (or \`${python} -m pip install -r workers/engine/requirements.txt\`), then retry the run.`;
  if (r.error)
    throw new EngineNotInstalledError(
      `${jobs} need the PyTorch engine, but its Python interpreter "${python}" ${r.error.code === "ENOENT" ? "was not found" : `could not start (${r.error.message})`} (TURNLENS_PYTHON picks another). Install Python 3.11 and the engine's packages: \`${ENGINE_INSTALL_COMMAND}\`.`,
    );
  if (r.code !== 0)
    throw new EngineNotInstalledError(
      `${jobs} need the PyTorch engine, but "${python}" failed to check its packages (${r.stderr.trim().split("\n").pop() || `exit code ${r.code}`}). ${how}`,
    );
  const missing = r.stdout
    .trim()
    .split(/\s+/)
    .filter((n) => names.includes(n));
  if (missing.length)
    throw new EngineNotInstalledError(
      `${jobs} need the PyTorch engine's Python packages, and ${python} is missing ${missing.join(", ")} (a view-only install, \`bash scripts/start.sh --view-only\`, leaves them out). ${how}`,
    );
}

/** Restart the engine this many times within one attempt when it dies mid-run. */
export const ENGINE_RESTARTS = 3;

/**
 * Runs `attempt` and runs it again (at most ENGINE_RESTARTS times) when the engine died under it;
 * `attempt` resumes from what it stored (a checkpoint, the batches already written).
 */
export async function withEngineRestarts<T>(ctx: JobContext, attempt: () => Promise<T>, resumeFrom = "the last checkpoint"): Promise<T> {
  for (let restarts = 0; ; restarts++) {
    try {
      return await attempt();
    } catch (err) {
      const engineDied = err instanceof EngineExitedError || err instanceof EngineTimeoutError;
      if (!engineDied || ctx.signal.aborted || restarts >= ENGINE_RESTARTS) throw err;
      ctx.log(`engine died (${(err as Error).message.split("\n")[0]}); restarting it from ${resumeFrom} (${restarts + 1}/${ENGINE_RESTARTS})`, "warn");
    }
  }
}

/**
 * Starts the engine on the worker's GPU for this job, else with no GPU visible (device "auto"
 * then picks the CPU), runs `use`, and closes it; the job's cancel kills it at once.
 */
export async function withEngine<T>(ctx: JobContext, use: (engine: EngineClient) => Promise<T>): Promise<T> {
  const engine = new EngineClient({ onLog: (line) => ctx.log(`[engine] ${line}`), timeoutMs: 15 * 60_000, env: { CUDA_VISIBLE_DEVICES: ctx.gpu ?? "" } });
  const kill = () => engine.kill();
  ctx.signal.addEventListener("abort", kill);
  try {
    return await use(engine);
  } finally {
    ctx.signal.removeEventListener("abort", kill);
    await engine.close(5_000).catch(() => engine.kill());
  }
}

/**
 * The rollout loop's `Generate` over the engine: one generate call per turn, at `temperature`
 * (default: the train config's). Training rollouts (epsilon > 0) explore; evaluation is greedy
 * or sampled without exploration. A numeric `seed` seeds every call alike; a function gives each
 * call (0, 1, ...: one per turn) its own, so a sampled episode draws afresh at every turn.
 */
export function engineGenerate(
  engine: EngineClient,
  cfg: TrainConfig,
  greedy: boolean,
  seed: number | ((call: number) => number),
  epsilon = 0,
  temperature = cfg.temperature,
): Generate {
  const seedOf = typeof seed === "number" ? () => seed : seed;
  const rng = createRng(mixSeed(seedOf(0), "explore"));
  let calls = 0;
  return async (reqs) => {
    const res = await engine.generate({
      prompts: reqs.map((r) => r.prompt),
      allowed_per_prompt: reqs.map((r) => r.allowed),
      temperature,
      greedy,
      seed: seedOf(calls++),
      ...(reqs.every((r) => r.allowed) ? {} : { max_new_tokens: cfg.maxNewTokens }),
    });
    const out: GenResult[] = res.responses.map((r) => ({
      text: r.text,
      promptIds: r.prompt_ids,
      responseIds: r.response_ids,
      logprobs: r.logprobs.map((x) => x ?? 0),
      entropies: r.entropies.map((x) => x ?? 0),
      tokenTexts: r.token_texts,
    }));
    // Epsilon-exploration: swap in a random admissible action, scored under the current policy so
    // that PPO's first-epoch ratio is 1 for it (the behaviour policy is treated as on-policy).
    const swap = epsilon > 0 ? reqs.map((r, i) => (r.allowed?.length && rng.chance(epsilon) ? i : -1)).filter((i) => i >= 0) : [];
    if (swap.length) {
      const actions = swap.map((i) => rng.pick(reqs[i].allowed!));
      const scored = await engine.logprobs({
        prompt_ids: swap.map((i) => out[i].promptIds),
        responses: actions,
        allowed_per_prompt: swap.map((i) => reqs[i].allowed),
        temperature,
      });
      swap.forEach((i, k) => {
        const s = scored.results[k];
        out[i] = {
          text: actions[k],
          promptIds: out[i].promptIds,
          responseIds: s.response_ids,
          logprobs: s.logprobs.map((x) => x ?? 0),
          entropies: s.entropies.map((x) => x ?? 0),
          tokenTexts: s.token_texts,
        };
      });
    }
    return out;
  };
}

/**
 * Plays held-out tasks (groupSize episodes each, `uid` naming each task's group) with the train
 * config's context strategy, instructions and admissible-action restriction.
 */
export function playHeldOut(
  cfg: TrainConfig,
  makeEnv: () => Env,
  generate: Generate,
  tasks: { uid: string; taskSeed: number }[],
  opts: { groupSize?: number; recordView?: boolean; signal?: AbortSignal } = {},
): Promise<RolloutGroup[]> {
  return rollout({
    makeEnv,
    tasks,
    groupSize: opts.groupSize ?? 1,
    context: cfg.context,
    instructions: cfg.instructions,
    restrictToAdmissible: cfg.restrictToAdmissible,
    recordView: opts.recordView ?? false,
    generate,
    ...(opts.signal ? { signal: opts.signal } : {}),
  });
}

/** Greedy success on the held-out instances (the generate must be greedy). */
export async function evaluate(cfg: TrainConfig, makeEnv: () => Env, generate: Generate, evalSet: { seed: number }[]): Promise<number> {
  const tasks = evalSet.map((t, i) => ({ uid: `eval-${i}`, taskSeed: t.seed }));
  const groups = await playHeldOut(cfg, makeEnv, generate, tasks);
  return groups.filter((g) => g.trajectories[0].success).length / tasks.length;
}
