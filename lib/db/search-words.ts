// The search index's words (lib/db/trajectory-search.ts): a text's lowercase runs of Unicode letters
// and digits (\p{L}, \p{N}). A hand-written scanner instead of splitting on a Unicode-class regex:
// ASCII is classified by a table, other code points by the regex once each (cached), and a
// trajectory's distinct words are collected in a hash table over the text itself, so a word seen
// before costs no string. The same words as `text.toLowerCase().split(/[^\p{L}\p{N}]+/u)` (a test
// holds them equal on random Unicode text); about half the time on an ALFWorld step.

const WORD_CHAR = /[\p{L}\p{N}]/u;
/** ASCII letters and digits (the text is lowercased first, but a table is as cheap as a range test). */
const ASCII = new Uint8Array(128);
for (let c = 0; c < 128; c++) ASCII[c] = WORD_CHAR.test(String.fromCharCode(c)) ? 1 : 0;
const nonAscii = new Map<number, boolean>();

function isWordCodePoint(cp: number): boolean {
  let w = nonAscii.get(cp);
  if (w === undefined) {
    w = WORD_CHAR.test(String.fromCodePoint(cp));
    if (nonAscii.size < 65_536) nonAscii.set(cp, w);
  }
  return w;
}

/**
 * Calls `word(start, end)` for each word of `text` (already lowercased), as UTF-16 offsets. A
 * code point outside the BMP is one character (its two units); a lone surrogate is not a letter.
 */
function scan(text: string, word: (start: number, end: number) => void): void {
  const n = text.length;
  let start = -1;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    let w: boolean;
    let units = 1;
    if (c < 128) w = ASCII[c] === 1;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < n && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      w = isWordCodePoint(text.codePointAt(i)!);
      units = 2;
    } else w = isWordCodePoint(c);
    if (w) {
      if (start < 0) start = i;
    } else if (start >= 0) {
      word(start, i);
      start = -1;
    }
    i += units - 1;
  }
  if (start >= 0) word(start, n);
}

/** A text's lowercase words, in order, whatever their length. */
export function textWords(text: string): string[] {
  const lower = text.toLowerCase();
  const out: string[] = [];
  scan(lower, (a, b) => out.push(lower.slice(a, b)));
  return out;
}

/** The distinct words of `texts` at most `maxLength` UTF-16 units long, in order of first appearance. */
export function distinctWords(texts: readonly string[], maxLength: number): string[] {
  // one lowercased text: "\n" is no letter, so no word spans two texts
  const text = texts.join("\n").toLowerCase();
  const n = text.length;
  const out: string[] = [];
  // open addressing over (hash, offsets into `text`): a repeated word is compared in place, no string made
  let size = 1024;
  let slots = new Int32Array(size).fill(-1);
  let starts = new Int32Array(size);
  let lens = new Int32Array(size);
  let hashes = new Int32Array(size);
  let start = -1;
  let h = 0;
  for (let i = 0; i <= n; i++) {
    let w = false;
    let units = 1;
    if (i < n) {
      const c = text.charCodeAt(i);
      if (c < 128) w = ASCII[c] === 1;
      else if (c >= 0xd800 && c <= 0xdbff && i + 1 < n && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
        w = isWordCodePoint(text.codePointAt(i)!);
        units = 2;
      } else w = isWordCodePoint(c);
      if (w) {
        if (start < 0) (start = i), (h = 0x811c9dc5);
        h = Math.imul(h ^ c, 0x01000193);
        if (units === 2) h = Math.imul(h ^ text.charCodeAt(i + 1), 0x01000193);
        i += units - 1;
        continue;
      }
    }
    if (start < 0) continue;
    const len = i - start;
    const a = start;
    start = -1;
    if (len > maxLength) continue;
    let j = h & (size - 1);
    let found = false;
    for (let k = slots[j]; k >= 0; j = (j + 1) & (size - 1), k = slots[j]) {
      if (hashes[k] !== h || lens[k] !== len) continue;
      const s0 = starts[k];
      let x = 0;
      while (x < len && text.charCodeAt(s0 + x) === text.charCodeAt(a + x)) x++;
      if (x === len) {
        found = true;
        break;
      }
    }
    if (found) continue;
    const k = out.length;
    out.push(text.slice(a, i));
    starts[k] = a;
    lens[k] = len;
    hashes[k] = h;
    slots[j] = k;
    if (out.length * 2 > size) {
      size *= 2;
      slots = new Int32Array(size).fill(-1);
      const grow = (xs: Int32Array) => {
        const y = new Int32Array(size);
        y.set(xs);
        return y;
      };
      starts = grow(starts);
      lens = grow(lens);
      hashes = grow(hashes);
      for (let m = 0; m < out.length; m++) {
        let q = hashes[m] & (size - 1);
        while (slots[q] >= 0) q = (q + 1) & (size - 1);
        slots[q] = m;
      }
    }
  }
  return out;
}
