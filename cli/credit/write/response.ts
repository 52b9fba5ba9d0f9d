// The response bytes from flat result columns: `JSON.stringify({ trajectories, diagnostics }) +
// "\n"`, where trajectory i is `{ id, advantages: rows [start[i], start[i+1]), components }`,
// written into preallocated chunks: no per-trajectory arrays, no JSON string of the whole response.
import type { ComponentArray, CreditDiagnostics, ResultColumns } from "../../../lib/credit/result";
import { shortestDouble, writeUint } from "./double";

const CHUNK = 1 << 22;
const MEMO_BITS = 12;
const MEMO_SLOTS = 1 << MEMO_BITS;
/** Words of a memo slot: the longest text of a double (25 bytes, "-0.0000012345678901234567") rounded up. */
const MEMO_WORDS = 7;
/** Longest JSON text of a double ("-0.0000012345678901234567") or an int32, plus a comma. */
const MAX_NUMBER = 26;
const Q = 0x22;

const TRAJ_OPEN = Buffer.from('{"id":', "latin1");
const ADV_OPEN = Buffer.from(',"advantages":', "latin1");
const TRAJ_CLOSE = Buffer.from("}}", "latin1");

/** The ids' JSON text straight from the request bytes [start[i], end[i]) where `start[i] >= 0` (plain ASCII; saves JSON.stringify). */
export interface RawIds {
  buf: Buffer;
  start: Int32Array;
  end: Int32Array;
}

/** `trajIds[i]`: the id where it is not in `rawIds` (it may be undefined where it is). */
export function writeResponse(
  trajIds: readonly (string | undefined)[],
  start: Int32Array,
  cols: ResultColumns,
  diagnostics: CreditDiagnostics,
  rawIds?: RawIds,
): Buffer[] {
  const w = new ResponseWriter();
  // each component's `,"name":` (no comma before the first) as UTF-8 bytes
  const names = cols.components.map(([name], c) => Buffer.from((c > 0 ? "," : "") + JSON.stringify(name) + ":", "utf8"));
  const compOpen = Buffer.from(names.length === 0 ? ',"components":{}}' : ',"components":{', "latin1");
  w.ascii('{"trajectories":[');
  for (let i = 0; i < trajIds.length; i++) {
    if (rawIds && rawIds.start[i] >= 0) w.rawId(i, rawIds.buf, rawIds.start[i], rawIds.end[i]);
    else w.id(i, trajIds[i] as string);
    const a = start[i];
    const b = start[i + 1];
    w.bytes(ADV_OPEN);
    w.column(cols.advantages, a, b);
    w.bytes(compOpen);
    if (names.length === 0) continue;
    for (let c = 0; c < names.length; c++) {
      w.bytes(names[c]);
      w.column(cols.components[c][1], a, b);
    }
    w.bytes(TRAJ_CLOSE);
  }
  w.ascii('],"diagnostics":');
  w.text(JSON.stringify(diagnostics));
  w.ascii("}\n");
  return w.finish();
}

/** Chunks of output bytes, with the memo of recent doubles' text. */
class ResponseWriter {
  private readonly chunks: Buffer[] = [];
  private out = Buffer.allocUnsafe(CHUNK);
  private view = new DataView(this.out.buffer, this.out.byteOffset, this.out.length);
  private o = 0;
  private readonly memo = new DoubleMemo();

  finish(): Buffer[] {
    this.chunks.push(this.out.subarray(0, this.o));
    return this.chunks;
  }

  /** At least k bytes free at `o`. */
  private room(k: number): void {
    if (this.o + k <= this.out.length) return;
    this.chunks.push(this.out.subarray(0, this.o));
    this.out = Buffer.allocUnsafe(Math.max(CHUNK, k));
    this.view = new DataView(this.out.buffer, this.out.byteOffset, this.out.length);
    this.o = 0;
  }

  ascii(s: string): void {
    this.room(s.length);
    for (let i = 0; i < s.length; i++) this.out[this.o++] = s.charCodeAt(i);
  }

  bytes(src: Uint8Array): void {
    this.room(src.length);
    const { out } = this;
    let q = this.o;
    for (let i = 0; i < src.length; i++) out[q++] = src[i];
    this.o = q;
  }

  /** Any string (JSON.stringify output may hold non-ASCII characters): UTF-8; ASCII copied here. */
  text(s: string): void {
    this.room(s.length * 3);
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i);
      if (c >= 0x80) {
        this.o += this.out.write(s.slice(i), this.o, "utf8");
        return;
      }
      this.out[this.o++] = c;
    }
  }

  /** `{"id":<id>` (with the comma before every trajectory but the first). */
  id(i: number, id: string): void {
    this.ascii(i > 0 ? ',{"id":' : '{"id":');
    this.text(JSON.stringify(id));
  }

  /** `{"id":<id>` from the id's plain ASCII bytes raw[at, end) in the request. */
  rawId(i: number, raw: Buffer, at: number, end: number): void {
    this.room(end - at + 10);
    const { out } = this;
    let q = this.o;
    if (i > 0) out[q++] = 0x2c;
    for (let k = 0; k < TRAJ_OPEN.length; k++) out[q++] = TRAJ_OPEN[k];
    out[q++] = Q;
    for (let k = at; k < end; k++) out[q++] = raw[k];
    out[q++] = Q;
    this.o = q;
  }

  column(src: ComponentArray, a: number, b: number): void {
    if (src instanceof Float64Array) this.f64(src, a, b);
    else if (src instanceof Int32Array) this.i32(src, a, b);
    else this.text(JSON.stringify(src.slice(a, b)));
  }

  /** Rows [a, b) of a Float64Array column, as JSON.stringify writes them (NaN and infinities: null). */
  private f64(src: Float64Array, a: number, b: number): void {
    this.room((b - a) * MAX_NUMBER + 2 + 4); // 4 more: the memo copies whole words
    const { out, view, memo } = this;
    // the memo's look-up written out here, not called: this loop runs once per double
    const { bits, words, lo: memoLo, hi: memoHi, len: memoLen, text } = memo;
    let q = this.o;
    out[q++] = 0x5b; // [
    for (let r = a; r < b; r++) {
      if (r > a) out[q++] = 0x2c;
      const v = src[r];
      if (v === (v | 0)) {
        q = writeInt(out, q, v); // -0 prints as 0, like JSON.stringify
        continue;
      }
      if (!Number.isFinite(v)) {
        q = writeNull(out, q);
        continue;
      }
      bits[0] = v;
      const lo = words[0];
      const hi = words[1];
      const h = Math.imul(lo ^ hi, 0x9e3779b1) >>> (32 - MEMO_BITS);
      let len = memoLen[h];
      if (len === 0 || memoLo[h] !== lo || memoHi[h] !== hi) len = memo.fill(h, lo, hi, v);
      const base = h * MEMO_WORDS;
      for (let k = 0; k < len; k += 4) view.setInt32(q + k, text[base + (k >> 2)], true);
      q += len;
    }
    out[q++] = 0x5d; // ]
    this.o = q;
  }

  private i32(src: Int32Array, a: number, b: number): void {
    this.room((b - a) * 12 + 2);
    const { out } = this;
    let q = this.o;
    out[q++] = 0x5b;
    for (let r = a; r < b; r++) {
      if (r > a) out[q++] = 0x2c;
      q = writeInt(out, q, src[r]);
    }
    out[q++] = 0x5d;
    this.o = q;
  }
}

function writeInt(out: Uint8Array, q: number, v: number): number {
  if (v < 0) {
    out[q++] = 0x2d;
    v = -v;
  }
  return writeUint(out, q, v);
}

function writeNull(out: Uint8Array, q: number): number {
  out[q] = 0x6e;
  out[q + 1] = 0x75;
  out[q + 2] = 0x6c;
  out[q + 3] = 0x6c;
  return q + 4;
}

/**
 * Shortest round-trip text of recent doubles, by their bits: values recur (returns, episode
 * scores, a group's step advantages), and finding the digits (shortestDouble, else String(x)) is
 * the costly part of writing a double. The text is kept as bytes, MEMO_WORDS 4-byte words a slot,
 * and copied a word at a time (the up to 3 bytes past its end are overwritten by what follows, or
 * lie past the chunk's end: the writer asks for 4 more).
 */
class DoubleMemo {
  readonly bits = new Float64Array(1);
  readonly words = new Uint32Array(this.bits.buffer);
  /** Per slot: the double's bits, its text's length (0: empty) and its text. */
  readonly lo = new Uint32Array(MEMO_SLOTS);
  readonly hi = new Uint32Array(MEMO_SLOTS);
  readonly len = new Uint8Array(MEMO_SLOTS);
  readonly text = new Int32Array(MEMO_SLOTS * MEMO_WORDS);
  private readonly textBytes = new Uint8Array(this.text.buffer);

  /** Slot h's text made for v (the double whose bits are lo, hi); returns its length. */
  fill(h: number, lo: number, hi: number, v: number): number {
    const at = h * MEMO_WORDS * 4;
    let len = shortestDouble(this.textBytes, at, v);
    if (len === 0) {
      const s = String(v);
      len = s.length;
      for (let i = 0; i < len; i++) this.textBytes[at + i] = s.charCodeAt(i);
    }
    this.lo[h] = lo;
    this.hi[h] = hi;
    this.len[h] = len;
    return len;
  }
}
