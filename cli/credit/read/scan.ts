// Byte-level JSON scanning shared by the request readers: whitespace, numbers read exactly as
// JSON.parse reads them, plain strings hashed four bytes at a time, and a cursor for the
// structural parts (keys, commas, nested values). Any byte the fast path does not take declines.

/** A request the fast path does not take, with the field where it stopped and why. */
export class Declined extends Error {
  constructor(
    readonly path: string,
    readonly why: string,
  ) {
    super(`${path}: ${why}`);
  }
}

export const Q = 0x22; // "
export const BS = 0x5c; // backslash

const POW10 = [1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22];

/** Four bytes of ASCII text as the little-endian int32 `DataView.getInt32(at, true)` reads. */
export function word(s: string): number {
  return s.charCodeAt(0) | (s.charCodeAt(1) << 8) | (s.charCodeAt(2) << 16) | (s.charCodeAt(3) << 24);
}

/** JSON whitespace skipped from q (a read past the end is undefined: not whitespace). */
export function skipWs(b: Uint8Array, q: number): number {
  for (;;) {
    const c = b[q];
    if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) q++;
    else return q;
  }
}

// The second results of scanNumber (the value) and scanPlain (the hash) go through typed arrays:
// a double, or an int32 beyond the small-integer range, stored in a module variable is boxed anew
// on every store, one box per turn and anchor.
/** Value of the last `scanNumber`. */
export const numberOut = new Float64Array(1);
/** Hash of the last `scanPlain`. */
export const hashOut = new Int32Array(1);

/**
 * The JSON number at q, exactly as JSON.parse reads it, into `numberOut[0]`; returns its end, or
 * -1 when the bytes there are not a JSON number.
 */
export function scanNumber(b: Buffer, q: number): number {
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
  if (c === 0x65 || c === 0x45) return scanExponent(b, a, q);
  if (digits <= 15 && frac <= 22) {
    // an exact integer mantissa and an exact power of ten: one correctly rounded division
    // (Clinger's fast path), the same double JSON.parse gives
    const v = frac === 0 ? mant : mant / POW10[frac];
    numberOut[0] = neg ? -v : v;
  } else numberOut[0] = Number(b.toString("latin1", a, q));
  return q;
}

/** The rest of a number from its `e` at q (the number started at a): `Number` reads it. */
function scanExponent(b: Buffer, a: number, q: number): number {
  let c = b[++q];
  if (c === 0x2b || c === 0x2d) c = b[++q];
  if (!(c >= 0x30 && c <= 0x39)) return -1;
  do c = b[++q];
  while (c >= 0x30 && c <= 0x39);
  numberOut[0] = Number(b.toString("latin1", a, q));
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
export function scanPlain(b: Uint8Array, dv: DataView, a: number, n: number): number {
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

/**
 * Where a reader is in the request: group g, its trajectory t, that trajectory's turn i (-1 above
 * that level) and the field being read, so that a decline names the field as validation does.
 */
export class Place {
  g = -1;
  t = -1;
  i = -1;
  field = "";

  path(field = this.field): string {
    let p = this.g < 0 ? "" : `groups[${this.g}]`;
    if (this.t >= 0) p += `.trajectories[${this.t}]`;
    if (this.i >= 0) p += `.turns[${this.i}]`;
    if (field) p += p ? `.${field}` : field;
    return p || "request";
  }
}

/** The structural side of a request's bytes: a position, keys, separators and whole values. */
export class Cursor {
  readonly n: number;
  readonly dv: DataView;
  p = 0;
  /** Bytes of the last key read by `key`. */
  keyStart = 0;
  keyEnd = 0;
  /** Bytes [strStart, strEnd) of the last `string` / `stringSpan` when it was plain (its JSON text is its bytes in quotes); strStart -1: not plain. */
  strStart = -1;
  strEnd = -1;
  readonly at = new Place();

  constructor(readonly buf: Buffer) {
    this.n = buf.length;
    this.dv = new DataView(buf.buffer, buf.byteOffset, buf.length);
  }

  /** Stop here: the request is for the ordinary path. `field` overrides the place's field. */
  decline(why: string, field?: string): never {
    throw new Declined(this.at.path(field), why);
  }

  latin1(a: number, b: number): string {
    return this.buf.toString("latin1", a, b);
  }

  ws(): void {
    this.p = skipWs(this.buf, this.p);
  }

  expect(c: number): void {
    this.ws();
    if (this.buf[this.p] !== c) this.decline(`expected ${String.fromCharCode(c)}`);
    this.p++;
  }

  /** After a member or element: true if another follows (a comma), false at the closing `close`. */
  more(close: number): boolean {
    this.ws();
    const c = this.buf[this.p++];
    if (c === 0x2c) return true;
    if (c === close) return false;
    return this.decline(`expected , or ${String.fromCharCode(close)}`);
  }

  /** An object key of plain ASCII (no escapes) into keyStart / keyEnd; p after the colon. */
  key(): void {
    this.ws();
    const { buf, n } = this;
    if (buf[this.p] !== Q) this.decline("expected a key");
    const a = ++this.p;
    let p = a;
    while (p < n) {
      const c = buf[p];
      if (c === Q) break;
      if (c === BS || c < 0x20 || c >= 0x80) this.decline("a key with escapes or non-ASCII bytes");
      p++;
    }
    if (p >= n) this.decline("a key that does not end");
    this.keyStart = a;
    this.keyEnd = p;
    this.p = p + 1;
    this.expect(0x3a);
    this.ws();
  }

  keyIs(s: string): boolean {
    const a = this.keyStart;
    if (this.keyEnd - a !== s.length) return false;
    for (let i = 0; i < s.length; i++) if (this.buf[a + i] !== s.charCodeAt(i)) return false;
    return true;
  }

  keyText(): string {
    return this.latin1(this.keyStart, this.keyEnd);
  }

  /** A JSON string value (p at its quote), decoded. */
  string(): string {
    return this.stringSpan() ?? this.latin1(this.strStart, this.strEnd);
  }

  /**
   * A JSON string value (p at its quote): null when it is plain (its bytes are strStart..strEnd,
   * no string made), else the decoded string.
   */
  stringSpan(): string | null {
    const { buf, n } = this;
    if (buf[this.p] !== Q) this.decline("expected a string");
    const a = this.p + 1;
    let p = a;
    let plain = true;
    while (p < n) {
      const c = buf[p];
      if (c === Q) break;
      if (c === BS) {
        plain = false;
        p += 2;
        continue;
      }
      if (c < 0x20) this.decline("a control character in a string");
      if (c >= 0x80) plain = false;
      p++;
    }
    if (p >= n) this.decline("a string that does not end");
    this.p = p + 1;
    this.strStart = plain ? a : -1;
    this.strEnd = plain ? p : -1;
    return plain ? null : (JSON.parse(buf.toString("utf8", a - 1, p + 1)) as string);
  }

  /** true / false at p. */
  literalBool(): boolean {
    const { buf, p } = this;
    if (buf[p] === 0x74 && this.latin1(p, p + 4) === "true") {
      this.p += 4;
      return true;
    }
    if (buf[p] === 0x66 && this.latin1(p, p + 5) === "false") {
      this.p += 5;
      return false;
    }
    return this.decline("expected a boolean");
  }

  /** Any JSON value (p at its first byte), parsed by JSON.parse from its bytes. */
  value(): unknown {
    const a = this.p;
    this.skipValue();
    try {
      return JSON.parse(this.buf.toString("utf8", a, this.p));
    } catch {
      return this.decline("not a JSON value");
    }
  }

  /** Skips any JSON value (p at its first byte); `value` has JSON.parse check it. */
  private skipValue(): void {
    const { buf, n } = this;
    let depth = 0;
    for (;;) {
      this.ws();
      if (this.p >= n) this.decline("a value that does not end");
      const c = buf[this.p];
      if (c === Q) this.skipString();
      else if (c === 0x7b || c === 0x5b) {
        depth++;
        this.p++;
        continue;
      } else if (c === 0x7d || c === 0x5d) {
        if (depth === 0) this.decline("expected a value");
        depth--;
        this.p++;
      } else if (c === 0x2c || c === 0x3a) {
        if (depth === 0) this.decline("expected a value");
        this.p++;
        continue;
      } else this.skipToken();
      if (depth === 0) return;
    }
  }

  private skipString(): void {
    const { buf, n } = this;
    let p = this.p + 1;
    while (p < n && buf[p] !== Q) p += buf[p] === BS ? 2 : 1;
    if (p >= n) this.decline("a string that does not end");
    this.p = p + 1;
  }

  /** A number or literal: up to the next separator. */
  private skipToken(): void {
    const { buf, n } = this;
    const a = this.p;
    let p = a;
    while (p < n) {
      const d = buf[p];
      if (d === 0x2c || d === 0x7d || d === 0x5d || d === 0x20 || d === 0x0a || d === 0x0d || d === 0x09 || d === 0x3a) break;
      p++;
    }
    if (p === a) this.decline("expected a value");
    this.p = p;
  }
}
