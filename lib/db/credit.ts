// Credit views over stored rollouts: a task group's advantages as a heatmap slice (stored, as used
// in training, or recomputed with any lib/credit estimator), and credit over training (training
// step x turn index, plus the batch diagnostics users debug with).
//
// The database stores the estimators' inputs (rewards, anchors, validity), not every estimator's
// output (design.md): other estimators are recomputed here with lib/credit, over the WHOLE step
// batch, because some estimators normalise across the batch (REINFORCE++, MAPO, MARS), so a
// group's values are the ones training would have seen. Steps are written once
// (lib/db/rollouts.ts), so a loaded step and anything computed from it are cached by step id.
import { runCredit, flatten, getEstimator, isEstimatorId, type CreditDiagnostics, type Group, type Turn } from "../credit";
import { trajectoryScores } from "../credit/flat";
import { buildAnchorGroups } from "../credit/gigpo";
import { summarizeAdvantages } from "../credit/result";
import { anchorGroupIds, renumber } from "../charts/prepare-heatmap";
import { NotFoundError } from "./runs";
import { getRawDb, type RawDb } from "./sqlite";

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

/** Credit turn fields a trainer may put in a turn's `info` (lib/credit Turn), read for recomputation. */
export const INFO_CREDIT_FIELDS = ["value", "q1", "q2", "v2", "infoGain", "judgeScore", "segment", "toolResult", "highValue"] as const;
/** Every optional credit turn field, for the "which estimators can run on this data" check. */
const OPTIONAL_FIELDS = ["anchor", "agent", "tokens", ...INFO_CREDIT_FIELDS] as const;

export interface StepMeta {
  id: string;
  step: number;
  /** estimator whose advantages are stored on the turns (the one used in training) */
  estimator: string | null;
  params: Record<string, unknown> | null;
  diagnostics: unknown;
}

interface LoadedTrajectory {
  id: string;
  index: number;
  reward: number;
  success: boolean;
  length: number;
  truncated: boolean;
  /** stored advantages (null where the trainer stored none) */
  advantages: (number | null)[];
  anchors: (string | null)[];
}

interface LoadedGroup {
  id: string;
  uid: string;
  envId: string;
  taskSeed: number;
  trajectories: LoadedTrajectory[];
}

interface LoadedStep {
  meta: StepMeta;
  groups: LoadedGroup[];
  /** the lib/credit batch (inputs only) */
  batch: { groups: Group[] };
  /** credit turn fields present on every turn / on at least one turn */
  fieldsAll: string[];
  fieldsAny: string[];
}

const stepCache = new Lru<string, LoadedStep>(16);
const creditCache = new Lru<string, { trajectories: Map<string, { advantages: number[]; components: Record<string, (number | string | null)[]> }>; diagnostics: CreditDiagnostics; params: Record<string, unknown> }>(32);
const overviewCache = new Lru<string, StepSummary>(8192);

const parseJson = (s: unknown): unknown => (typeof s === "string" ? JSON.parse(s) : null);

export function stepMeta(runId: string, step: number, db: RawDb = getRawDb()): StepMeta {
  const r = db.prepare(`SELECT "id","step","estimator","params","diagnostics" FROM "RolloutStep" WHERE "runId" = ? AND "step" = ?`).get(runId, step) as
    | { id: string; step: number; estimator: string | null; params: string | null; diagnostics: string | null }
    | undefined;
  if (!r) throw new NotFoundError("step", `${step} of run ${runId}`);
  return { ...r, params: parseJson(r.params) as Record<string, unknown> | null, diagnostics: parseJson(r.diagnostics) };
}

/** Loads a step's credit inputs (no texts): one indexed join, ~10^4 turns in tens of ms. */
function loadStep(meta: StepMeta, db: RawDb): LoadedStep {
  const hit = stepCache.get(meta.id);
  if (hit) return hit;
  const groups = db
    .prepare(`SELECT "id","uid","envId","taskSeed" FROM "RolloutGroup" WHERE "stepId" = ? ORDER BY "uid"`)
    .all(meta.id) as { id: string; uid: string; envId: string; taskSeed: number }[];
  const trajs = db
    .prepare(
      `SELECT t."id", t."groupId", t."index", t."reward", t."success", t."length", t."truncated"
       FROM "RolloutGroup" g JOIN "Trajectory" t ON t."groupId" = g."id" WHERE g."stepId" = ? ORDER BY t."groupId", t."index"`,
    )
    .all(meta.id) as { id: string; groupId: string; index: number; reward: number; success: number; length: number; truncated: number }[];
  // Only info texts that may carry a credit field are parsed (views and other extras are skipped).
  const mayCarry = INFO_CREDIT_FIELDS.map((f) => `instr(u."info", '"${f}"') > 0`).join(" OR ");
  const turns = db
    .prepare(
      `SELECT u."trajectoryId", u."index", u."reward", u."valid", u."anchor", u."agent", u."tokenCount", u."advantage",
              CASE WHEN u."info" IS NOT NULL AND (${mayCarry}) THEN u."info" END AS "info"
       FROM "RolloutGroup" g JOIN "Trajectory" t ON t."groupId" = g."id" JOIN "Turn" u ON u."trajectoryId" = t."id"
       WHERE g."stepId" = ? ORDER BY u."trajectoryId", u."index"`,
    )
    .raw()
    .all(meta.id) as [string, number, number, number, string | null, number | null, number | null, number | null, string | null][];

  const byTraj = new Map<string, { turns: Turn[]; adv: (number | null)[]; anchors: (string | null)[] }>();
  const present = new Map<string, number>();
  for (const [tid, , reward, valid, anchor, agent, tokenCount, advantage, info] of turns) {
    let e = byTraj.get(tid);
    if (!e) byTraj.set(tid, (e = { turns: [], adv: [], anchors: [] }));
    const turn: Turn = { reward };
    const rec = turn as unknown as Record<string, unknown>;
    if (anchor !== null) turn.anchor = anchor;
    if (valid === 0) turn.invalid = true;
    if (agent !== null) turn.agent = agent;
    if (tokenCount !== null) turn.tokens = tokenCount;
    if (info !== null) {
      const x = JSON.parse(info) as Record<string, unknown>;
      for (const f of INFO_CREDIT_FIELDS) {
        const v = x[f];
        if (f === "toolResult" ? typeof v === "boolean" : typeof v === "number" || (f === "judgeScore" && v === null)) rec[f] = v;
      }
    }
    for (const f of OPTIONAL_FIELDS) if (rec[f] !== undefined) present.set(f, (present.get(f) ?? 0) + 1);
    e.turns.push(turn);
    e.adv.push(advantage);
    e.anchors.push(anchor);
  }
  const trajsOf = new Map<string, LoadedTrajectory[]>();
  const creditTrajs = new Map<string, Group["trajectories"]>();
  for (const t of trajs) {
    const e = byTraj.get(t.id);
    if (!e) continue; // a trajectory always has turns (ingest schema); guard anyway
    const lt: LoadedTrajectory = {
      id: t.id,
      index: t.index,
      reward: t.reward,
      success: t.success === 1,
      length: t.length,
      truncated: t.truncated === 1,
      advantages: e.adv,
      anchors: e.anchors,
    };
    (trajsOf.get(t.groupId) ?? trajsOf.set(t.groupId, []).get(t.groupId)!).push(lt);
    const ct = { id: t.id, turns: e.turns, ...(t.truncated === 1 ? { truncated: true } : {}) };
    (creditTrajs.get(t.groupId) ?? creditTrajs.set(t.groupId, []).get(t.groupId)!).push(ct);
  }
  const loadedGroups: LoadedGroup[] = groups.map((g) => ({ ...g, trajectories: trajsOf.get(g.id) ?? [] })).filter((g) => g.trajectories.length > 0);
  const batch = {
    groups: loadedGroups.map((g) => ({ uid: g.uid, trajectories: creditTrajs.get(g.id)!.map((t) => ({ ...t, envTag: g.envId })) })),
  };
  const n = turns.length;
  const loaded: LoadedStep = {
    meta,
    groups: loadedGroups,
    batch,
    fieldsAll: OPTIONAL_FIELDS.filter((f) => n > 0 && present.get(f) === n),
    fieldsAny: OPTIONAL_FIELDS.filter((f) => (present.get(f) ?? 0) > 0),
  };
  stepCache.set(meta.id, loaded);
  return loaded;
}

export interface CreditSource {
  /** an estimator id to recompute with; null/undefined = the advantages stored on the turns */
  estimator?: string | null;
  /** its parameters; omitted = the step's training params when it is the training estimator, else the defaults */
  params?: Record<string, unknown> | null;
}

const isStored = (s: CreditSource) => !s.estimator || s.estimator === "stored";

/** Runs lib/credit over the whole step batch (cached). Throws CreditRequestError on inputs the estimator cannot use. */
function recompute(step: LoadedStep, estimator: string, params: Record<string, unknown> | null | undefined) {
  const useTraining = (params === undefined || params === null) && estimator === step.meta.estimator;
  const p = useTraining ? (step.meta.params ?? {}) : (params ?? {});
  const key = `${step.meta.id}|${estimator}|${JSON.stringify(p)}`;
  const hit = creditCache.get(key);
  if (hit) return { ...hit, paramsFrom: useTraining ? "training" : params ? "request" : "defaults" };
  const res = runCredit({ estimator, params: p, groups: step.batch.groups });
  const parsed = isEstimatorId(estimator) ? (getEstimator(estimator).paramsSchema.parse(p) as Record<string, unknown>) : p;
  const value = {
    trajectories: new Map(res.trajectories.map((t) => [t.id, { advantages: t.advantages, components: t.components }])),
    diagnostics: res.diagnostics,
    params: parsed,
  };
  creditCache.set(key, value);
  return { ...value, paramsFrom: useTraining ? "training" : params ? "request" : "defaults" };
}

// ---------------------------------------------------------------- group heatmap slice

export interface TurnText {
  /** observation excerpt: the whole text when short, else its start and end */
  observation: string;
  /** action excerpt (first 400 characters) */
  action: string;
  /** full lengths, to say when an excerpt is cut */
  observationLength: number;
  actionLength: number;
}

export interface GroupCredit {
  runId: string;
  step: number;
  stepId: string;
  group: { id: string; uid: string; envId: string; taskSeed: number };
  /** the estimator and params stored with the step (used in training) */
  trained: { estimator: string | null; params: Record<string, unknown> | null };
  source: "stored" | "recomputed";
  /** the estimator whose values are shown (the trained one for stored values) */
  estimator: string | null;
  /** parsed params with defaults (recomputed), or the stored training params */
  params: Record<string, unknown> | null;
  paramsFrom: "training" | "request" | "defaults" | "stored";
  trajectories: { id: string; index: number; reward: number; success: boolean; length: number; truncated: boolean }[];
  /** trajectory x turn */
  advantages: (number | null)[][];
  rewards: number[][];
  valid: boolean[][];
  /** anchor-group id of each turn within this task group (null = no anchor); from the estimator when it groups anchors itself */
  anchorGroup: (number | null)[][];
  /** anchor text of each anchor-group id (first 160 characters) */
  anchorKeys: string[];
  /** the estimator's per-turn components (recomputed only), trajectory x turn */
  components: Record<string, (number | string | null)[][]>;
  texts: TurnText[][];
  /** lib/credit's batch diagnostics of the recomputation (whole step), or null for stored values */
  diagnostics: CreditDiagnostics | null;
  /** the step's batch statistics of the shown advantages (stored or recomputed), as in credit over training */
  stepDiagnostics: StepDiagnostics;
  /** what the trainer logged with the step */
  trainedDiagnostics: unknown;
  /** credit turn fields present on every turn / on some turn of the step (which estimators can run) */
  fieldsAll: string[];
  fieldsAny: string[];
}

function groupTexts(groupId: string, db: RawDb): Map<string, TurnText[]> {
  const rows = db
    .prepare(
      `SELECT u."trajectoryId",
              CASE WHEN length(u."observation") > 700 THEN substr(u."observation", 1, 200) || char(10) || '…' || char(10) || substr(u."observation", -450) ELSE u."observation" END,
              substr(u."action", 1, 400), length(u."observation"), length(u."action")
       FROM "Trajectory" t JOIN "Turn" u ON u."trajectoryId" = t."id" WHERE t."groupId" = ? ORDER BY t."index", u."index"`,
    )
    .raw()
    .all(groupId) as [string, string, string, number, number][];
  const out = new Map<string, TurnText[]>();
  for (const [tid, observation, action, observationLength, actionLength] of rows)
    (out.get(tid) ?? out.set(tid, []).get(tid)!).push({ observation, action, observationLength, actionLength });
  return out;
}

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
    texts: [] as TurnText[][],
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
  let anchorGroup = anchorGroupIds(anchors);
  let out: GroupCredit;
  if (isStored(source)) {
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
      stepDiagnostics: undefined as unknown as StepDiagnostics,
    };
  } else {
    const rc = recompute(loaded, source.estimator!, source.params);
    const per = group.trajectories.map((t) => rc.trajectories.get(t.id)!);
    const components: Record<string, (number | string | null)[][]> = {};
    for (const name of Object.keys(per[0]?.components ?? {})) components[name] = per.map((p) => p.components[name] ?? []);
    // An estimator that groups anchors itself (GiGPO, possibly by similarity) defines the groups shown.
    if (components.anchorGroup) anchorGroup = renumber(components.anchorGroup);
    out = {
      ...base,
      source: "recomputed",
      estimator: source.estimator!,
      params: rc.params,
      paramsFrom: rc.paramsFrom as GroupCredit["paramsFrom"],
      advantages: per.map((p) => p.advantages),
      anchorGroup,
      anchorKeys: [],
      components,
      diagnostics: rc.diagnostics,
      stepDiagnostics: undefined as unknown as StepDiagnostics,
    };
  }
  out.stepDiagnostics = stepSummary(loaded, source).diag;
  const keys: string[] = [];
  anchorGroup.forEach((row, r) =>
    row.forEach((id, c) => {
      if (id !== null && keys[id] === undefined) keys[id] = (anchors[r][c] ?? "").slice(0, 160);
    }),
  );
  out.anchorKeys = Array.from({ length: keys.length }, (_, i) => keys[i] ?? "");
  return out;
}

// ---------------------------------------------------------------- credit over training

export interface StepDiagnostics {
  step: number;
  turns: number;
  trajectories: number;
  /** advantages over all turns of the batch (turns without a stored advantage are left out) */
  advMean: number | null;
  advStd: number | null;
  advMeanAbs: number | null;
  nonZeroShare: number | null;
  /** among task groups with 2+ trajectories, the share whose scores are all equal ("advantage collapse") */
  zeroVarianceShare: number | null;
  /** GiGPO anchor groups: share with one member (null when turns carry no anchors) */
  singletonRatio: number | null;
  meanAnchorGroupSize: number | null;
}

interface StepSummary {
  sum: number[];
  sumAbs: number[];
  count: number[];
  diag: StepDiagnostics;
}

export interface CreditOverview {
  runId: string;
  source: "stored" | "recomputed";
  estimator: string | null;
  /** training estimator per shown step is in `trainedEstimators` (usually one) */
  trainedEstimators: string[];
  totalSteps: number;
  /** the steps shown (all, or evenly sampled down to maxSteps), ascending */
  steps: number[];
  /** turn-index columns */
  turns: number;
  /** step x turn index: mean and mean absolute advantage, count of turns at that index */
  mean: (number | null)[][];
  meanAbs: (number | null)[][];
  count: number[][];
  diagnostics: StepDiagnostics[];
}

/** Zero-variance share and anchor-group facts of a batch, from lib/credit's own building blocks. */
function batchFacts(batch: { groups: Group[] }, anchored: boolean): Pick<StepDiagnostics, "zeroVarianceShare" | "singletonRatio" | "meanAnchorGroupSize"> {
  const flat = flatten(batch);
  const scores = trajectoryScores(flat);
  let multi = 0;
  let zero = 0;
  for (let g = 0; g < flat.nGroups; g++) {
    const a = flat.groupTrajStart[g];
    const b = flat.groupTrajStart[g + 1];
    if (b - a < 2) continue;
    multi++;
    let same = true;
    for (let i = a + 1; i < b; i++) if (scores[i] !== scores[a]) same = false;
    if (same) zero++;
  }
  let singletonRatio: number | null = null;
  let meanAnchorGroupSize: number | null = null;
  if (anchored && flat.nTurns > 0) {
    const ag = buildAnchorGroups(flat, flat.anchorKeys());
    const size = new Int32Array(ag.count);
    for (let r = 0; r < flat.nTurns; r++) size[ag.groupOf[r]]++;
    let singles = 0;
    for (let k = 0; k < ag.count; k++) if (size[k] === 1) singles++;
    singletonRatio = ag.count ? singles / ag.count : null;
    meanAnchorGroupSize = ag.count ? flat.nTurns / ag.count : null;
  }
  return { zeroVarianceShare: multi ? zero / multi : null, singletonRatio, meanAnchorGroupSize };
}

function summarizeStep(loaded: LoadedStep, source: CreditSource): StepSummary {
  const sum: number[] = [];
  const sumAbs: number[] = [];
  const count: number[] = [];
  const all: number[] = [];
  let turns = 0;
  let trajectories = 0;
  let diag: CreditDiagnostics | null = null;
  const rc = isStored(source) ? null : recompute(loaded, source.estimator!, source.params);
  if (rc) diag = rc.diagnostics;
  for (const g of loaded.groups)
    for (const t of g.trajectories) {
      trajectories++;
      const adv = rc ? rc.trajectories.get(t.id)!.advantages : t.advantages;
      turns += adv.length;
      adv.forEach((v, i) => {
        if (v === null || !Number.isFinite(v)) return;
        sum[i] = (sum[i] ?? 0) + v;
        sumAbs[i] = (sumAbs[i] ?? 0) + Math.abs(v);
        count[i] = (count[i] ?? 0) + 1;
        all.push(v);
      });
    }
  const s = all.length ? summarizeAdvantages(all) : null;
  const facts = batchFacts(loaded.batch, loaded.fieldsAll.includes("anchor"));
  return {
    sum,
    sumAbs,
    count,
    diag: {
      step: loaded.meta.step,
      turns,
      trajectories,
      advMean: s ? s.mean : null,
      advStd: s ? s.std : null,
      advMeanAbs: all.length ? all.reduce((a, v) => a + Math.abs(v), 0) / all.length : null,
      nonZeroShare: s ? s.nonZeroShare : null,
      zeroVarianceShare: diag?.groups.zeroVarianceShare ?? facts.zeroVarianceShare,
      // an estimator that builds its own anchor groups (GiGPO similarity mode) reports them
      singletonRatio: diag?.anchorGroups?.singletonRatio ?? facts.singletonRatio,
      meanAnchorGroupSize: facts.meanAnchorGroupSize,
    },
  };
}

/** A step's summary under a source, cached (steps never change). Loads the step only on a miss. */
function stepSummary(step: StepMeta | LoadedStep, source: CreditSource, db: RawDb = getRawDb()): StepSummary {
  const meta = "meta" in step ? step.meta : step;
  const key = `${meta.id}|${isStored(source) ? "stored" : `${source.estimator}|${JSON.stringify(source.params ?? null)}`}`;
  let s = overviewCache.get(key);
  if (!s) {
    s = summarizeStep("meta" in step ? step : loadStep(meta, db), source);
    overviewCache.set(key, s);
  }
  return s;
}

/** Evenly spaced indices 0..n-1 (first and last included), at most k of them. */
export function sampleIndices(n: number, k: number): number[] {
  if (n <= k) return Array.from({ length: n }, (_, i) => i);
  if (k <= 1) return [n - 1];
  const out = new Set<number>();
  for (let i = 0; i < k; i++) out.add(Math.round((i * (n - 1)) / (k - 1)));
  return [...out];
}

export function creditOverview(runId: string, source: CreditSource = {}, opts: { maxSteps?: number; maxTurns?: number } = {}, db: RawDb = getRawDb()): CreditOverview {
  const maxSteps = opts.maxSteps ?? 50;
  const maxTurns = opts.maxTurns ?? 200;
  const rows = db.prepare(`SELECT "id","step","estimator","params","diagnostics" FROM "RolloutStep" WHERE "runId" = ? ORDER BY "step"`).all(runId) as {
    id: string;
    step: number;
    estimator: string | null;
    params: string | null;
    diagnostics: string | null;
  }[];
  const picked = sampleIndices(rows.length, maxSteps).map((i) => rows[i]);
  const summaries: StepSummary[] = [];
  for (const r of picked) {
    const meta: StepMeta = { id: r.id, step: r.step, estimator: r.estimator, params: parseJson(r.params) as Record<string, unknown> | null, diagnostics: null };
    summaries.push(stepSummary(meta, source, db));
  }
  const turns = Math.min(maxTurns, summaries.reduce((a, s) => Math.max(a, s.count.length), 0));
  const cell = (s: StepSummary, i: number, abs: boolean) => (s.count[i] ? (abs ? s.sumAbs[i] : s.sum[i]) / s.count[i] : null);
  return {
    runId,
    source: isStored(source) ? "stored" : "recomputed",
    estimator: isStored(source) ? (picked.find((r) => r.estimator)?.estimator ?? null) : source.estimator!,
    trainedEstimators: [...new Set(picked.map((r) => r.estimator).filter((e): e is string => !!e))],
    totalSteps: rows.length,
    steps: picked.map((r) => r.step),
    turns,
    mean: summaries.map((s) => Array.from({ length: turns }, (_, i) => cell(s, i, false))),
    meanAbs: summaries.map((s) => Array.from({ length: turns }, (_, i) => cell(s, i, true))),
    count: summaries.map((s) => Array.from({ length: turns }, (_, i) => s.count[i] ?? 0)),
    diagnostics: summaries.map((s) => s.diag),
  };
}
