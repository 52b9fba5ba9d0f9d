// The credit CLI's fast path: a request read straight from its UTF-8 bytes into flat typed columns
// (no turn objects, no anchor strings: string anchors are interned by their bytes into integer
// ids), the estimator run on those columns, and the response written into byte buffers.
// It covers the common request: turns with only `reward`, `anchor`, `invalid`, no reward
// transform. Anything else, and any request that is not plainly valid (a syntax error, an unknown
// or duplicate field, a bound, a missing field the estimator needs, a non-finite advantage...),
// makes `fastCredit` return null, and the CLI runs the ordinary path (JSON.parse, runCredit,
// JSON.stringify), which gives the answer or the error message. The bytes written are exactly
// those of `JSON.stringify(runCredit(request, options)) + "\n"` (test/credit/fast-request.test.ts).
import { anchorGroupKey, canonicalAnchorKey, canonicalJson, type AnchorKind } from "./anchor-key";
import { CreditRequestError } from "./errors";
import type { FlatBatch, NumericTurnField } from "./flat";
import type { RunCreditOptions } from "./index";
import { checkValue, MAX_ABS_NUMBER, validateHead } from "./request";
import type { ComponentArray, CreditDiagnostics, ResultColumns } from "./result";
import type { EstimatorSpec } from "./spec";
import type { AnchorValue, Batch, Group, Turn } from "./types";

/** Thrown inside the parser: this request is for the ordinary path. */
const BAIL = new Error("fast path: not applicable");
function bail(): never {
  throw BAIL;
}

const POW10 = [1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22];

const Q = 0x22; // "
const BS = 0x5c; // backslash

/** Four bytes of ASCII text as the little-endian int32 `DataView.getInt32(at, true)` reads. */
function word(s: string): number {
  return s.charCodeAt(0) | (s.charCodeAt(1) << 8) | (s.charCodeAt(2) << 16) | (s.charCodeAt(3) << 24);
}
const KEY_REWARD_0 = word('"rew');
const KEY_REWARD_1 = word('ard"');
const KEY_ANCHOR_0 = word('"anc');
const KEY_ANCHOR_1 = word('hor"');
const KEY_INVALID_0 = word('"inv');
const KEY_INVALID_1 = word("alid");
const WORD_TRUE = word("true");
const WORD_FALS = word("fals");

function growF64(a: Float64Array, n: number): Float64Array<ArrayBuffer> {
  const b = new Float64Array(n);
  b.set(a);
  return b;
}
function growI32(a: Int32Array, n: number): Int32Array<ArrayBuffer> {
  const b = new Int32Array(n);
  b.set(a);
  return b;
}
function growU8(a: Uint8Array, n: number): Uint8Array<ArrayBuffer> {
  const b = new Uint8Array(n);
  b.set(a);
  return b;
}

/** JSON whitespace skipped from q (a read past the end is undefined: not whitespace). */
function skipWs(b: Uint8Array, q: number): number {
  for (;;) {
    const c = b[q];
    if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) q++;
    else return q;
  }
}

// The second results of scanNumber (the value), twoProduct (the low part) and scanPlain (the
// hash) go through typed arrays: a double, or an int32 beyond the small-integer range, stored in
// a module variable is boxed anew on every store, one box per turn, anchor and digit search.
/** [0]: value of the last `scanNumber`; [1]: low part of the last `twoProduct`. */
const scratch = new Float64Array(2);
/** Hash of the last `scanPlain`. */
const hashOut = new Int32Array(1);

/**
 * The JSON number at q, exactly as JSON.parse reads it, into `scratch[0]`; returns its end, or -1
 * when the bytes there are not a JSON number.
 */
function scanNumber(b: Buffer, q: number): number {
  const a = q;
  let neg = false;
  let c = b[q];
  if (c === 0x2d) {
    neg = true;
    c = b[++q];
  }
  let mant = 0;
  let digits = 0;
  let frac = 0;
  if (c === 0x30) {
    c = b[++q];
    if (c >= 0x30 && c <= 0x39) return -1; // leading zero
  } else if (c >= 0x31 && c <= 0x39) {
    do {
      mant = mant * 10 + (c - 0x30);
      digits++;
      c = b[++q];
    } while (c >= 0x30 && c <= 0x39);
  } else return -1;
  if (c === 0x2e) {
    c = b[++q];
    if (!(c >= 0x30 && c <= 0x39)) return -1;
    do {
      mant = mant * 10 + (c - 0x30);
      digits++;
      frac++;
      c = b[++q];
    } while (c >= 0x30 && c <= 0x39);
  }
  if (c === 0x65 || c === 0x45) {
    c = b[++q];
    if (c === 0x2b || c === 0x2d) c = b[++q];
    if (!(c >= 0x30 && c <= 0x39)) return -1;
    do c = b[++q];
    while (c >= 0x30 && c <= 0x39);
    scratch[0] = Number(b.toString("latin1", a, q));
  } else if (digits <= 15 && frac <= 22) {
    // an exact integer mantissa and an exact power of ten: one correctly rounded division
    // (Clinger's fast path), the same double JSON.parse gives
    const v = frac === 0 ? mant : mant / POW10[frac];
    scratch[0] = neg ? -v : v;
  } else scratch[0] = Number(b.toString("latin1", a, q));
  return q;
}

/** The high bits of a word-wise FNV hash into its low bits (the table is indexed by the low bits). */
function mix(h: number): number {
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return h ^ (h >>> 16);
}

/**
 * A plain string's bytes from a (after its opening quote): printable ASCII, no escape. Returns the
 * position of the closing quote with a hash of the bytes in `hashOut[0]`; -1 at an escape, a
 * control byte or a non-ASCII byte (the string needs decoding); n when it does not end. Reads four
 * bytes at a time through `dv` (a view of b) while none of them is special: the same bytes give
 * the same hash wherever they lie.
 */
function scanPlain(b: Uint8Array, dv: DataView, a: number, n: number): number {
  let e = a;
  let h = 0x811c9dc5 | 0;
  for (;;) {
    while (e + 4 <= n) {
      const w = dv.getInt32(e, true);
      // a byte >= 0x80, a control byte, a quote or a backslash: bytewise (exact tests: a byte
      // below 0x20 gives (w - 0x20202020) & ~w its top bit, a byte equal to 0x22 does so for w ^ 0x22222222)
      const x = w ^ 0x22222222;
      const y = w ^ 0x5c5c5c5c;
      const m = w | (((w - 0x20202020) | 0) & ~w) | (((x - 0x01010101) | 0) & ~x) | (((y - 0x01010101) | 0) & ~y);
      if ((m & (0x80808080 | 0)) !== 0) break;
      h = Math.imul(h ^ w, 0x01000193);
      e += 4;
    }
    const stop = Math.min(e + 4, n);
    for (; e < stop; e++) {
      const c = b[e];
      if (c < 0x23 || c === 0x5c || c >= 0x80) {
        if (c === Q) {
          hashOut[0] = mix(h);
          return e;
        }
        if (c !== 0x20 && c !== 0x21) return -1;
      }
      h = Math.imul(h ^ c, 0x01000193);
    }
    if (e >= n) {
      hashOut[0] = mix(h);
      return n;
    }
  }
}

/** The request as flat columns; `head` holds every top-level field but `groups`. */
export interface ParsedColumns {
  head: Record<string, unknown>;
  nGroups: number;
  nTraj: number;
  nTurns: number;
  uids: string[];
  groupTrajStart: Int32Array;
  trajTurnStart: Int32Array;
  trajGroup: Int32Array;
  trajIds: string[];
  /** Where each trajectory id's bytes start when they are its JSON text without the quotes (plain ASCII), else -1. */
  trajIdText: Int32Array;
  /** Trajectory fields other than id and turns, by trajectory index (usually empty). */
  trajExtra: Map<number, { truncated?: boolean; envTag?: string }>;
  reward: Float64Array;
  invalid: Uint8Array;
  /** Turns carrying `invalid` / `anchor` (a needed field must be on every turn). */
  invalidCount: number;
  anchorCount: number;
  /** Dense anchor id per row, by first appearance; equal iff same JSON type and value. */
  anchorId: Int32Array;
  /** Per anchor id: JSON type, and its value (strings decoded on demand from idStart/idEnd). */
  idKind: Uint8Array;
  idStart: Int32Array;
  idEnd: Int32Array;
  idValue: (AnchorValue | undefined)[];
  nIds: number;
  /** Non-string anchors as sent, by row (key order and number spelling kept for `flat.batch`). */
  rowValues: Map<number, AnchorValue>;
  buf: Buffer;
}

/**
 * Parse request bytes into columns, or null when the request needs the ordinary path (see the
 * file comment). Accepts only what `validateRequest` accepts for the fields it reads.
 */
export function parseRequestColumns(buf: Buffer): ParsedColumns | null {
  try {
    return parse(buf);
  } catch (e) {
    if (e === BAIL || e instanceof SyntaxError || e instanceof CreditRequestError) return null;
    throw e;
  }
}

function parse(buf: Buffer): ParsedColumns {
  const n = buf.length;
  if (n > 0x7fffffff) bail();
  const latin1 = (a: number, b: number) => buf.toString("latin1", a, b);
  const dv = new DataView(buf.buffer, buf.byteOffset, n);
  const utf8 = (a: number, b: number) => buf.toString("utf8", a, b);
  let p = 0;

  // columns, grown by doubling
  let cap = Math.max(16, (n / 48) | 0);
  let reward = new Float64Array(cap);
  let invalid = new Uint8Array(cap);
  let anchorId = new Int32Array(cap);
  let trajCap = Math.max(16, (cap / 8) | 0);
  let trajTurnStart = new Int32Array(trajCap + 1);
  let trajGroup = new Int32Array(trajCap);
  let groupCap = Math.max(16, (trajCap / 4) | 0);
  let groupTrajStart = new Int32Array(groupCap + 1);
  const trajIds: string[] = [];
  let idCap2 = trajCap;
  let trajIdText = new Int32Array(idCap2);
  const uids: string[] = [];
  const trajExtra = new Map<number, { truncated?: boolean; envTag?: string }>();
  const rowValues = new Map<number, AnchorValue>();
  let row = 0;
  let nTraj = 0;
  let nGroups = 0;
  let invalidCount = 0;
  let anchorCount = 0;

  // anchor ids: plain ASCII string anchors interned by their bytes in an open-addressing table;
  // other strings by value (strMap), other JSON values by canonical JSON (jsonMap)
  let idCap = 1024;
  let idKind = new Uint8Array(idCap);
  let idStart = new Int32Array(idCap);
  let idEnd = new Int32Array(idCap);
  let idHash = new Int32Array(idCap);
  const idValue: (AnchorValue | undefined)[] = [];
  let nIds = 0;
  let tableBits = 12;
  let table = new Int32Array(1 << tableBits); // id + 1, 0 = empty
  let strMap: Map<string, number> | null = null;
  let jsonMap: Map<string, number> | null = null;
  let absentId = -1;

  const newId = (kind: AnchorKind, start: number, end: number, h: number, value: AnchorValue | undefined): number => {
    if (nIds === idCap) {
      idCap *= 2;
      idKind = growU8(idKind, idCap);
      idStart = growI32(idStart, idCap);
      idEnd = growI32(idEnd, idCap);
      idHash = growI32(idHash, idCap);
    }
    idKind[nIds] = kind;
    idStart[nIds] = start;
    idEnd[nIds] = end;
    idHash[nIds] = h;
    idValue[nIds] = value;
    return nIds++;
  };
  const tableInsert = (id: number, h: number) => {
    if ((nIds + 1) * 2 > table.length) {
      tableBits++;
      table = new Int32Array(1 << tableBits);
      for (let k = 0; k < nIds; k++) if (idKind[k] === 1 && idEnd[k] >= 0 && k !== id) place(k, idHash[k]);
    }
    place(id, h);
  };
  const place = (id: number, h: number) => {
    const mask = table.length - 1;
    let s = h & mask;
    while (table[s] !== 0) s = (s + 1) & mask;
    table[s] = id + 1;
  };
  /** Id of the plain ASCII string anchor buf[a, b) (no escapes), hash h of its bytes. */
  const internPlain = (a: number, b: number, h: number): number => {
    const mask = table.length - 1;
    const len = b - a;
    let s = h & mask;
    for (;;) {
      const e = table[s];
      if (e === 0) break;
      const id = e - 1;
      if (idHash[id] === h && idEnd[id] - idStart[id] === len) {
        const c = idStart[id];
        let k = 0;
        while (k + 4 <= len && dv.getInt32(c + k, true) === dv.getInt32(a + k, true)) k += 4;
        while (k < len && buf[c + k] === buf[a + k]) k++;
        if (k === len) return id;
      }
      s = (s + 1) & mask;
    }
    if (strMap !== null) {
      const known = strMap.get(latin1(a, b));
      if (known !== undefined) return known; // sent escaped first; stays in strMap
    }
    const id = newId(1, a, b, h, undefined);
    tableInsert(id, h);
    return id;
  };
  /** Id of a string anchor that needed decoding (escapes or non-ASCII bytes). */
  const internDecoded = (s: string): number => {
    // the same string sent plain elsewhere: look it up by its bytes (a plain string is ASCII with
    // no quote, backslash or control character, which scanPlain checks here too)
    let ascii = true;
    for (let k = 0; k < s.length && ascii; k++) if (s.charCodeAt(k) >= 0x80) ascii = false;
    if (ascii) {
      const bytes = Buffer.from(s + '"', "latin1");
      if (scanPlain(bytes, new DataView(bytes.buffer, bytes.byteOffset, bytes.length), 0, bytes.length) === s.length) {
        const h = hashOut[0];
        const mask = table.length - 1;
        for (let slot = h & mask; table[slot] !== 0; slot = (slot + 1) & mask) {
          const id = table[slot] - 1;
          if (idHash[id] === h && idEnd[id] - idStart[id] === s.length && latin1(idStart[id], idEnd[id]) === s) return id;
        }
      }
    }
    strMap ??= new Map();
    let id = strMap.get(s);
    if (id === undefined) {
      id = newId(1, 0, -1, 0, s);
      strMap.set(s, id);
    }
    return id;
  };

  const ws = () => {
    while (p < n) {
      const c = buf[p];
      if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) p++;
      else break;
    }
  };
  const expect = (c: number) => {
    ws();
    if (buf[p] !== c) bail();
    p++;
  };
  /** After a member or element: true if another follows (a comma), false at the closing `close`. */
  const more = (close: number): boolean => {
    ws();
    const c = buf[p++];
    if (c === 0x2c) return true;
    if (c === close) return false;
    return bail();
  };
  /** Start and end of the last key read by `key`. */
  let keyStart = 0;
  let keyEnd = 0;
  /** An object key made of plain ASCII (no escapes) into keyStart / keyEnd; p after the colon. */
  const key = () => {
    ws();
    if (buf[p] !== Q) bail();
    const a = ++p;
    while (p < n) {
      const c = buf[p];
      if (c === Q) break;
      if (c === BS || c < 0x20 || c >= 0x80) bail();
      p++;
    }
    if (p >= n) bail();
    keyStart = a;
    keyEnd = p++;
    expect(0x3a);
    ws();
  };
  const keyIs = (s: string): boolean => {
    const a = keyStart;
    if (keyEnd - a !== s.length) return false;
    for (let i = 0; i < s.length; i++) if (buf[a + i] !== s.charCodeAt(i)) return false;
    return true;
  };
  /** A JSON string value (p at its quote), decoded. */
  /** Start of the last `string` when it was plain (its JSON text is its bytes in quotes), else -1. */
  let strStart = -1;
  const string = (): string => {
    if (buf[p] !== Q) bail();
    const a = ++p;
    let plain = true;
    while (p < n) {
      const c = buf[p];
      if (c === Q) break;
      if (c === BS) {
        plain = false;
        p += 2;
        continue;
      }
      if (c < 0x20) bail();
      if (c >= 0x80) plain = false;
      p++;
    }
    if (p >= n) bail();
    const b = p++;
    strStart = plain ? a : -1;
    return plain ? latin1(a, b) : (JSON.parse(utf8(a - 1, b + 1)) as string);
  };
  /** Skips any JSON value (p at its first byte); JSON.parse checks it afterwards. */
  const skipValue = () => {
    let depth = 0;
    for (;;) {
      ws();
      if (p >= n) bail();
      const c = buf[p];
      if (c === Q) {
        p++;
        while (p < n && buf[p] !== Q) p += buf[p] === BS ? 2 : 1;
        if (p >= n) bail();
        p++;
      } else if (c === 0x7b || c === 0x5b) {
        depth++;
        p++;
        continue;
      } else if (c === 0x7d || c === 0x5d) {
        if (depth === 0) bail();
        depth--;
        p++;
      } else if (c === 0x2c || c === 0x3a) {
        if (depth === 0) bail();
        p++;
        continue;
      } else {
        const a = p;
        while (p < n) {
          const d = buf[p];
          if (d === 0x2c || d === 0x7d || d === 0x5d || d === 0x20 || d === 0x0a || d === 0x0d || d === 0x09 || d === 0x3a) break;
          p++;
        }
        if (p === a) bail();
      }
      if (depth === 0) return;
    }
  };
  /** Any JSON value, parsed by JSON.parse from its bytes. */
  const value = (): unknown => {
    const a = p;
    skipValue();
    return JSON.parse(utf8(a, p));
  };

  /** An anchor at p that is not a plain ASCII string (turnList interns those itself). */
  const anchor = (): number => {
    if (buf[p] === Q) return internDecoded(string()); // escapes, control bytes (string() rejects them), UTF-8
    const v = value() as AnchorValue;
    if (typeof v === "string") bail();
    checkValue(v, "anchor", true); // nesting and finite numbers, as validateRequest checks them
    rowValues.set(row, v);
    const k = canonicalJson(v);
    jsonMap ??= new Map();
    let id = jsonMap.get(k);
    if (id === undefined) {
      const kind: AnchorKind = v === null ? 4 : typeof v === "number" ? 2 : typeof v === "boolean" ? 3 : Array.isArray(v) ? 5 : 6;
      id = newId(kind, 0, -1, 0, v);
      jsonMap.set(k, id);
    }
    return id;
  };

  /** The turns array at p (its "["): one row per turn, straight into the columns. */
  const turnList = () => {
    const b = buf;
    let q = skipWs(b, p);
    if (b[q] !== 0x5b) bail();
    q = skipWs(b, q + 1);
    if (b[q] === 0x5d) bail(); // no turns: the ordinary path names it
    for (;;) {
      q = skipWs(b, q);
      if (b[q] !== 0x7b) bail();
      q++;
      if (row === cap) {
        cap *= 2;
        reward = growF64(reward, cap);
        invalid = growU8(invalid, cap);
        anchorId = growI32(anchorId, cap);
      }
      let seen = 0;
      let inv = 0;
      for (;;) {
        q = skipWs(b, q);
        if (b[q] !== Q) bail();
        // the key: "reward", "anchor" or "invalid"; anything else (another estimator's field,
        // an unknown field, an escaped key) is for the ordinary path
        let field = 0;
        if (q + 9 > n) bail(); // the four-byte reads below stay inside the buffer
        const w0 = dv.getInt32(q, true);
        const w1 = dv.getInt32(q + 4, true);
        if (w0 === KEY_REWARD_0 && w1 === KEY_REWARD_1) {
          field = 1;
          q += 8;
        } else if (w0 === KEY_ANCHOR_0 && w1 === KEY_ANCHOR_1) {
          field = 2;
          q += 8;
        } else if (w0 === KEY_INVALID_0 && w1 === KEY_INVALID_1 && b[q + 8] === Q) {
          field = 4;
          q += 9;
        } else bail();
        if (seen & field) bail(); // a duplicate key (JSON.parse keeps the last one)
        seen |= field;
        q = skipWs(b, q);
        if (b[q] !== 0x3a) bail();
        q = skipWs(b, q + 1);
        if (field === 1) {
          q = scanNumber(b, q);
          const v = scratch[0];
          if (q < 0 || !(v <= MAX_ABS_NUMBER && v >= -MAX_ABS_NUMBER)) bail();
          reward[row] = v;
        } else if (field === 2) {
          let id = -1;
          if (b[q] === Q) {
            // a string anchor: plain printable ASCII is interned by its bytes
            const e = scanPlain(b, dv, q + 1, n);
            if (e >= n) bail();
            if (e >= 0) {
              id = internPlain(q + 1, e, hashOut[0]);
              q = e + 1;
            }
          }
          if (id < 0) {
            p = q;
            id = anchor();
            q = p;
          }
          anchorId[row] = id;
        } else {
          if (q + 5 > n) bail();
          const w = dv.getInt32(q, true);
          if (w === WORD_TRUE) {
            inv = 1;
            q += 4;
          } else if (w === WORD_FALS && b[q + 4] === 0x65) {
            inv = 0;
            q += 5;
          } else bail();
        }
        q = skipWs(b, q);
        const c = b[q++];
        if (c === 0x7d) break;
        if (c !== 0x2c) bail();
      }
      if ((seen & 1) === 0) bail();
      if ((seen & 2) === 0) {
        if (absentId < 0) absentId = newId(0, 0, -1, 0, undefined);
        anchorId[row] = absentId;
      } else anchorCount++;
      if (seen & 4) invalidCount++;
      invalid[row] = inv;
      row++;
      q = skipWs(b, q);
      const c = b[q++];
      if (c === 0x5d) break;
      if (c !== 0x2c) bail();
    }
    p = q;
  };

  const literalBool = (): boolean => {
    const c = buf[p];
    if (c === 0x74 && latin1(p, p + 4) === "true") {
      p += 4;
      return true;
    }
    if (c === 0x66 && latin1(p, p + 5) === "false") {
      p += 5;
      return false;
    }
    return bail();
  };

  const trajectory = () => {
    expect(0x7b);
    if (nTraj === trajCap) {
      trajCap *= 2;
      trajTurnStart = growI32(trajTurnStart, trajCap + 1);
      trajGroup = growI32(trajGroup, trajCap);
    }
    const t = nTraj;
    trajGroup[t] = nGroups;
    let id: string | undefined;
    let idText = -1;
    let turnsStart = -1;
    let extra: { truncated?: boolean; envTag?: string } | undefined;
    do {
      key();
      if (keyIs("id")) {
        if (id !== undefined) bail();
        id = string();
        if (id === "") bail();
        idText = strStart;
      } else if (keyIs("turns")) {
        if (turnsStart >= 0) bail();
        turnsStart = row;
        turnList();
      } else if (keyIs("truncated")) {
        extra ??= {};
        if (extra.truncated !== undefined) bail();
        extra.truncated = literalBool();
      } else if (keyIs("envTag")) {
        extra ??= {};
        if (extra.envTag !== undefined) bail();
        extra.envTag = string();
      } else bail();
    } while (more(0x7d));
    if (id === undefined || turnsStart < 0) bail();
    trajTurnStart[t] = turnsStart;
    trajIds.push(id);
    if (nTraj === idCap2) {
      idCap2 *= 2;
      trajIdText = growI32(trajIdText, idCap2);
    }
    trajIdText[t] = idText;
    if (extra) trajExtra.set(t, extra);
    nTraj++;
  };

  const group = () => {
    expect(0x7b);
    if (nGroups === groupCap) {
      groupCap *= 2;
      groupTrajStart = growI32(groupTrajStart, groupCap + 1);
    }
    let uid: string | undefined;
    let trajStart = -1;
    do {
      key();
      if (keyIs("uid")) {
        if (uid !== undefined) bail();
        uid = string();
        if (uid === "") bail();
      } else if (keyIs("trajectories")) {
        if (trajStart >= 0) bail();
        trajStart = nTraj;
        expect(0x5b);
        ws();
        if (buf[p] === 0x5d) bail();
        do trajectory();
        while (more(0x5d));
      } else bail();
    } while (more(0x7d));
    if (uid === undefined || trajStart < 0) bail();
    groupTrajStart[nGroups] = trajStart;
    uids.push(uid);
    nGroups++;
  };

  const head: Record<string, unknown> = {};
  let sawGroups = false;
  expect(0x7b);
  do {
    key();
    if (keyIs("groups")) {
      if (sawGroups) bail();
      sawGroups = true;
      expect(0x5b);
      ws();
      if (buf[p] === 0x5d) bail();
      do group();
      while (more(0x5d));
    } else {
      const name = latin1(keyStart, keyEnd);
      if (name !== "estimator" && name !== "params" && name !== "rewardTransform" && name !== "output") bail();
      if (name in head) bail();
      head[name] = value();
    }
  } while (more(0x7d));
  ws();
  if (p !== n || !sawGroups) bail();
  groupTrajStart[nGroups] = nTraj;
  trajTurnStart[nTraj] = row;

  // unique uids and trajectory ids, as validateRequest requires
  if (new Set(uids).size !== uids.length || new Set(trajIds).size !== trajIds.length) bail();

  return {
    head,
    nGroups,
    nTraj,
    nTurns: row,
    uids,
    groupTrajStart: groupTrajStart.subarray(0, nGroups + 1),
    trajTurnStart: trajTurnStart.subarray(0, nTraj + 1),
    trajGroup: trajGroup.subarray(0, nTraj),
    trajIds,
    trajIdText: trajIdText.subarray(0, nTraj),
    trajExtra,
    reward: reward.subarray(0, row),
    invalid: invalid.subarray(0, row),
    invalidCount,
    anchorCount,
    anchorId: anchorId.subarray(0, row),
    idKind: idKind.subarray(0, nIds),
    idStart: idStart.subarray(0, nIds),
    idEnd: idEnd.subarray(0, nIds),
    idValue,
    nIds,
    rowValues,
    buf,
  };
}

/** A columnar FlatBatch over parsed columns; the turn fields the fast path does not read are absent on every turn. */
export function columnsFlat(c: ParsedColumns, withComponents: boolean): FlatBatch {
  const { nTurns, nTraj, nGroups, trajTurnStart, groupTrajStart } = c;
  const latin1 = (a: number, b: number) => c.buf.toString("latin1", a, b);
  /** Value of anchor id k (a string anchor is decoded from its bytes the first time). */
  const idVal = (k: number): AnchorValue | undefined => {
    if (c.idKind[k] === 1 && c.idValue[k] === undefined) c.idValue[k] = latin1(c.idStart[k], c.idEnd[k]);
    return c.idValue[k];
  };
  const perId = <T>(f: (k: number) => T): T[] => Array.from({ length: c.nIds }, (_, k) => f(k));
  const perRow = <T>(byId: T[]): T[] => {
    const out: T[] = new Array(nTurns);
    for (let r = 0; r < nTurns; r++) out[r] = byId[c.anchorId[r]];
    return out;
  };
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
      batch ??= materialise(c, idVal);
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
    trajIds: c.trajIds,
    withComponents,
    columnar: true,
    numeric: (field: NumericTurnField) => once("n:" + field, () => filled(NaN)),
    judgeScore: () => once("judge", () => filled(NaN)),
    toolResult: () => once("tool", () => new Uint8Array(nTurns)),
    anchorKeys: () => once("keys", () => perRow(perId((k) => anchorGroupKey(idVal(k))))),
    anchorTexts: () => once("texts", () => perRow(perId((k) => canonicalAnchorKey(idVal(k))))),
    anchorIds: () => c.anchorId,
    anchorKinds: () =>
      once("kinds", () => {
        const out = new Uint8Array(nTurns);
        for (let r = 0; r < nTurns; r++) out[r] = c.idKind[c.anchorId[r]];
        return out;
      }),
    agentKeys: () => once("agents", () => new Array<string>(nTurns).fill("")),
    turnTraj: () =>
      once("turnTraj", () => {
        const out = new Int32Array(nTurns);
        for (let i = 0; i < nTraj; i++) out.fill(i, trajTurnStart[i], trajTurnStart[i + 1]);
        return out;
      }),
  };
}

function materialise(c: ParsedColumns, idVal: (k: number) => AnchorValue | undefined): Batch {
  const groups: Group[] = new Array(c.nGroups);
  for (let g = 0; g < c.nGroups; g++) {
    const trajectories = [];
    for (let i = c.groupTrajStart[g]; i < c.groupTrajStart[g + 1]; i++) {
      const turns: Turn[] = [];
      for (let r = c.trajTurnStart[i]; r < c.trajTurnStart[i + 1]; r++) {
        const t: Turn = { reward: c.reward[r] };
        const k = c.anchorId[r];
        if (c.idKind[k] !== 0) t.anchor = c.rowValues.get(r) ?? idVal(k);
        t.invalid = c.invalid[r] === 1;
        turns.push(t);
      }
      trajectories.push({ id: c.trajIds[i], turns, ...c.trajExtra.get(i) });
    }
    groups[g] = { uid: c.uids[g], trajectories };
  }
  return { groups };
}

/**
 * The whole CLI request on the fast path: the response bytes (`JSON.stringify(response) + "\n"`),
 * or null for the ordinary path.
 */
export function fastCredit(buf: Buffer, options: RunCreditOptions = {}): Buffer[] | null {
  const c = parseRequestColumns(buf);
  if (c === null) return null;
  let spec: EstimatorSpec;
  let params: Record<string, unknown>;
  let output: "full" | "advantages";
  try {
    if (c.head.rewardTransform !== undefined) return null;
    const v = validateHead(c.head, (s) => {
      // a needed field missing on some turn: the ordinary path names it (or allows it, neededOn)
      for (const f of s.needs) {
        if (f === "reward") continue;
        if (f === "anchor" && c.anchorCount === c.nTurns) continue;
        if (f === "invalid" && c.invalidCount === c.nTurns) continue;
        bail();
      }
    });
    spec = v.spec;
    params = v.params;
    output = options.output ?? v.head.output ?? "full";
  } catch {
    return null;
  }
  let result: ReturnType<typeof spec.computeFlat>;
  try {
    result = spec.computeFlat(columnsFlat(c, output === "full"), params);
  } catch {
    return null; // e.g. a rowCopies entry naming no turn: the ordinary path gives the error
  }
  const cols = result.columns;
  if (!cols) return null;
  const adv = cols.advantages;
  for (let r = 0; r < adv.length; r++) if (!Number.isFinite(adv[r])) return null;
  return writeResponse(c.trajIds, c.trajTurnStart, cols, result.diagnostics, { buf: c.buf, start: c.trajIdText });
}

// ---------------------------------------------------------------- response bytes

const CHUNK = 1 << 22;
const MEMO_BITS = 12;
const MEMO_SLOTS = 1 << MEMO_BITS;
/** Words of a memo slot: the longest text of a double (25 bytes, "-0.0000012345678901234567") rounded up. */
const MEMO_WORDS = 7;
/** Longest JSON text of a double ("-0.0000012345678901234567") or an int32, plus a comma. */
const MAX_NUMBER = 26;

/**
 * `JSON.stringify({ trajectories, diagnostics }) + "\n"` from flat columns, where trajectory i is
 * `{ id, advantages: rows [start[i], start[i+1]), components: { name: rows } }`, written into
 * preallocated chunks: no per-trajectory arrays, no JSON string of the whole response.
 */
export function writeResponse(
  trajIds: string[],
  start: Int32Array,
  cols: ResultColumns,
  diagnostics: CreditDiagnostics,
  /** The ids' JSON text straight from the request bytes where `start[i] >= 0` (saves JSON.stringify). */
  rawIds?: { buf: Buffer; start: Int32Array },
): Buffer[] {
  const chunks: Buffer[] = [];
  let out = Buffer.allocUnsafe(CHUNK);
  let view = new DataView(out.buffer, out.byteOffset, out.length);
  let o = 0;
  const room = (k: number) => {
    if (o + k <= out.length) return;
    chunks.push(out.subarray(0, o));
    out = Buffer.allocUnsafe(Math.max(CHUNK, k));
    view = new DataView(out.buffer, out.byteOffset, out.length);
    o = 0;
  };
  const ascii = (s: string) => {
    room(s.length);
    for (let i = 0; i < s.length; i++) out[o++] = s.charCodeAt(i);
  };
  /** Bytes of fixed ASCII text at q of buf (room made by the caller); returns the end. */
  const put = (buf: Uint8Array, q: number, src: Uint8Array): number => {
    for (let i = 0; i < src.length; i++) buf[q++] = src[i];
    return q;
  };
  const text = (s: string) => {
    // any string (JSON.stringify output may hold non-ASCII characters): UTF-8; ASCII copied here
    room(s.length * 3);
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i);
      if (c >= 0x80) {
        o += out.write(s.slice(i), o, "utf8");
        return;
      }
      out[o++] = c;
    }
  };

  // shortest round-trip text of recent doubles, by their bits: values recur (returns, episode
  // scores, a group's step advantages), and finding the digits (shortestDouble, else String(x))
  // is the costly part of writing a double. The text is kept as bytes, MEMO_WORDS 4-byte words a
  // slot, and copied a word at a time (the up to 3 bytes past its end are overwritten by what
  // follows, or lie past the chunk's end: `room` asks for 4 more)
  const bits = new Float64Array(1);
  const words = new Uint32Array(bits.buffer);
  const memoLo = new Uint32Array(MEMO_SLOTS);
  const memoHi = new Uint32Array(MEMO_SLOTS);
  const memoLen = new Uint8Array(MEMO_SLOTS); // 0: empty
  const memoWords = new Int32Array(MEMO_SLOTS * MEMO_WORDS);
  const memoBytes = new Uint8Array(memoWords.buffer);

  /** One trajectory's rows [a, b) of a Float64Array column, as JSON.stringify writes them. */
  const f64 = (src: Float64Array, a: number, b: number) => {
    room((b - a) * MAX_NUMBER + 2 + 4);
    const buf = out;
    const dv = view;
    let q = o;
    buf[q++] = 0x5b; // [
    for (let r = a; r < b; r++) {
      if (r > a) buf[q++] = 0x2c;
      let v = src[r];
      if (v === (v | 0)) {
        // an int32 (-0 prints as 0, like JSON.stringify)
        if (v < 0) {
          buf[q++] = 0x2d;
          v = -v;
        }
        q = writeUint(buf, q, v);
        continue;
      }
      if (Number.isNaN(v) || v === Infinity || v === -Infinity) {
        // JSON.stringify: null
        buf[q++] = 0x6e;
        buf[q++] = 0x75;
        buf[q++] = 0x6c;
        buf[q++] = 0x6c;
        continue;
      }
      bits[0] = v;
      const lo = words[0];
      const hi = words[1];
      const h = Math.imul(lo ^ hi, 0x9e3779b1) >>> (32 - MEMO_BITS);
      const base = h * MEMO_WORDS;
      let len = memoLen[h];
      if (len === 0 || memoLo[h] !== lo || memoHi[h] !== hi) {
        const at = base * 4;
        len = shortestDouble(memoBytes, at, v);
        if (len === 0) {
          const s = String(v);
          len = s.length;
          for (let i = 0; i < len; i++) memoBytes[at + i] = s.charCodeAt(i);
        }
        memoLo[h] = lo;
        memoHi[h] = hi;
        memoLen[h] = len;
      }
      for (let k = 0; k < len; k += 4) dv.setInt32(q + k, memoWords[base + (k >> 2)], true);
      q += len;
    }
    buf[q++] = 0x5d; // ]
    o = q;
  };
  const i32 = (src: Int32Array, a: number, b: number) => {
    room((b - a) * 12 + 2);
    const buf = out;
    let q = o;
    buf[q++] = 0x5b;
    for (let r = a; r < b; r++) {
      if (r > a) buf[q++] = 0x2c;
      let v = src[r];
      if (v < 0) {
        buf[q++] = 0x2d;
        v = -v;
      }
      q = writeUint(buf, q, v);
    }
    buf[q++] = 0x5d;
    o = q;
  };
  const column = (src: ComponentArray, a: number, b: number) => {
    if (src instanceof Float64Array) f64(src, a, b);
    else if (src instanceof Int32Array) i32(src, a, b);
    else text(JSON.stringify(src.slice(a, b)));
  };

  // each component's `,"name":` (no comma before the first) as UTF-8 bytes
  const names = cols.components.map(([name], c) => Buffer.from((c > 0 ? "," : "") + JSON.stringify(name) + ":", "utf8"));
  const nComp = names.length;
  const trajClose = Buffer.from("}}", "latin1");
  const trajOpen = Buffer.from('{"id":', "latin1");
  const advOpen = Buffer.from(',"advantages":', "latin1");
  const compOpen = Buffer.from(nComp === 0 ? ',"components":{}}' : ',"components":{', "latin1");
  ascii('{"trajectories":[');
  for (let i = 0; i < trajIds.length; i++) {
    const raw = rawIds ? rawIds.start[i] : -1;
    if (raw >= 0) {
      // the id's JSON text is its bytes in quotes (plain ASCII: one byte per character)
      const len = trajIds[i].length;
      room(len + 10);
      const buf = out;
      let q = o;
      if (i > 0) buf[q++] = 0x2c;
      q = put(buf, q, trajOpen);
      buf[q++] = Q;
      const src = rawIds!.buf;
      for (let k = raw; k < raw + len; k++) buf[q++] = src[k];
      buf[q++] = Q;
      o = q;
    } else {
      if (i > 0) ascii(",");
      ascii('{"id":');
      text(JSON.stringify(trajIds[i]));
    }
    room(advOpen.length);
    o = put(out, o, advOpen);
    column(cols.advantages, start[i], start[i + 1]);
    room(compOpen.length);
    o = put(out, o, compOpen);
    if (nComp > 0) {
      for (let c = 0; c < nComp; c++) {
        room(names[c].length);
        o = put(out, o, names[c]);
        column(cols.components[c][1], start[i], start[i + 1]);
      }
      room(trajClose.length);
      o = put(out, o, trajClose);
    }
  }
  ascii('],"diagnostics":');
  text(JSON.stringify(diagnostics));
  ascii("}\n");
  chunks.push(out.subarray(0, o));
  return chunks;
}

// ---------------------------------------------------------------- shortest text of a double

/** Dekker's splitter, 2^27 + 1. */
const SPLIT = 134217729;
/** a * b exactly, as the rounded product plus `scratch[1]` (Dekker's two-product; no overflow or underflow here). */
function twoProduct(a: number, b: number): number {
  const p = a * b;
  const ca = SPLIT * a;
  const ah = ca - (ca - a);
  const al = a - ah;
  const cb = SPLIT * b;
  const bh = cb - (cb - b);
  const bl = b - bh;
  scratch[1] = ah * bh - p + ah * bl + al * bh + al * bl;
  return p;
}

const shortBits = new Float64Array(1);
const shortWords = new Uint32Array(shortBits.buffer);
const shortDigits = new Uint8Array(20);

/**
 * `String(v)` of a double v with 1e-6 <= |v| < 1e15 written as ASCII bytes at dst[at...]; returns
 * the length, or 0 where this does not decide it (the caller uses String(v)): a power of two
 * (its rounding interval is lopsided), an exact tie in a rounding, a 16-digit candidate above
 * 2^53 (not checkable with one division), or another magnitude.
 *
 * ECMAScript's Number::toString gives the fewest significant digits that read back as v, the
 * closest such to v. With n digits, the closest candidate is v rounded to n digits, computed
 * exactly from v * 10^k (an exact power of ten) as a two-product. A candidate D * 10^-k with
 * D <= 2^53 and k <= 22 reads back as the one correctly rounded division D / 10^k (what parsing
 * its text gives), so it is checked exactly. With n <= 15 at most one n-digit decimal lies in
 * v's rounding interval (its width is below 2.3e-16 |v|), so when the 15-digit candidate reads back,
 * its digits without trailing zeros are the shortest; else the 16-digit one if it reads back,
 * else the 17-digit one (17 digits always read back).
 */
export function shortestDouble(dst: Uint8Array, at: number, v: number): number {
  const a = v < 0 ? -v : v;
  if (!(a >= 1e-6 && a < 1e15)) return 0;
  shortBits[0] = a;
  if (shortWords[0] === 0 && (shortWords[1] & 0xfffff) === 0) return 0; // a power of two
  // k such that a * 10^k lies in [1e16, 1e17): a has 17 - k digits before the point
  // log10(a) from the binary exponent (log10(2) = 0.30103): off by at most one, fixed below
  let k = 16 - Math.floor((((shortWords[1] >>> 20) & 0x7ff) - 1023) * 0.30102999566398114);
  for (let tries = 0; ; tries++) {
    if (k < 2 || k > 22 || tries > 2) return 0;
    const p = twoProduct(a, POW10[k]);
    if (p < 1e16 || (p === 1e16 && scratch[1] < 0)) k++;
    else if (p >= 1e17) k--;
    else break;
  }
  let hi = 0; // the digits as hi * 10^lw + lo
  let lo = 0;
  let lw = 8;
  let n = 15;
  for (; n <= 17; n++) {
    const kn = k - 17 + n;
    const p = twoProduct(a, POW10[kn]);
    const pl = scratch[1];
    if (n < 17) {
      // D = p + pl rounded to an integer (p < 1e16: |pl| <= 1, p - r exact)
      let r = Math.round(p);
      const t = p - r + pl;
      if (t > 0.5) r += 1;
      else if (t < -0.5) r -= 1;
      else if (t === 0.5 || t === -0.5) return 0; // a tie (or too close to call)
      if (r >= POW10[n]) return 0; // rounded up to a power of ten
      if (r > 9007199254740992) return 0;
      if (r / POW10[kn] !== a) continue; // does not read back as a: one more digit
      hi = Math.floor(r / 1e8);
      lo = r - hi * 1e8;
      if (lo < 0) {
        lo += 1e8;
        hi -= 1;
      } else if (lo >= 1e8) {
        lo -= 1e8;
        hi += 1;
      }
      break;
    }
    // 17 digits: p >= 1e16 is an integer, D = p + round(pl)
    const r = Math.round(pl);
    const t = pl - r;
    if (t === 0.5 || t === -0.5) return 0;
    hi = Math.floor(p / 1e9);
    lo = p - hi * 1e9 + r;
    while (lo < 0) {
      lo += 1e9;
      hi -= 1;
    }
    while (lo >= 1e9) {
      lo -= 1e9;
      hi += 1;
    }
    lw = 9;
    if (hi < 1e7 || hi >= 1e8) return 0;
    break;
  }
  // digits: hi (at least one digit here) then lo on lw digits
  let hl = 0;
  for (let x = hi; x > 0; x = (x / 10) | 0) hl++;
  if (hl + lw !== n) return 0;
  for (let i = hl - 1, x = hi; i >= 0; i--) {
    const d = (x / 10) | 0;
    shortDigits[i] = x - d * 10;
    x = d;
  }
  for (let i = n - 1, x = lo; i >= hl; i--) {
    const d = (x / 10) | 0;
    shortDigits[i] = x - d * 10;
    x = d;
  }
  let nd = n;
  while (nd > 1 && shortDigits[nd - 1] === 0) nd--;
  // fixed notation (what Number::toString uses from 1e-6 to 1e21): pt digits before the point
  const pt = 17 - k;
  let q = at;
  if (v < 0) dst[q++] = 0x2d;
  if (pt >= nd) {
    for (let i = 0; i < nd; i++) dst[q++] = 0x30 + shortDigits[i];
    for (let i = nd; i < pt; i++) dst[q++] = 0x30;
  } else if (pt > 0) {
    for (let i = 0; i < pt; i++) dst[q++] = 0x30 + shortDigits[i];
    dst[q++] = 0x2e;
    for (let i = pt; i < nd; i++) dst[q++] = 0x30 + shortDigits[i];
  } else {
    dst[q++] = 0x30;
    dst[q++] = 0x2e;
    for (let i = pt; i < 0; i++) dst[q++] = 0x30;
    for (let i = 0; i < nd; i++) dst[q++] = 0x30 + shortDigits[i];
  }
  return q - at;
}

/** Decimal digits of a non-negative integer below 2^31 at q; returns the end. */
function writeUint(buf: Uint8Array, q: number, v: number): number {
  if (v < 10) {
    buf[q] = 0x30 + v;
    return q + 1;
  }
  let len = 1;
  for (let t = v; t >= 10; t = (t / 10) | 0) len++;
  let e = q + len;
  const end = e;
  while (v >= 10) {
    const d = (v / 10) | 0;
    buf[--e] = 0x30 + v - d * 10;
    v = d;
  }
  buf[--e] = 0x30 + v;
  return end;
}
