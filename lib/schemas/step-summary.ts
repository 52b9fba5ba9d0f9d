// A step's credit summary: what credit over training draws of one step (per turn index: sum, sum
// of |A| and count of the advantages, sum and count of the turn entropies; the step's batch
// diagnostics), and a turn's entropy. The one computation of each: ingest summarises a step it is
// about to store (summarizeStepInput), the credit views summarise stored or recomputed advantages
// (summarizeStep); lib/db/credit-summary.ts only keeps the result.
import { buildAnchorGroups, flatten, type CreditDiagnostics, type Group } from "../credit";
import { trajectoryScores } from "../credit/flat";
import { summarizeAdvantages } from "../credit/result";
import { outcomeShares, templateCollapse, withinGroupVariance } from "../credit/batch-diagnostics";
import { creditTurn, type StepDiagnostics } from "./credit";
import { tokenValues, type RolloutStepInput } from "./rollouts";
import { quantiles } from "./alerts";

export interface StepSummary {
  /** per turn index (dense, 0 where nothing was counted) */
  sum: number[];
  sumAbs: number[];
  count: number[];
  /** turn entropy per turn index: sum and count */
  entSum: number[];
  entCount: number[];
  /** advantages by the length of their episode (index = turns in the trajectory): sum and count */
  lenSum: number[];
  lenCount: number[];
  diag: StepDiagnostics;
  /** the advantages' quantiles at QUANTILE_LEVELS (lib/schemas/alerts.ts: the drift monitor); absent in summaries kept before it */
  advQuantiles?: number[] | null;
}

export interface SummaryInput {
  step: number;
  /** the lib/credit batch (inputs only) */
  batch: { groups: Group[] };
  /** per trajectory of the batch, in its order: the advantages to summarise and the turn entropies */
  advantages: readonly (readonly (number | null)[])[];
  entropies: readonly (readonly (number | null)[])[];
  /** every turn of the step has an anchor (GiGPO's anchor-group facts apply) */
  anchored: boolean;
  /** lib/credit's diagnostics of a recomputation (null for stored advantages) */
  diagnostics?: CreditDiagnostics | null;
  /** per trajectory, in batch order: its success (outcome shares need it) */
  success?: readonly boolean[];
  /** per trajectory, in batch order: its first observation and its actions (the template-collapse probe) */
  texts?: readonly { input: string; actions: string }[] | null;
}

/** A turn's entropy: the stored one, else the mean of its tokens' entropies where the trainer sent them. */
export function turnEntropy(entropy: number | null | undefined, tokenEntropies: ArrayLike<number> | null | undefined): number | null {
  if (entropy !== null && entropy !== undefined) return entropy;
  if (!tokenEntropies || tokenEntropies.length === 0) return null;
  let s = 0;
  for (let i = 0; i < tokenEntropies.length; i++) s += tokenEntropies[i];
  return s / tokenEntropies.length;
}

/** An ingest turn's entropy: its own, else its token entropies' mean (read, maybe from packed float32 base64, only then). */
export function inputTurnEntropy(u: { entropy?: number | null; tokenEntropies?: Parameters<typeof tokenValues>[0] }): number | null {
  return u.entropy !== null && u.entropy !== undefined ? u.entropy : turnEntropy(null, tokenValues(u.tokenEntropies));
}

/** Zero-variance share and anchor-group facts of a batch, from lib/credit's own building blocks. */
function batchFacts(
  batch: { groups: Group[] },
  anchored: boolean,
): Pick<StepDiagnostics, "zeroVarianceShare" | "singletonRatio" | "meanAnchorGroupSize" | "rewardVariance"> {
  const flat = flatten(batch);
  const scores = trajectoryScores(flat);
  let multi = 0;
  let zero = 0;
  const groupScores: number[][] = [];
  for (let g = 0; g < flat.nGroups; g++) {
    const a = flat.groupTrajStart[g];
    const b = flat.groupTrajStart[g + 1];
    groupScores.push(Array.from(scores.subarray(a, b)));
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
  return { zeroVarianceShare: multi ? zero / multi : null, singletonRatio, meanAnchorGroupSize, rewardVariance: withinGroupVariance(groupScores) };
}

export function summarizeStep(input: SummaryInput): StepSummary {
  const sum: number[] = [];
  const sumAbs: number[] = [];
  const count: number[] = [];
  const entSum: number[] = [];
  const entCount: number[] = [];
  const grow = (a: number[], n: number) => {
    while (a.length < n) a.push(0);
  };
  const all: number[] = [];
  const lenSum: number[] = [];
  const lenCount: number[] = [];
  let turns = 0;
  for (const adv of input.advantages) {
    turns += adv.length;
    grow(lenSum, adv.length + 1);
    grow(lenCount, adv.length + 1);
    grow(sum, adv.length);
    grow(sumAbs, adv.length);
    grow(count, adv.length);
    adv.forEach((v, i) => {
      if (v === null || !Number.isFinite(v)) return;
      sum[i] += v;
      sumAbs[i] += Math.abs(v);
      count[i] += 1;
      lenSum[adv.length] += v;
      lenCount[adv.length] += 1;
      all.push(v);
    });
  }
  for (const ent of input.entropies) {
    ent.forEach((h, i) => {
      if (h === null || !Number.isFinite(h)) return;
      grow(entSum, i + 1);
      grow(entCount, i + 1);
      entSum[i] += h;
      entCount[i] += 1;
    });
  }
  // trailing turn indices no advantage reached are not columns
  while (count.length && count[count.length - 1] === 0) count.pop();
  sum.length = sumAbs.length = count.length;
  const s = all.length ? summarizeAdvantages(all) : null;
  const diag = input.diagnostics ?? null;
  const facts = batchFacts(input.batch, input.anchored);
  let absSum = 0;
  for (const v of all) absSum += Math.abs(v);
  // per task group, its trajectories' outcomes and texts (batch order)
  const outcomes: boolean[][] = [];
  const inputs: string[] = [];
  const actions: { task: number; text: string }[] = [];
  let k = 0;
  input.batch.groups.forEach((g, gi) => {
    const ok: boolean[] = [];
    const firsts: string[] = [];
    for (let i = 0; i < g.trajectories.length; i++, k++) {
      if (input.success) ok.push(input.success[k]);
      const t = input.texts?.[k];
      if (t) {
        firsts.push(t.input);
        actions.push({ task: gi, text: t.actions });
      }
    }
    outcomes.push(ok);
    inputs.push(firsts.join("\n"));
  });
  const shares = input.success ? outcomeShares(outcomes) : null;
  const collapse = input.texts ? templateCollapse(inputs, actions) : null;
  return {
    sum,
    sumAbs,
    count,
    entSum,
    entCount,
    lenSum,
    lenCount,
    advQuantiles: quantiles(all),
    diag: {
      step: input.step,
      turns,
      trajectories: input.advantages.length,
      advMean: s ? s.mean : null,
      advStd: s ? s.std : null,
      advMeanAbs: all.length ? absSum / all.length : null,
      nonZeroShare: s ? s.nonZeroShare : null,
      zeroVarianceShare: diag?.groups.zeroVarianceShare ?? facts.zeroVarianceShare,
      // an estimator that builds its own anchor groups (GiGPO similarity mode) reports them
      singletonRatio: diag?.anchorGroups?.singletonRatio ?? facts.singletonRatio,
      meanAnchorGroupSize: facts.meanAnchorGroupSize,
      rewardVariance: facts.rewardVariance,
      allSuccessShare: shares?.allSuccess ?? null,
      allFailShare: shares?.allFail ?? null,
      mixedShare: shares?.mixed ?? null,
      collapseAccuracy: collapse?.accuracy ?? null,
      collapseChance: collapse?.chance ?? null,
    },
  };
}

/** The stored advantages' summary of a step as it is about to be written (groups in the order the loader reads them: by uid). */
export function summarizeStepInput(input: RolloutStepInput): StepSummary {
  // as the loader reads them back: trajectories with turns, groups with trajectories
  const groups = [...input.groups]
    .sort((a, b) => (a.uid < b.uid ? -1 : a.uid > b.uid ? 1 : 0))
    .map((g) => ({ ...g, trajectories: g.trajectories.filter((t) => t.turns.length > 0) }))
    .filter((g) => g.trajectories.length > 0);
  const advantages: (number | null)[][] = [];
  const entropies: (number | null)[][] = [];
  const success: boolean[] = [];
  const texts: { input: string; actions: string }[] = [];
  let n = 0;
  let anchoredTurns = 0;
  const batch = {
    groups: groups.map((g) => ({
      uid: g.uid,
      trajectories: g.trajectories.map((t, i) => {
        advantages.push(t.turns.map((u) => u.advantage ?? null));
        success.push(t.success);
        texts.push(trajectoryTexts(t.turns));
        entropies.push(t.turns.map(inputTurnEntropy));
        const turns = t.turns.map((u) => {
          n++;
          const c = creditTurn(u);
          if (c.anchor !== undefined) anchoredTurns++;
          return c;
        });
        return { id: `${g.uid}/${i}`, turns, ...(t.truncated ? { truncated: true } : {}), envTag: g.envId };
      }),
    })),
  };
  return summarizeStep({ step: input.step, batch, advantages, entropies, anchored: n > 0 && anchoredTurns === n, success, texts });
}

/** What the template-collapse probe reads of a trajectory: its first observation (the task's input) and its actions. */
export function trajectoryTexts(turns: readonly { observation: string; action: string }[]): { input: string; actions: string } {
  return { input: turns[0]?.observation ?? "", actions: turns.map((u) => u.action).join("\n") };
}
