// The request reader: the top-level object (the small fields kept as values for validateHead,
// `groups` through the group reader), then the uniqueness of uids and trajectory ids. It returns
// the request as columns, or throws `Declined` naming the field where the fast path stopped; the
// ordinary path then gives the answer or the error message.
import { CreditRequestError } from "../../../lib/credit/errors";
import { AnchorTable } from "./anchors";
import { ColumnsBuilder, type ParsedColumns } from "./columns";
import { readGroup } from "./group";
import { Cursor, Declined } from "./scan";

const HEAD_FIELDS = new Set(["estimator", "params", "rewardTransform", "output"]);

/** The request bytes as columns; throws `Declined` (with the field) for the ordinary path. */
export function readRequest(buf: Buffer): ParsedColumns {
  if (buf.length > 0x7fffffff) throw new Declined("request", "larger than 2 GB");
  const cur = new Cursor(buf);
  try {
    return readTop(cur);
  } catch (e) {
    // a string or value JSON.parse rejects, an anchor validation rejects
    if (e instanceof SyntaxError) throw new Declined(cur.at.path(), e.message);
    if (e instanceof CreditRequestError) throw new Declined(cur.at.path(e.path), e.message);
    throw e;
  }
}

/** `readRequest`, or null where the fast path declines. */
export function parseRequestColumns(buf: Buffer): ParsedColumns | null {
  try {
    return readRequest(buf);
  } catch (e) {
    if (e instanceof Declined) return null;
    throw e;
  }
}

function readTop(cur: Cursor): ParsedColumns {
  const cols = new ColumnsBuilder(cur.n);
  const anchors = new AnchorTable(cur.buf);
  const head: Record<string, unknown> = {};
  let sawGroups = false;
  cur.expect(0x7b);
  do {
    cur.key();
    const name = cur.keyText();
    cur.at.field = name; // a decline inside the value names this field
    if (name === "groups") {
      if (sawGroups) cur.decline("a duplicate key", "groups");
      sawGroups = true;
      readGroups(cur, cols, anchors);
    } else {
      if (!HEAD_FIELDS.has(name)) cur.decline("unknown field", name);
      if (name in head) cur.decline("a duplicate key", name);
      head[name] = cur.value();
    }
    cur.at.field = "";
  } while (cur.more(0x7d));
  cur.ws();
  if (cur.p !== cur.n) cur.decline("bytes after the request");
  if (!sawGroups) cur.decline("missing", "groups");
  const out = cols.finish(head, anchors, cur.buf);
  checkUnique(out);
  return out;
}

function readGroups(cur: Cursor, cols: ColumnsBuilder, anchors: AnchorTable): void {
  cur.expect(0x5b);
  cur.ws();
  if (cur.buf[cur.p] === 0x5d) cur.decline("no groups", "groups");
  cur.at.field = "";
  do {
    cur.at.g = cols.nGroups;
    readGroup(cur, cols, anchors);
  } while (cur.more(0x5d));
  cur.at.g = -1;
}

/** Unique uids and trajectory ids, as validateRequest requires. */
function checkUnique(cols: ParsedColumns): void {
  const g = secondOf(cols.uids);
  if (g >= 0) throw new Declined(`groups[${g}].uid`, "a duplicate uid");
  const t = cols.trajIdDecoded.some((id) => id !== undefined) ? secondOf(cols.trajIds) : secondPlain(cols);
  if (t >= 0) {
    let gi = 0;
    while (cols.groupTrajStart[gi + 1] <= t && gi + 1 < cols.nGroups) gi++;
    throw new Declined(`groups[${gi}].trajectories[${t - cols.groupTrajStart[gi]}].id`, "a duplicate trajectory id");
  }
}

/**
 * `secondOf` over ids that are all plain bytes (trajIdText..trajIdEnd), without making their strings:
 * an open-addressing table of their FNV-1a hashes, bytes compared on a match.
 */
function secondPlain(cols: ParsedColumns): number {
  const { trajIdText: text, trajIdEnd: end, nTraj } = cols;
  const b = cols.buf;
  let size = 1024;
  while (size < nTraj * 2) size *= 2;
  const mask = size - 1;
  const table = new Int32Array(size); // trajectory + 1, 0 = empty
  for (let i = 0; i < nTraj; i++) {
    const a = text[i];
    const len = end[i] - a;
    let h = 0x811c9dc5 | 0;
    for (let k = a; k < a + len; k++) h = Math.imul(h ^ b[k], 0x01000193);
    for (let s = h & mask; ; s = (s + 1) & mask) {
      const j = table[s] - 1;
      if (j < 0) {
        table[s] = i + 1;
        break;
      }
      if (end[j] - text[j] !== len) continue;
      let k = 0;
      while (k < len && b[text[j] + k] === b[a + k]) k++;
      if (k === len) return i;
    }
  }
  return -1;
}

/** Index of the first entry equal to an earlier one, else -1. */
function secondOf(xs: string[]): number {
  if (new Set(xs).size === xs.length) return -1;
  const seen = new Set<string>();
  for (let i = 0; i < xs.length; i++) {
    if (seen.has(xs[i])) return i;
    seen.add(xs[i]);
  }
  return -1;
}
