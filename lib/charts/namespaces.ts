// Metric keys by namespace ("rollout/success_rate" -> "rollout"), in the order researchers read
// them: outcomes, then optimisation, then credit, then throughput. The run page and Compare share it.

export const NAMESPACE_ORDER = ["eval", "rollout", "train", "losses", "credit", "perf"];

/** Keys grouped by namespace: known namespaces first in NAMESPACE_ORDER, then others in first-seen order ("other" for keys without one). */
export function byNamespace(keys: readonly string[]): [string, string[]][] {
  const out = new Map<string, string[]>();
  for (const k of keys) {
    const ns = k.includes("/") ? k.slice(0, k.indexOf("/")) : "other";
    (out.get(ns) ?? out.set(ns, []).get(ns)!).push(k);
  }
  const rank = (ns: string) => (NAMESPACE_ORDER.includes(ns) ? NAMESPACE_ORDER.indexOf(ns) : NAMESPACE_ORDER.length);
  return [...out.entries()].sort((a, b) => rank(a[0]) - rank(b[0]));
}

/** The last non-null value of a column (a legend's "last value"). */
export function lastValue(values: readonly (number | null | undefined | unknown)[]): number | null {
  for (let i = values.length - 1; i >= 0; i--) if (typeof values[i] === "number" && Number.isFinite(values[i])) return values[i] as number;
  return null;
}
