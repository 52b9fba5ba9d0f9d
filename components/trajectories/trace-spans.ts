// A trace's execution spans (a Trackio trace's `spans`, kept by the importer in the last turn's
// info): one line each, indented under its parent, for the turn card's span list.

export interface SpanRow {
  name: string;
  /** what kind of operation, its duration and status, as the span gives them */
  detail: string;
  /** how many parents above it (0: a root span) */
  depth: number;
}

function text(v: unknown): string | null {
  return typeof v === "string" && v ? v : typeof v === "number" && Number.isFinite(v) ? String(v) : null;
}

/** The span rows of `info.spans`; [] when it is not a list of spans. */
export function spanRows(spans: unknown): SpanRow[] {
  if (!Array.isArray(spans)) return [];
  const items = spans.filter((s): s is Record<string, unknown> => typeof s === "object" && s !== null && !Array.isArray(s));
  const parent = new Map<string, string>();
  for (const s of items) {
    const id = text(s.id);
    const p = text(s.parent_id);
    if (id && p) parent.set(id, p);
  }
  const depth = (s: Record<string, unknown>) => {
    let d = 0;
    // a parent chain longer than the list is a cycle: stop there
    for (let at = text(s.parent_id) ?? undefined; at !== undefined && d < items.length; at = parent.get(at)) d++;
    return d;
  };
  return items.map((s) => {
    const ms = typeof s.duration_ms === "number" && Number.isFinite(s.duration_ms) ? `${Number(s.duration_ms.toPrecision(4))} ms` : null;
    const status = text(s.status) ?? (s.error ? "error" : null);
    return {
      name: text(s.name) ?? text(s.id) ?? "span",
      detail: [text(s.kind), text(s.model), ms, status].filter(Boolean).join(" · "),
      depth: depth(s),
    };
  });
}
