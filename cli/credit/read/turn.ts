// The turn reader: a trajectory's `turns` array straight into the columns, one row per turn. It
// takes turns whose fields are `reward`, `anchor` and `invalid` only; any other field (another
// estimator's input, an unknown field, an escaped key) declines, naming it. Keys are matched as
// two four-byte words; this is the loop that runs 10^6 times.
import { MAX_ABS_NUMBER } from "../../../lib/credit/request";
import type { AnchorValue } from "../../../lib/credit/types";
import type { AnchorTable } from "./anchors";
import type { ColumnsBuilder } from "./columns";
import { type Cursor, hashOut, numberOut, Q, scanNumber, scanPlain, skipWs, word } from "./scan";

const REWARD = 1;
const ANCHOR = 2;
const INVALID = 4;
const FIELD_NAME = ["", "reward", "anchor", "", "invalid"];

const KEY_REWARD_0 = word('"rew');
const KEY_REWARD_1 = word('ard"');
const KEY_ANCHOR_0 = word('"anc');
const KEY_ANCHOR_1 = word('hor"');
const KEY_INVALID_0 = word('"inv');
const KEY_INVALID_1 = word("alid");
const WORD_TRUE = word("true");
const WORD_FALS = word("fals");

/** The turns array at `cur.p` (its "["), each turn a row of `cols`; `cur.p` after its "]". */
export function readTurns(cur: Cursor, cols: ColumnsBuilder, anchors: AnchorTable): void {
  const b = cur.buf;
  const first = cols.row;
  let q = skipWs(b, cur.p);
  if (b[q] !== 0x5b) cur.decline("expected an array", "turns");
  q = skipWs(b, q + 1);
  if (b[q] === 0x5d) cur.decline("no turns", "turns");
  cur.at.field = ""; // a turn's declines name their field
  for (;;) {
    cur.at.i = cols.row - first;
    q = readTurn(cur, cols, anchors, skipWs(b, q));
    q = skipWs(b, q);
    const c = b[q++];
    if (c === 0x5d) break;
    if (c !== 0x2c) cur.decline("expected , or ] after a turn");
  }
  cur.at.i = -1;
  cur.p = q;
}

/** One turn object at q; returns the position after its "}". */
function readTurn(cur: Cursor, cols: ColumnsBuilder, anchors: AnchorTable, q: number): number {
  const b = cur.buf;
  if (b[q] !== 0x7b) cur.decline("expected an object");
  if (cols.row === cols.cap) cols.growRows();
  let seen = 0;
  q++;
  for (;;) {
    q = skipWs(b, q);
    const field = turnKey(cur, q);
    if (seen & field) cur.decline("a duplicate key", FIELD_NAME[field]); // JSON.parse keeps the last one
    seen |= field;
    q = skipWs(b, q + (field === INVALID ? 9 : 8));
    if (b[q] !== 0x3a) cur.decline("expected :", FIELD_NAME[field]);
    q = skipWs(b, q + 1);
    if (field === REWARD) q = readReward(cur, cols, q);
    else if (field === ANCHOR) q = readAnchor(cur, cols, anchors, q);
    else q = readInvalid(cur, cols, q);
    q = skipWs(b, q);
    const c = b[q++];
    if (c === 0x7d) break;
    if (c !== 0x2c) cur.decline("expected , or } after a field");
  }
  endTurn(cur, cols, anchors, seen);
  return q;
}

function endTurn(cur: Cursor, cols: ColumnsBuilder, anchors: AnchorTable, seen: number): void {
  if ((seen & REWARD) === 0) cur.decline("missing", "reward");
  if ((seen & ANCHOR) === 0) cols.anchorId[cols.row] = anchors.absentId();
  else cols.anchorCount++;
  if (seen & INVALID) cols.invalidCount++;
  cols.row++;
}

/** The field whose key starts at q (its quote): REWARD, ANCHOR or INVALID, else a decline naming it. */
function turnKey(cur: Cursor, q: number): number {
  if (cur.buf[q] !== Q) cur.decline("expected a key");
  if (q + 9 <= cur.n) {
    // the four-byte reads stay inside the buffer
    const w0 = cur.dv.getInt32(q, true);
    const w1 = cur.dv.getInt32(q + 4, true);
    if (w0 === KEY_REWARD_0 && w1 === KEY_REWARD_1) return REWARD;
    if (w0 === KEY_ANCHOR_0 && w1 === KEY_ANCHOR_1) return ANCHOR;
    if (w0 === KEY_INVALID_0 && w1 === KEY_INVALID_1 && cur.buf[q + 8] === Q) return INVALID;
  }
  let e = q + 1;
  while (e < cur.n && e < q + 64 && cur.buf[e] !== Q) e++;
  return cur.decline("only reward, anchor and invalid are read on the fast path", cur.latin1(q + 1, e));
}

function readReward(cur: Cursor, cols: ColumnsBuilder, q: number): number {
  const e = scanNumber(cur.buf, q);
  const v = numberOut[0];
  if (e < 0) cur.decline("not a JSON number", "reward");
  if (!(v <= MAX_ABS_NUMBER && v >= -MAX_ABS_NUMBER)) cur.decline("magnitude above 1e100", "reward");
  cols.reward[cols.row] = v;
  return e;
}

function readInvalid(cur: Cursor, cols: ColumnsBuilder, q: number): number {
  if (q + 5 <= cur.n) {
    const w = cur.dv.getInt32(q, true);
    if (w === WORD_TRUE) {
      cols.invalid[cols.row] = 1;
      return q + 4;
    }
    if (w === WORD_FALS && cur.buf[q + 4] === 0x65) return q + 5; // rows start at 0
  }
  return cur.decline("expected a boolean", "invalid");
}

/** An anchor at q: a plain printable ASCII string is interned by its bytes, anything else by value. */
function readAnchor(cur: Cursor, cols: ColumnsBuilder, anchors: AnchorTable, q: number): number {
  if (cur.buf[q] === Q) {
    const e = scanPlain(cur.buf, cur.dv, q + 1, cur.n);
    if (e >= cur.n) cur.decline("a string that does not end", "anchor");
    if (e >= 0) {
      cols.anchorId[cols.row] = anchors.plain(q + 1, e, hashOut[0]);
      return e + 1;
    }
  }
  cur.p = q;
  cols.anchorId[cols.row] = otherAnchor(cur, cols, anchors);
  return cur.p;
}

/** A string anchor that needs decoding (escapes, UTF-8), or any other JSON value. */
function otherAnchor(cur: Cursor, cols: ColumnsBuilder, anchors: AnchorTable): number {
  if (cur.buf[cur.p] === Q) return anchors.decoded(cur.string());
  const v = cur.value() as AnchorValue;
  let id: number;
  try {
    id = anchors.json(v);
  } catch (e) {
    return cur.decline((e as Error).message, "anchor");
  }
  cols.rowValues.set(cols.row, v); // key order and number spelling as sent, for `flat.batch`
  return id;
}
