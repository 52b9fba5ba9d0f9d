// Credit views' SQL: a step's credit inputs (rewards, anchors, validity, stored advantages) as
// lib/credit batches, a group's turn texts, a run's steps. No caching and no computing: the
// recompute, caches and response shapes are lib/runs/credit-views.ts.
//
// The database stores the estimators' inputs (rewards, anchors, validity), not every estimator's
// output; the service recomputes other estimators from what this loads.
import type { Group, Turn } from "../credit";
import { INFO_CREDIT_FIELDS, type TurnText } from "../schemas/credit";
import { NotFoundError } from "../schemas/errors";
import { trajectoryTexts } from "../schemas/step-summary";
import { storedCreditTurn, storedTurnEntropy } from "../schemas/turn-columns";
import { getRawDb, type RawDb } from "./raw";
import { decodeTokenData } from "./token-data";
import { unpackTurnColumns, unpackTurnTokens } from "./trajectory-pack";
import { readTurnTexts } from "./trajectory-texts";

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

export interface LoadedTrajectory {
  id: string;
  index: number;
  reward: number;
  success: boolean;
  length: number;
  truncated: boolean;
  /** stored advantages (null where the trainer stored none) */
  advantages: (number | null)[];
  anchors: (string | null)[];
  /** entropy of the policy per turn: the stored one, else the mean of its stored token entropies (null where neither was stored) */
  entropies: (number | null)[];
}

export interface LoadedGroup {
  id: string;
  uid: string;
  envId: string;
  taskSeed: number;
  trajectories: LoadedTrajectory[];
}

export interface LoadedStep {
  meta: StepMeta;
  groups: LoadedGroup[];
  /** the lib/credit batch (inputs only) */
  batch: { groups: Group[] };
  /** credit turn fields present on every turn / on at least one turn */
  fieldsAll: string[];
  fieldsAny: string[];
}

const parseJson = (s: unknown): unknown => (typeof s === "string" ? JSON.parse(s) : null);

export function stepMeta(runId: string, step: number, db: RawDb = getRawDb()): StepMeta {
  const r = db.prepare(`SELECT "id","step","estimator","params","diagnostics" FROM "RolloutStep" WHERE "runId" = ? AND "step" = ?`).get(runId, step) as
    | { id: string; step: number; estimator: string | null; params: string | null; diagnostics: string | null }
    | undefined;
  if (!r) throw new NotFoundError("step", `${step} of run ${runId}`);
  return { ...r, params: parseJson(r.params) as Record<string, unknown> | null, diagnostics: parseJson(r.diagnostics) };
}

/** Loads a step's credit inputs (no texts): one indexed join, ~10^4 turns in tens of ms. */
export function loadStep(meta: StepMeta, db: RawDb = getRawDb()): LoadedStep {
  const groups = db.prepare(`SELECT "id","uid","envId","taskSeed" FROM "RolloutGroup" WHERE "stepId" = ? ORDER BY "uid"`).all(meta.id) as {
    id: string;
    uid: string;
    envId: string;
    taskSeed: number;
  }[];
  // A trajectory's credit columns only (lib/db/trajectory-pack.ts): no texts, no tokens, unless a
  // trajectory migrated from per-turn rows needs its token entropies for turn entropy.
  const trajs = db
    .prepare(
      `SELECT t."id", t."groupId", t."index", t."reward", t."success", t."length", t."truncated", t."turnData"
       FROM "RolloutGroup" g JOIN "Trajectory" t ON t."groupId" = g."id" WHERE g."stepId" = ? ORDER BY t."groupId", t."index"`,
    )
    .all(meta.id) as { id: string; groupId: string; index: number; reward: number; success: number; length: number; truncated: number; turnData: Uint8Array }[];
  const tokensOf = (id: string, length: number) =>
    unpackTurnTokens(db.prepare(`SELECT "turnTokens" FROM "Trajectory" WHERE "id" = ?`).pluck().get(id) as Uint8Array | null, length);

  const present = new Map<string, number>();
  let n = 0;
  const trajsOf = new Map<string, LoadedTrajectory[]>();
  const creditTrajs = new Map<string, Group["trajectories"]>();
  for (const t of trajs) {
    const c = unpackTurnColumns(t.turnData);
    const tokens = c.tokenEntropy || c.entropy?.every((h) => h !== null) ? null : tokensOf(t.id, t.length);
    const turns: Turn[] = [];
    const advantages: (number | null)[] = [];
    const anchors: (string | null)[] = [];
    const entropies: (number | null)[] = [];
    for (let i = 0; i < t.length; i++) {
      const turn = storedCreditTurn(c, i);
      const rec = turn as unknown as Record<string, unknown>;
      for (const f of OPTIONAL_FIELDS) if (rec[f] !== undefined) present.set(f, (present.get(f) ?? 0) + 1);
      turns.push(turn);
      advantages.push(c.advantage?.[i] ?? null);
      anchors.push(c.anchor?.[i] ?? null);
      const tok = tokens?.[i];
      entropies.push(storedTurnEntropy(c, i, tok ? tokenEntropies(tok) : null));
      n++;
    }
    const lt: LoadedTrajectory = {
      id: t.id,
      index: t.index,
      reward: t.reward,
      success: t.success === 1,
      length: t.length,
      truncated: t.truncated === 1,
      advantages,
      anchors,
      entropies,
    };
    (trajsOf.get(t.groupId) ?? trajsOf.set(t.groupId, []).get(t.groupId)!).push(lt);
    const ct = { id: t.id, turns, ...(t.truncated === 1 ? { truncated: true } : {}) };
    (creditTrajs.get(t.groupId) ?? creditTrajs.set(t.groupId, []).get(t.groupId)!).push(ct);
  }
  const loadedGroups: LoadedGroup[] = groups.map((g) => ({ ...g, trajectories: trajsOf.get(g.id) ?? [] })).filter((g) => g.trajectories.length > 0);
  const batch = {
    groups: loadedGroups.map((g) => ({ uid: g.uid, trajectories: creditTrajs.get(g.id)!.map((t) => ({ ...t, envTag: g.envId })) })),
  };
  const loaded: LoadedStep = {
    meta,
    groups: loadedGroups,
    batch,
    fieldsAll: OPTIONAL_FIELDS.filter((f) => n > 0 && present.get(f) === n),
    fieldsAny: OPTIONAL_FIELDS.filter((f) => (present.get(f) ?? 0) > 0),
  };
  return loaded;
}

/** A turn's stored token entropies (null without any, or when the BLOB cannot be read). */
function tokenEntropies(blob: Uint8Array): ArrayLike<number> | null {
  try {
    return decodeTokenData(blob).entropies;
  } catch {
    return null;
  }
}

/**
 * Excerpt sizes of a group's turn texts: the start of each, what a side-by-side cell shows. An 8 x 50
 * group of 1-2 KB observations ships 400 of them with every group view; a trajectory's whole texts
 * come with the trajectory, loaded when it is opened or hovered.
 */
const EXCERPT_OBSERVATION = 120;
const EXCERPT_ACTION = 160;

export function groupTexts(groupId: string, db: RawDb = getRawDb()): Map<string, TurnText[]> {
  const rows = db.prepare(`SELECT "id", "turnTexts" FROM "Trajectory" WHERE "groupId" = ? ORDER BY "index"`).all(groupId) as {
    id: string;
    turnTexts: Uint8Array;
  }[];
  const texts = readTurnTexts(rows, db);
  const out = new Map<string, TurnText[]>();
  for (let r = 0; r < rows.length; r++) {
    const tid = rows[r].id;
    const { observation, action } = texts[r];
    out.set(
      tid,
      observation.map((o, i) => ({
        observation: o.slice(0, EXCERPT_OBSERVATION),
        action: action[i].slice(0, EXCERPT_ACTION),
        observationLength: o.length,
        actionLength: action[i].length,
      })),
    );
  }
  return out;
}

/** Per trajectory of a step, by id: what the template-collapse probe reads (its first observation and its actions). */
export function stepTexts(stepId: string, db: RawDb = getRawDb()): Map<string, { input: string; actions: string }> {
  const rows = db
    .prepare(`SELECT t."id", t."turnTexts" FROM "RolloutGroup" g JOIN "Trajectory" t ON t."groupId" = g."id" WHERE g."stepId" = ?`)
    .all(stepId) as { id: string; turnTexts: Uint8Array }[];
  const texts = readTurnTexts(rows, db);
  const out = new Map<string, { input: string; actions: string }>();
  for (let r = 0; r < rows.length; r++) {
    const id = rows[r].id;
    const x = texts[r];
    out.set(id, trajectoryTexts((x.observation ?? []).map((o, i) => ({ observation: o, action: x.action?.[i] ?? "" }))));
  }
  return out;
}

/** A run's steps in order (what credit over training samples from). */
export function runSteps(runId: string, db: RawDb = getRawDb()): StepMeta[] {
  const rows = db.prepare(`SELECT "id","step","estimator","params" FROM "RolloutStep" WHERE "runId" = ? ORDER BY "step"`).all(runId) as {
    id: string;
    step: number;
    estimator: string | null;
    params: string | null;
  }[];
  return rows.map((r) => ({ ...r, params: parseJson(r.params) as Record<string, unknown> | null, diagnostics: null }));
}
