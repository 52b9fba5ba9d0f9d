// Batch diagnostics the field reads a training run by, apart from the advantages themselves. Each
// is a pure function of one training step's batch; lib/db/credit-summary.ts keeps them per step.
//
// - Outcome shares: among task groups with 2+ trajectories, the share where every trajectory
//   succeeded, every one failed, or outcomes are mixed. Only mixed groups carry an outcome signal
//   for group-relative estimators (TRL logs the all-equal share as `frac_reward_zero_std`).
// - Within-group reward variance: the mean over task groups of the population variance of the
//   trajectories' scores. RAGEN's "Echo Trap": this variance falling while the zero-variance share
//   rises precedes collapse.
// - Template collapse (after RAGEN-2): does what the agent writes still depend on its input? Each
//   trajectory's action text is matched, by TF-IDF cosine similarity, against every task's input
//   (its trajectories' first observations); accuracy is the share matched to its own task.
//   Near chance (1 / tasks), the outputs no longer tell the tasks apart, whatever the entropy says.

/** Among groups with 2+ trajectories (null when there are none). */
export interface OutcomeShares {
  allSuccess: number;
  allFail: number;
  mixed: number;
}

/** `groups[g]` = success of each trajectory of task group g. */
export function outcomeShares(groups: readonly (readonly boolean[])[]): OutcomeShares | null {
  let n = 0;
  let allSuccess = 0;
  let allFail = 0;
  for (const g of groups) {
    if (g.length < 2) continue;
    n++;
    const wins = g.filter(Boolean).length;
    if (wins === g.length) allSuccess++;
    else if (wins === 0) allFail++;
  }
  return n ? { allSuccess: allSuccess / n, allFail: allFail / n, mixed: (n - allSuccess - allFail) / n } : null;
}

/** Mean over groups with 2+ trajectories of Var(scores) = (1/G) sum (R_i - mean R)^2 (null when there are none). */
export function withinGroupVariance(groups: readonly (readonly number[])[]): number | null {
  let n = 0;
  let total = 0;
  for (const g of groups) {
    if (g.length < 2) continue;
    const mean = g.reduce((a, b) => a + b, 0) / g.length;
    total += g.reduce((a, r) => a + (r - mean) ** 2, 0) / g.length;
    n++;
  }
  return n ? total / n : null;
}

export const words = (text: string): string[] => text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];

function termCounts(text: string): Map<string, number> {
  const tf = new Map<string, number>();
  for (const w of words(text)) tf.set(w, (tf.get(w) ?? 0) + 1);
  return tf;
}

export interface CollapseProbe {
  /** share of trajectories whose action text is most similar to their own task's input */
  accuracy: number;
  /** 1 / number of tasks: what text unrelated to the input scores */
  chance: number;
}

/**
 * TF-IDF retrieval of each trajectory's task from its action text. `tasks[k]` is task k's input
 * text; `trajectories` name their task by index. idf = ln((1 + N) / (1 + df)) + 1 over the N task
 * inputs; vectors are L2-normalised term counts x idf; a tie among the best matches counts 1/ties
 * when the own task is among them (so text sharing no word with any input scores chance). Null with fewer than 2 tasks or no trajectory.
 */
export function templateCollapse(tasks: readonly string[], trajectories: readonly { task: number; text: string }[]): CollapseProbe | null {
  const N = tasks.length;
  if (N < 2 || trajectories.length === 0) return null;
  const docs = tasks.map(termCounts);
  const df = new Map<string, number>();
  for (const d of docs) for (const w of d.keys()) df.set(w, (df.get(w) ?? 0) + 1);
  const idf = new Map<string, number>();
  for (const [w, n] of df) idf.set(w, Math.log((1 + N) / (1 + n)) + 1);
  // each task's vector, normalised
  const docVecs = docs.map((d) => {
    const v = new Map<string, number>();
    let norm = 0;
    for (const [w, c] of d) {
      const x = c * idf.get(w)!;
      v.set(w, x);
      norm += x * x;
    }
    norm = Math.sqrt(norm) || 1;
    for (const [w, x] of v) v.set(w, x / norm);
    return v;
  });
  let hits = 0;
  for (const t of trajectories) {
    const q = termCounts(t.text);
    // words no task input has carry no evidence (their idf is undefined): left out
    const sims = docVecs.map((d) => {
      let s = 0;
      for (const [w, c] of q) {
        const x = d.get(w);
        if (x !== undefined) s += c * idf.get(w)! * x;
      }
      return s;
    });
    // text sharing no word with any input ties every task: it scores chance, as a guess would
    const best = Math.max(...sims);
    const tied = sims.filter((s) => s === best).length;
    if (sims[t.task] === best) hits += 1 / tied;
  }
  return { accuracy: hits / trajectories.length, chance: 1 / N };
}
