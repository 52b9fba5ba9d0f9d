// Held-out evaluation that training can never see. Seeds alone are not enough: two seeds can
// generate the same map (200 seeds of 4x4 FrozenLake give only 153 distinct maps), so a
// training seed and an evaluation seed may still share an instance. Here the evaluation set is
// a fixed list of distinct instances (by instanceKey) drawn from evaluation seeds, and training
// seeds whose instance is in it are redrawn, deterministically, so a resumed run replays the
// same tasks.
import { canonicalJson } from "../credit/anchor-key";
import type { AnchorValue } from "../credit/types";
import { createEnv, getEnvSpec } from "./registry";
import { mixSeed } from "./rng";
import type { Env } from "./types";

/** Evaluation seeds are 2^30 + i; training seeds are drawn below 2^30. */
export const EVAL_SEED_BASE = 2 ** 30;
/** Distinct instances every (environment, config) holds out at least, whatever one evaluation asks for. */
export const HELD_OUT_RESERVE = 1000;

export interface HeldOutSet {
  envId: string;
  /** Evaluation seeds, one per distinct instance, in draw order (evaluations take a prefix). */
  seeds: number[];
  /** Their instance keys, parallel to seeds. */
  keys: string[];
  /** keys as a set: what training must never draw. Empty when disjoint is false. */
  reserved: Set<string>;
  /**
   * False only when the config has fewer than 2 distinct instances (e.g. tic-tac-toe without
   * random openings): nothing can be held out, training is not filtered, and the overlap
   * each evaluation reports is the truth (all of it).
   */
  disjoint: boolean;
  /** Distinct instances seen while scanning evaluation seeds. */
  distinctSeen: number;
  /** Evaluation seeds scanned. */
  scanned: number;
}

/** The instance key of one seed (resets env). */
export function instanceKeyOf(env: Env, seed: number): string {
  env.reset(seed);
  return env.instanceKey();
}

const cache = new Map<string, HeldOutSet>();

/**
 * The held-out set of an (environment, config): the first max(HELD_OUT_RESERVE, atLeast)
 * distinct instances of the evaluation seeds 2^30, 2^30 + 1, ..., or half of the instance
 * space where that is smaller, so training keeps the other half.
 */
export function heldOutSet(envId: string, config: unknown, atLeast = 0): HeldOutSet {
  const spec = getEnvSpec(envId);
  const parsed = spec.configSchema.parse(config ?? {}) as AnchorValue;
  const want = Math.max(HELD_OUT_RESERVE, atLeast);
  const cacheKey = `${envId}|${canonicalJson(parsed)}|${want}`;
  const hit = cache.get(cacheKey);
  if (hit) return hit;
  const env = createEnv(envId, parsed);
  const seeds: number[] = [];
  const keys: string[] = [];
  const seen = new Set<string>();
  // A space with at least `want` instances yields them within a few multiples of `want` seeds.
  const scanLimit = 5 * want + 1000;
  let scanned = 0;
  for (; scanned < scanLimit && seeds.length < want; scanned++) {
    const seed = EVAL_SEED_BASE + scanned;
    const key = instanceKeyOf(env, seed);
    if (seen.has(key)) continue;
    seen.add(key);
    seeds.push(seed);
    keys.push(key);
  }
  const distinctSeen = seeds.length;
  // Hold out at most half of the space, so training keeps the other half: a small space
  // exhausted by the scan (kuhnpoker's 6 deals), or one the repeats show to be small
  // (countdown's ~1,350 puzzles would otherwise lose 1,000 of them to evaluation).
  const space = distinctSeen < want ? distinctSeen : (estimateSpace(scanned, distinctSeen) ?? Infinity);
  const keep = Math.min(distinctSeen, Math.floor(space / 2));
  const set: HeldOutSet =
    keep >= 1
      ? { envId, seeds: seeds.slice(0, keep), keys: keys.slice(0, keep), reserved: new Set(keys.slice(0, keep)), disjoint: true, distinctSeen, scanned }
      : { envId, seeds, keys, reserved: new Set(), disjoint: false, distinctSeen, scanned };
  if (cache.size > 64) cache.clear();
  cache.set(cacheKey, set);
  return set;
}

/** The first n evaluation tasks of a held-out set (fewer when the instance space is small). */
export function evalTasks(set: HeldOutSet, n: number): { seed: number; key: string }[] {
  return set.seeds.slice(0, n).map((seed, i) => ({ seed, key: set.keys[i] }));
}

/** Most redraws of one training task before giving up (a bug or a config with no instance left). */
const MAX_REDRAWS = 10_000;

/**
 * The training task of (run seed, step, slot g): the seed the training job always drew
 * (mixSeed(seed, "train", step, g) mod 2^30), redrawn with an attempt counter while its
 * instance is held out. Deterministic, so a resumed run draws the same tasks.
 */
export function trainTask(env: Env, heldOut: HeldOutSet, seed: number, step: number, g: number): { seed: number; key: string } {
  for (let attempt = 0; attempt < MAX_REDRAWS; attempt++) {
    const s = (attempt === 0 ? mixSeed(seed, "train", step, g) : mixSeed(seed, "train", step, g, attempt)) % EVAL_SEED_BASE;
    const key = instanceKeyOf(env, s);
    if (!heldOut.reserved.has(key)) return { seed: s, key };
  }
  throw new Error(
    `${heldOut.envId}: every training draw for step ${step}, task ${g} is a held-out instance; the config has too few distinct instances (${heldOut.distinctSeen} seen)`,
  );
}

/** Instance keys of every task a run of `steps` x `groupsPerStep` tasks trains on. */
export function trainingInstances(envId: string, config: unknown, heldOut: HeldOutSet, seed: number, steps: number, groupsPerStep: number): Set<string> {
  const env = createEnv(envId, config);
  const out = new Set<string>();
  for (let step = 0; step < steps; step++) for (let g = 0; g < groupsPerStep; g++) out.add(trainTask(env, heldOut, seed, step, g).key);
  return out;
}

/** How many of the evaluated instances training saw (must be 0 whenever the held-out set is disjoint). */
export function overlapCount(evalKeys: readonly string[], trainKeys: ReadonlySet<string>): number {
  return evalKeys.reduce((n, k) => n + (trainKeys.has(k) ? 1 : 0), 0);
}

/**
 * Distinct instances among `samples` seeds (0, 1, ...), and an estimate of the instance space:
 * the N for which `samples` uniform draws from N instances give `distinct` distinct ones on
 * average, N (1 - e^(-samples/N)) = distinct (for skewed generators, an effective size, a lower
 * bound on the true count). Null when every draw was new: the space is then larger than about
 * samples^2 / 2.
 */
export function sampleInstances(envId: string, config: unknown, samples: number): { distinct: number; estimate: number | null; seconds: number } {
  const env = createEnv(envId, config);
  const seen = new Set<string>();
  const t0 = performance.now();
  for (let s = 0; s < samples; s++) seen.add(instanceKeyOf(env, s));
  const seconds = (performance.now() - t0) / 1000;
  return { distinct: seen.size, estimate: estimateSpace(samples, seen.size), seconds };
}

/** The N with N (1 - e^(-draws/N)) = distinct (uniform draws); null when every draw was new. */
export function estimateSpace(draws: number, distinct: number): number | null {
  if (distinct >= draws) return null;
  // f(N) = N (1 - e^(-draws/N)) grows with N from ~0 to draws: bisect on a log scale.
  let lo = distinct;
  let hi = distinct * 1e9;
  for (let i = 0; i < 200; i++) {
    const mid = Math.sqrt(lo * hi);
    if (mid * -Math.expm1(-draws / mid) < distinct) lo = mid;
    else hi = mid;
  }
  return Math.round(hi);
}
