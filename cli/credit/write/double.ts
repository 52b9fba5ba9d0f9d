// The shortest round-trip text of a double, as String(x) writes it, straight into bytes (for the
// common magnitudes; the caller uses String(x) where this does not decide), and integers' digits.

const POW10 = [1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22];

/** Dekker's splitter, 2^27 + 1. */
const SPLIT = 134217729;
/** Low part of the last `twoProduct` (a typed array: a module-level double would be boxed on every store). */
const low = new Float64Array(1);

/** a * b exactly, as the rounded product plus `low[0]` (Dekker's two-product; no overflow or underflow here). */
function twoProduct(a: number, b: number): number {
  const p = a * b;
  const ca = SPLIT * a;
  const ah = ca - (ca - a);
  const al = a - ah;
  const cb = SPLIT * b;
  const bh = cb - (cb - b);
  const bl = b - bh;
  low[0] = ah * bh - p + ah * bl + al * bh + al * bl;
  return p;
}

const shortBits = new Float64Array(1);
const shortWords = new Uint32Array(shortBits.buffer);
/** The digits found by `digitsOf`; `split` holds them as hi * 10^lw + lo. */
const shortDigits = new Uint8Array(20);
const split = new Float64Array(3); // hi, lo, lw

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
  const k = scaleOf(a);
  if (k < 0) return 0;
  const n = digitsOf(a, k);
  if (n === 0 || !spellDigits(n)) return 0;
  let nd = n;
  while (nd > 1 && shortDigits[nd - 1] === 0) nd--;
  return writeFixed(dst, at, v < 0, nd, 17 - k);
}

/** k such that a * 10^k lies in [1e16, 1e17): a has 17 - k digits before the point; -1 outside 2..22. */
function scaleOf(a: number): number {
  // log10(a) from the binary exponent (log10(2) = 0.30103): off by at most one, fixed below
  let k = 16 - Math.floor((((shortWords[1] >>> 20) & 0x7ff) - 1023) * 0.30102999566398114);
  for (let tries = 0; ; tries++) {
    if (k < 2 || k > 22 || tries > 2) return -1;
    const p = twoProduct(a, POW10[k]);
    if (p < 1e16 || (p === 1e16 && low[0] < 0)) k++;
    else if (p >= 1e17) k--;
    else return k;
  }
}

/** The number of significant digits (15, 16 or 17) of a's shortest text, its digits in `split`; 0 if undecided. */
function digitsOf(a: number, k: number): number {
  for (let n = 15; n <= 16; n++) {
    const kn = k - 17 + n;
    const p = twoProduct(a, POW10[kn]);
    // D = p + low rounded to an integer (p < 1e16: |low| <= 1, p - r exact)
    let r = Math.round(p);
    const t = p - r + low[0];
    if (t > 0.5) r += 1;
    else if (t < -0.5) r -= 1;
    else if (t === 0.5 || t === -0.5) return 0; // a tie (or too close to call)
    if (r >= POW10[n]) return 0; // rounded up to a power of ten
    if (r > 9007199254740992) return 0;
    if (r / POW10[kn] !== a) continue; // does not read back as a: one more digit
    const hi = Math.floor(r / 1e8);
    splitDigits(hi, r - hi * 1e8, 8);
    return n;
  }
  return digits17(a, k);
}

/** 17 digits: p = a * 10^k >= 1e16 is an integer, D = p + round(low). */
function digits17(a: number, k: number): number {
  const p = twoProduct(a, POW10[k]);
  const r = Math.round(low[0]);
  const t = low[0] - r;
  if (t === 0.5 || t === -0.5) return 0;
  const hi = Math.floor(p / 1e9);
  splitDigits(hi, p - hi * 1e9 + r, 9);
  if (split[0] < 1e7 || split[0] >= 1e8) return 0;
  return 17;
}

/** D = hi * 10^lw + lo into `split` with 0 <= lo < 10^lw. */
function splitDigits(hi: number, lo: number, lw: number): void {
  const unit = POW10[lw];
  while (lo < 0) {
    lo += unit;
    hi -= 1;
  }
  while (lo >= unit) {
    lo -= unit;
    hi += 1;
  }
  split[0] = hi;
  split[1] = lo;
  split[2] = lw;
}

/** `split` as n decimal digits in `shortDigits`; false when hi has the wrong length. */
function spellDigits(n: number): boolean {
  const hi = split[0];
  const lw = split[2];
  let hl = 0;
  for (let x = hi; x > 0; x = (x / 10) | 0) hl++;
  if (hl + lw !== n) return false;
  for (let i = hl - 1, x = hi; i >= 0; i--) {
    const d = (x / 10) | 0;
    shortDigits[i] = x - d * 10;
    x = d;
  }
  for (let i = n - 1, x = split[1]; i >= hl; i--) {
    const d = (x / 10) | 0;
    shortDigits[i] = x - d * 10;
    x = d;
  }
  return true;
}

/** Fixed notation (what Number::toString uses from 1e-6 to 1e21): nd digits, pt of them before the point. */
function writeFixed(dst: Uint8Array, at: number, neg: boolean, nd: number, pt: number): number {
  let q = at;
  if (neg) dst[q++] = 0x2d;
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
export function writeUint(buf: Uint8Array, q: number, v: number): number {
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
