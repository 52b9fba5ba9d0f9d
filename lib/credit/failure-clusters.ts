// Failure clusters: failed trajectories grouped by what they did, deterministically (the same
// input gives the same clusters, in the same order, with the same names).
//
// - An action becomes a term: its command (last line, without an "Action:" label), its words
//   lower-cased, numbers as "#" ("open drawer 3" and "open drawer 5" are one move), at most 8 words. A trajectory's features are its action unigrams and
//   bigrams ("look > look" is a loop), weighted TF-IDF: (1 + ln tf) x (ln((1 + N) / (1 + df)) + 1),
//   L2-normalised; n-grams in fewer than 2 trajectories are left out (they tell nothing shared).
// - Spherical k-means (cosine) seeded by farthest-first traversal: the first centre is the
//   trajectory most similar to the mean, each next one the trajectory least similar to its nearest
//   centre (ties: the earlier in input order), until `maxClusters` or until every trajectory has
//   cosine >= `cover` (default 0.3: two trajectories sharing most of their moves) to a centre; then at most 25 rounds of assignment (ties: the lower cluster).
// - Clusters are ordered by size (ties: their first member's position), named by their centroid's
//   top 3 n-grams, with per step their members and the step's failed trajectories, and examples
//   (the member nearest the centroid at the first, middle and last step the cluster appears in).
// - Flags over the steps given (in step order, split in thirds): "new" when a cluster has no
//   member in the first third's steps and at least 5 % of the last third's failures; "growing" when
//   its share of the last third's failures is at least twice and at least 10 points above the first third's.
import { words } from "./batch-diagnostics";

export interface FailedTrajectory {
  id: string;
  step: number;
  actions: readonly string[];
}

export interface FailureCluster {
  /** 0-based, in the clusters' order */
  index: number;
  name: string;
  topNgrams: string[];
  size: number;
  /** per step given (step order): members and the step's failed trajectories */
  perStep: { step: number; size: number; failed: number }[];
  examples: string[];
  flag: "new" | "growing" | null;
}

export interface ClusterOptions {
  maxClusters?: number;
  /** a trajectory this similar to a centre needs no centre of its own */
  cover?: number;
  /** the steps read, failures or not (default: those of the trajectories); per step sizes and flags are over them */
  steps?: readonly number[];
}

const MAX_WORDS = 8;
const ROUNDS = 25;

/**
 * An action as a term: its command (the last non-empty line, without an "Action:" label: a
 * ReAct-style "Think: ...\nAction: go to desk 1" is the move "go to desk #"), its words, numbers as "#".
 */
export function actionTerm(action: string): string {
  const lines = action.split("\n").filter((l) => l.trim());
  const command = (lines[lines.length - 1] ?? "").replace(/^\s*action\s*:/i, "");
  return words(command)
    .slice(0, MAX_WORDS)
    .map((w) => (/^\p{N}+$/u.test(w) ? "#" : w))
    .join(" ");
}

interface Sparse {
  idx: Int32Array;
  val: Float64Array;
}

function features(trajs: readonly FailedTrajectory[]): { vecs: Sparse[]; names: string[] } {
  const termOf = new Map<string, string>(); // actions repeat: each distinct one parsed once
  const term = (a: string) => termOf.get(a) ?? termOf.set(a, actionTerm(a)).get(a)!;
  const counts = trajs.map((t) => {
    const terms = t.actions.map(term);
    const tf = new Map<string, number>();
    const add = (g: string) => tf.set(g, (tf.get(g) ?? 0) + 1);
    terms.forEach((a, i) => {
      add(a);
      if (i > 0) add(`${terms[i - 1]} > ${a}`);
    });
    return tf;
  });
  const df = new Map<string, number>();
  for (const tf of counts) for (const g of tf.keys()) df.set(g, (df.get(g) ?? 0) + 1);
  const names = [...df.keys()].filter((g) => df.get(g)! >= 2).sort();
  const dim = new Map(names.map((g, i) => [g, i]));
  const N = trajs.length;
  const vecs = counts.map((tf) => {
    const entries: [number, number][] = [];
    for (const [g, c] of tf) {
      const j = dim.get(g);
      if (j !== undefined) entries.push([j, (1 + Math.log(c)) * (Math.log((1 + N) / (1 + df.get(g)!)) + 1)]);
    }
    entries.sort((a, b) => a[0] - b[0]);
    const norm = Math.sqrt(entries.reduce((s, [, x]) => s + x * x, 0)) || 1;
    return { idx: Int32Array.from(entries.map((e) => e[0])), val: Float64Array.from(entries.map((e) => e[1] / norm)) };
  });
  return { vecs, names };
}

const dot = (v: Sparse, c: Float64Array) => {
  let s = 0;
  for (let i = 0; i < v.idx.length; i++) s += v.val[i] * c[v.idx[i]];
  return s;
};

function centroid(members: readonly Sparse[], d: number): Float64Array {
  const c = new Float64Array(d);
  for (const v of members) for (let i = 0; i < v.idx.length; i++) c[v.idx[i]] += v.val[i];
  let n = 0;
  for (let j = 0; j < d; j++) n += c[j] * c[j];
  n = Math.sqrt(n) || 1;
  for (let j = 0; j < d; j++) c[j] /= n;
  return c;
}

const dense = (v: Sparse, d: number) => {
  const c = new Float64Array(d);
  for (let i = 0; i < v.idx.length; i++) c[v.idx[i]] = v.val[i];
  return c;
};

/** The clusters of `trajs` (any order in, canonical order used: step, then id). */
export function clusterFailures(input: readonly FailedTrajectory[], opts: ClusterOptions = {}): FailureCluster[] {
  const maxK = opts.maxClusters ?? 6;
  const cover = opts.cover ?? 0.3;
  const trajs = [...input].sort((a, b) => a.step - b.step || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  if (!trajs.length) return [];
  const { vecs, names } = features(trajs);
  const d = names.length;
  // farthest-first seeds
  const centres: Float64Array[] = [];
  const mean = centroid(vecs, d);
  let first = 0;
  vecs.forEach((v, i) => {
    if (dot(v, mean) > dot(vecs[first], mean)) first = i;
  });
  centres.push(dense(vecs[first], d));
  const best = vecs.map((v) => dot(v, centres[0]));
  while (centres.length < maxK) {
    let far = 0;
    for (let i = 1; i < vecs.length; i++) if (best[i] < best[far]) far = i;
    if (best[far] >= cover) break;
    const c = dense(vecs[far], d);
    centres.push(c);
    vecs.forEach((v, i) => {
      best[i] = Math.max(best[i], dot(v, c));
    });
  }
  // Lloyd rounds
  let assign = new Int32Array(vecs.length).fill(-1);
  for (let round = 0; round < ROUNDS; round++) {
    const next = new Int32Array(vecs.length);
    vecs.forEach((v, i) => {
      let k = 0;
      let s = -Infinity;
      centres.forEach((c, j) => {
        const x = dot(v, c);
        if (x > s) {
          s = x;
          k = j;
        }
      });
      next[i] = k;
    });
    const same = next.every((k, i) => k === assign[i]);
    assign = next;
    if (same) break;
    for (let j = 0; j < centres.length; j++) {
      const members = vecs.filter((_, i) => assign[i] === j);
      if (members.length) centres[j] = centroid(members, d);
    }
  }
  // the clusters, by size
  const steps = [...new Set(opts.steps ?? trajs.map((t) => t.step))].sort((a, b) => a - b);
  const failedAt = new Map<number, number>();
  for (const t of trajs) failedAt.set(t.step, (failedAt.get(t.step) ?? 0) + 1);
  const groups = centres
    .map((c, j) => ({ c, members: trajs.map((_, i) => i).filter((i) => assign[i] === j) }))
    .filter((g) => g.members.length)
    .sort((a, b) => b.members.length - a.members.length || a.members[0] - b.members[0]);
  const third = Math.max(1, Math.floor(steps.length / 3));
  const early = new Set(steps.slice(0, third));
  const late = new Set(steps.slice(steps.length - third));
  const share = (members: number[], at: Set<number>) => {
    let total = 0;
    for (const s of at) total += failedAt.get(s) ?? 0;
    return total ? members.filter((i) => at.has(trajs[i].step)).length / total : 0;
  };
  return groups.map((g, index) => {
    const top = [...g.c.keys()]
      .filter((j) => g.c[j] > 0)
      .sort((a, b) => g.c[b] - g.c[a] || a - b)
      .slice(0, 3)
      .map((j) => names[j]);
    const perStep = steps.map((step) => ({ step, size: g.members.filter((i) => trajs[i].step === step).length, failed: failedAt.get(step) ?? 0 }));
    // over training: the member nearest the centroid at the first, middle and last step it appears in
    const seen = [...new Set(g.members.map((i) => trajs[i].step))];
    const at = [...new Set([seen[0], seen[Math.floor((seen.length - 1) / 2)], seen[seen.length - 1]])];
    const examples = at.map((step) => {
      let bestI = -1;
      for (const i of g.members) if (trajs[i].step === step && (bestI < 0 || dot(vecs[i], g.c) > dot(vecs[bestI], g.c))) bestI = i;
      return trajs[bestI].id;
    });
    const e = share(g.members, early);
    const l = share(g.members, late);
    const flag = steps.length < 3 ? null : e === 0 && l >= 0.05 ? "new" : l >= 2 * e && l - e >= 0.1 ? "growing" : null;
    return { index, name: top.length ? top.join(" | ") : "(no shared actions)", topNgrams: top, size: g.members.length, perStep, examples, flag };
  });
}
