// The parsed columns as the estimators' FlatBatch (columnar: `buildResult` hands back columns, not
// per-trajectory arrays). The turn fields the fast path does not read are absent on every turn.
import { anchorGroupKey, canonicalAnchorKey } from "../../lib/credit/anchor-key";
import type { FlatBatch, NumericTurnField } from "../../lib/credit/flat";
import type { Batch, Group, Turn } from "../../lib/credit/types";
import type { ParsedColumns } from "./read/columns";

export function columnsFlat(c: ParsedColumns, withComponents: boolean): FlatBatch {
  const { nTurns, nTraj, nGroups, trajTurnStart, groupTrajStart, anchors } = c;
  const perRow = <T>(byId: T[]): T[] => {
    const out: T[] = new Array(nTurns);
    for (let r = 0; r < nTurns; r++) out[r] = byId[c.anchorId[r]];
    return out;
  };
  const perId = <T>(f: (k: number) => T): T[] => Array.from({ length: anchors.count }, (_, k) => f(k));
  const cache = new Map<string, unknown>();
  const once = <T>(name: string, f: () => T): T => {
    if (!cache.has(name)) cache.set(name, f());
    return cache.get(name) as T;
  };
  const filled = (v: number) => new Float64Array(nTurns).fill(v);
  let batch: Batch | undefined;
  return {
    get batch() {
      // built only if an estimator reads the request objects (MARS' envTag, GiGPO's rowCopies)
      batch ??= materialise(c);
      return batch;
    },
    nGroups,
    nTraj,
    nTurns,
    groupTrajStart,
    trajTurnStart,
    trajGroup: c.trajGroup,
    reward: c.reward,
    get tokens() {
      return once("tokens", () => filled(1));
    },
    invalid: c.invalid,
    // made only if read (the columnar result does not: the response takes the ids' bytes)
    get trajIds() {
      return c.trajIds;
    },
    withComponents,
    columnar: true,
    numeric: (field: NumericTurnField) => once(`n:${field}`, () => filled(Number.NaN)),
    judgeScore: () => once("judge", () => filled(Number.NaN)),
    toolResult: () => once("tool", () => new Uint8Array(nTurns)),
    anchorKeys: () => once("keys", () => perRow(perId((k) => anchorGroupKey(anchors.valueOf(k))))),
    anchorTexts: () => once("texts", () => perRow(perId((k) => canonicalAnchorKey(anchors.valueOf(k))))),
    anchorIds: () => c.anchorId,
    anchorKinds: () => once("kinds", () => Uint8Array.from(c.anchorId, (k) => anchors.kind[k])),
    agentKeys: () => once("agents", () => new Array<string>(nTurns).fill("")),
    turnTraj: () => once("turnTraj", () => turnTrajectories(nTurns, nTraj, trajTurnStart)),
  };
}

function turnTrajectories(nTurns: number, nTraj: number, trajTurnStart: Int32Array): Int32Array {
  const out = new Int32Array(nTurns);
  for (let i = 0; i < nTraj; i++) out.fill(i, trajTurnStart[i], trajTurnStart[i + 1]);
  return out;
}

/** The request's turn objects, rebuilt from the columns (anchors as sent). */
function materialise(c: ParsedColumns): Batch {
  const groups: Group[] = new Array(c.nGroups);
  for (let g = 0; g < c.nGroups; g++) {
    const trajectories = [];
    for (let i = c.groupTrajStart[g]; i < c.groupTrajStart[g + 1]; i++) {
      trajectories.push({ id: c.trajIds[i], turns: turnsOf(c, i), ...c.trajExtra.get(i) });
    }
    groups[g] = { uid: c.uids[g], trajectories };
  }
  return { groups };
}

function turnsOf(c: ParsedColumns, i: number): Turn[] {
  const turns: Turn[] = [];
  for (let r = c.trajTurnStart[i]; r < c.trajTurnStart[i + 1]; r++) {
    const t: Turn = { reward: c.reward[r] };
    const k = c.anchorId[r];
    if (c.anchors.kind[k] !== 0) t.anchor = c.rowValues.get(r) ?? c.anchors.valueOf(k);
    t.invalid = c.invalid[r] === 1;
    turns.push(t);
  }
  return turns;
}
