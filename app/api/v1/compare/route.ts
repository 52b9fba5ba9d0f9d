import { route } from "@/lib/api/route";
import { routes } from "@/lib/api/routes";
import { getRun } from "@/lib/db/runs";
import { listSeries } from "@/lib/db/metric-series";

/** The runs to compare and the union of their metric keys (with how many of the runs log each). */
export const GET = route(routes.compare, ({ query }) => {
  const runs = [...new Set(query.runs)].map((id) => getRun(id));
  const keys = new Map<string, number>();
  for (const r of runs) for (const s of listSeries(r.id)) keys.set(s.key, (keys.get(s.key) ?? 0) + 1);
  return { runs, keys: [...keys.entries()].map(([key, n]) => ({ key, runs: n })).sort((a, b) => b.runs - a.runs || a.key.localeCompare(b.key)) };
});
