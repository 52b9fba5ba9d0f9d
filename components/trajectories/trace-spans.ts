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
  // each span right under its parent (siblings in the trace's order), so the indentation reads as a
  // tree; a span whose parent is not in the list starts a tree of its own; spans in a cycle last
  const children = new Map<string, Record<string, unknown>[]>();
  const known = new Set(items.map((s) => text(s.id)).filter((id): id is string => id !== null));
  const roots: Record<string, unknown>[] = [];
  for (const s of items) {
    const p = text(s.parent_id);
    if (p && known.has(p)) children.set(p, [...(children.get(p) ?? []), s]);
    else roots.push(s);
  }
  const ordered: Record<string, unknown>[] = [];
  const seen = new Set<Record<string, unknown>>();
  const visit = (s: Record<string, unknown>) => {
    if (seen.has(s)) return;
    seen.add(s);
    ordered.push(s);
    const id = text(s.id);
    for (const c of (id && children.get(id)) || []) visit(c);
  };
  for (const r of roots) visit(r);
  for (const s of items) if (!seen.has(s)) ordered.push(s);
  return ordered.map((s) => {
    const ms = typeof s.duration_ms === "number" && Number.isFinite(s.duration_ms) ? `${Number(s.duration_ms.toPrecision(4))} ms` : null;
    const status = text(s.status) ?? (s.error ? "error" : null);
    return {
      name: text(s.name) ?? text(s.id) ?? "span",
      detail: [text(s.kind), text(s.model), ms, status].filter(Boolean).join(" · "),
      depth: depth(s),
    };
  });
}
