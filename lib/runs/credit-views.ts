// Credit views over stored rollouts: a task group's advantages as a heatmap slice (stored, as used
// in training, or recomputed with any lib/credit estimator), and credit over training (training
// step x turn index, plus the batch diagnostics users debug with).
//
// Other estimators are recomputed here with lib/credit over the WHOLE step batch, because some
// estimators normalise across the batch (REINFORCE++, MAPO, MARS), so a group's values are the
// ones training would have seen. Steps are written once (lib/db/rollouts.ts), so a loaded step
// and anything computed from it are cached by step id and never go stale.
//
// Credit over training of the stored advantages reads one kept summary per step
// (lib/db/credit-summary.ts: written with the step or right after it), so it never loads a step's turns: tens of ms
// at 150 steps x 6,400 turns, where loading the 50 sampled steps took seconds.
import { runCreditWithParams, groupAnchorIds, renumberGroups, type CreditDiagnostics } from "../credit";
import { readStepSummaries, writeStepSummary } from "../db/credit-summary";
import { summarizeStep, type StepSummary } from "../schemas/step-summary";
import { loadStep as loadStepRows, groupTexts, runSteps, stepMeta, stepTexts, type LoadedStep, type StepMeta } from "../db/credit";
import { getRawDb, type RawDb } from "../db/raw";
import { NotFoundError } from "../schemas/errors";
import { renameTrainerParams } from "../schemas/step-params";
import { isStoredSource, type CreditOverview, type CreditSource, type GroupCredit } from "../schemas/credit";

/** A small least-recently-used map (steps are immutable once written, so entries never go stale). */
class Lru<K, V> {
  private map = new Map<K, V>();
  constructor(private readonly size: number) {}
  get(k: K): V | undefined {
    const v = this.map.get(k);
    if (v !== undefined) {
      this.map.delete(k);
      this.map.set(k, v);
    }
    return v;
  }
  set(k: K, v: V): void {
    this.map.delete(k);
    this.map.set(k, v);
    if (this.map.size > this.size) this.map.delete(this.map.keys().next().value as K);
  }
}

interface Recomputed {
  trajectories: Map<string, { advantages: number[]; components: Record<string, (number | string | null)[]> }>;
  diagnostics: CreditDiagnostics;
  /** the estimator's params as lib/credit parsed them (defaults filled in) */
  params: Record<string, unknown>;
}

const stepCache = new Lru<string, LoadedStep>(16);
const creditCache = new Lru<string, Recomputed>(32);
const overviewCache = new Lru<string, StepSummary>(8192);

function loadStep(meta: StepMeta, db: RawDb): LoadedStep {
  let s = stepCache.get(meta.id);
  if (!s) {
    s = loadStepRows(meta, db);
    stepCache.set(meta.id, s);
  }
  return s;
}

/** Runs lib/credit over the whole step batch (cached). Throws CreditRequestError on inputs the estimator cannot use. */
function recompute(step: LoadedStep, estimator: string, params: Record<string, unknown> | null | undefined) {
  const useTraining = (params === undefined || params === null) && estimator === step.meta.estimator;
  // a step stored in the trainer's parameter names before ingest renamed them recomputes under ours
  const renamed = step.meta.estimator && step.meta.params ? renameTrainerParams(step.meta.estimator, step.meta.params) : null;
  const trained = renamed && "params" in renamed ? renamed.params : (step.meta.params ?? {});
  const p = useTraining ? trained : (params ?? {});
  const paramsFrom: GroupCredit["paramsFrom"] = useTraining ? "training" : params ? "request" : "defaults";
  const key = `${step.meta.id}|${estimator}|${JSON.stringify(p)}`;
  let value = creditCache.get(key);
  if (!value) {
    const res = runCreditWithParams({ estimator, params: p, groups: step.batch.groups });
    value = {
      trajectories: new Map(res.response.trajectories.map((t) => [t.id, { advantages: t.advantages, components: t.components }])),
      diagnostics: res.response.diagnostics,
      params: res.params,
    };
    creditCache.set(key, value);
  }
  return { ...value, paramsFrom };
}

// ---------------------------------------------------------------- group heatmap slice

export function groupCredit(runId: string, step: number, groupId: string, source: CreditSource = {}, db: RawDb = getRawDb()): GroupCredit {
  const meta = stepMeta(runId, step, db);
  const loaded = loadStep(meta, db);
  const group = loaded.groups.find((g) => g.id === groupId);
  if (!group) throw new NotFoundError("group", `${groupId} in step ${step} of run ${runId}`);
  const base = {
    runId,
    step,
    stepId: meta.id,
    group: { id: group.id, uid: group.uid, envId: group.envId, taskSeed: group.taskSeed },
    trained: { estimator: meta.estimator, params: meta.params },
    trajectories: group.trajectories.map(({ id, index, reward, success, length, truncated }) => ({ id, index, reward, success, length, truncated })),
    rewards: [] as number[][],
    valid: [] as boolean[][],
    texts: [] as GroupCredit["texts"],
    trainedDiagnostics: meta.diagnostics,
    fieldsAll: loaded.fieldsAll,
    fieldsAny: loaded.fieldsAny,
  };
  const creditGroup = loaded.batch.groups.find((g) => g.uid === group.uid)!;
  for (const t of creditGroup.trajectories) {
    base.rewards.push(t.turns.map((u) => u.reward));
    base.valid.push(t.turns.map((u) => u.invalid !== true));
  }
  const texts = groupTexts(group.id, db);
  base.texts = group.trajectories.map((t) => texts.get(t.id) ?? []);

  const anchors = group.trajectories.map((t) => t.anchors);
  let anchorGroup = groupAnchorIds(anchors);
  let out: GroupCredit;
  if (isStoredSource(source)) {
    out = {
      ...base,
      source: "stored",
      estimator: meta.estimator,
      params: meta.params,
      paramsFrom: "stored",
      advantages: group.trajectories.map((t) => t.advantages),
      anchorGroup,
      anchorKeys: [],
      components: {},
      diagnostics: null,
      stepDiagnostics: stepSummaries(runId, [meta], source, db, loaded)[0].diag,
    };
  } else {
    const rc = recompute(loaded, source.estimator!, source.params);
    const per = group.trajectories.map((t) => rc.trajectories.get(t.id)!);
    const components: Record<string, (number | string | null)[][]> = {};
    for (const name of Object.keys(per[0]?.components ?? {})) components[name] = per.map((p) => p.components[name] ?? []);
    // An estimator that groups anchors itself (GiGPO, possibly by similarity) defines the groups shown.
    if (components.anchorGroup) anchorGroup = renumberGroups(components.anchorGroup);
    out = {
      ...base,
      source: "recomputed",
      estimator: source.estimator!,
      params: rc.params,
      paramsFrom: rc.paramsFrom,
      advantages: per.map((p) => p.advantages),
      anchorGroup,
      anchorKeys: [],
      components,
      diagnostics: rc.diagnostics,
      stepDiagnostics: stepSummaries(runId, [meta], source, db, loaded)[0].diag,
    };
  }
  const keys: string[] = [];
  anchorGroup.forEach((row, r) => {
    row.forEach((id, c) => {
      if (id !== null && keys[id] === undefined) keys[id] = (anchors[r][c] ?? "").slice(0, 160);
    });
  });
  out.anchorKeys = Array.from({ length: keys.length }, (_, i) => keys[i] ?? "");
  return out;
}

// ---------------------------------------------------------------- credit over training

/** A loaded step's summary under a source (stored or recomputed advantages). */
function summarizeLoaded(loaded: LoadedStep, source: CreditSource, db: RawDb): StepSummary {
  const rc = isStoredSource(source) ? null : recompute(loaded, source.estimator!, source.params);
  const advantages: (number | null)[][] = [];
  const entropies: (number | null)[][] = [];
  const success: boolean[] = [];
  // the texts only for the stored advantages' summary (kept); a recomputation borrows its probe (creditOverview)
  const byId = rc ? null : stepTexts(loaded.meta.id, db);
  const texts: { input: string; actions: string }[] = [];
  for (const g of loaded.groups)
    for (const t of g.trajectories) {
      advantages.push(rc ? rc.trajectories.get(t.id)!.advantages : t.advantages);
      entropies.push(t.entropies);
      success.push(t.success);
      if (byId) texts.push(byId.get(t.id) ?? { input: "", actions: "" });
    }
  return summarizeStep({
    step: loaded.meta.step,
    batch: loaded.batch,
    advantages,
    entropies,
    anchored: loaded.fieldsAll.includes("anchor"),
    diagnostics: rc?.diagnostics ?? null,
    success,
    texts: byId ? texts : null,
  });
}

/** A stored step's summary of its stored advantages, from its rows (a step whose deferred work was cut off, lib/runs/pending-steps.ts). */
export function storedStepSummary(meta: StepMeta, db: RawDb = getRawDb()): StepSummary {
  return summarizeLoaded(loadStep(meta, db), {}, db);
}

const sourceKey = (source: CreditSource) => (isStoredSource(source) ? "stored" : `${source.estimator}|${JSON.stringify(source.params ?? null)}`);

/**
 * Steps' summaries under a source, in the order given (cached; steps never change). The stored
 * advantages' summaries come from "StepCreditSummary" (one query for all steps); a step stored
 * without one is loaded, summarised and its summary kept. Recomputed sources load each step.
 */
function stepSummaries(runId: string, metas: readonly StepMeta[], source: CreditSource, db: RawDb = getRawDb(), loaded?: LoadedStep): StepSummary[] {
  const key = sourceKey(source);
  const out = metas.map((m) => overviewCache.get(`${m.id}|${key}`));
  const missing = metas.filter((_, i) => !out[i]);
  if (!missing.length) return out as StepSummary[];
  const kept = isStoredSource(source)
    ? readStepSummaries(
        missing.map((m) => m.id),
        db,
      )
    : new Map<string, StepSummary>();
  metas.forEach((m, i) => {
    if (out[i]) return;
    let s = kept.get(m.id);
    if (!s) {
      s = summarizeLoaded(loaded && loaded.meta.id === m.id ? loaded : loadStep(m, db), source, db);
      if (isStoredSource(source)) {
        try {
          writeStepSummary(runId, m.id, s, db);
        } catch {
          // a busy or read-only store: the summary is made again next time, the answer is the same
        }
      }
    }
    overviewCache.set(`${m.id}|${key}`, s);
    out[i] = s;
  });
  return out as StepSummary[];
}

/** Evenly spaced indices 0..n-1 (first and last included), at most k of them. */
export function sampleIndices(n: number, k: number): number[] {
  if (n <= k) return Array.from({ length: n }, (_, i) => i);
  if (k <= 1) return [n - 1];
  const out = new Set<number>();
  for (let i = 0; i < k; i++) out.add(Math.round((i * (n - 1)) / (k - 1)));
  return [...out];
}

export function creditOverview(
  runId: string,
  source: CreditSource = {},
  opts: { maxSteps?: number; maxTurns?: number } = {},
  db: RawDb = getRawDb(),
): CreditOverview {
  const maxSteps = opts.maxSteps ?? 50;
  const maxTurns = opts.maxTurns ?? 200;
  const all = runSteps(runId, db);
  const picked = sampleIndices(all.length, maxSteps).map((i) => all[i]);
  const summaries = stepSummaries(runId, picked, source, db);
  const stored = isStoredSource(source);
  // the template-collapse probe reads texts, not advantages: a recomputation shows the stored summary's
  const probes = stored ? summaries : stepSummaries(runId, picked, {}, db);
  const turns = Math.min(
    maxTurns,
    summaries.reduce((a, s) => Math.max(a, s.count.length), 0),
  );
  const lengths: number[] = [];
  for (let L = 1; L <= summaries.reduce((a, s) => Math.max(a, s.lenCount.length - 1), 0); L++) if (summaries.some((s) => s.lenCount[L])) lengths.push(L);
  const cell = (s: StepSummary, i: number, abs: boolean) => (s.count[i] ? (abs ? s.sumAbs[i] : s.sum[i]) / s.count[i] : null);
  return {
    runId,
    source: stored ? "stored" : "recomputed",
    estimator: stored ? (picked.find((r) => r.estimator)?.estimator ?? null) : source.estimator!,
    trainedEstimators: [...new Set(picked.map((r) => r.estimator).filter((e): e is string => !!e))],
    totalSteps: all.length,
    steps: picked.map((r) => r.step),
    turns,
    mean: summaries.map((s) => Array.from({ length: turns }, (_, i) => cell(s, i, false))),
    meanAbs: summaries.map((s) => Array.from({ length: turns }, (_, i) => cell(s, i, true))),
    count: summaries.map((s) => Array.from({ length: turns }, (_, i) => s.count[i] ?? 0)),
    entropy: summaries.some((s) => s.entCount.length)
      ? summaries.map((s) => Array.from({ length: turns }, (_, i) => (s.entCount[i] ? s.entSum[i] / s.entCount[i] : null)))
      : null,
    byLength: { lengths, mean: summaries.map((s) => lengths.map((L) => (s.lenCount[L] ? s.lenSum[L] / s.lenCount[L] : null))) },
    diagnostics: summaries.map((s, i) => ({ ...s.diag, collapseAccuracy: probes[i].diag.collapseAccuracy, collapseChance: probes[i].diag.collapseChance })),
  };
}
