// The search index's word scanner (lib/db/search-words.ts) against the definition it replaces: a
// text's words are `text.toLowerCase().split(/[^\p{L}\p{N}]+/u)` without empty strings, on random
// text drawn from letters and digits of many scripts, astral code points, lone surrogates, case
// mappings that change a string's length, combining marks and separators.
import { describe, expect, it } from "vitest";
import { distinctWords, textWords } from "@/lib/db/search-words";

const byRegex = (text: string) =>
  text
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter(Boolean);

const PIECES = [
  "a",
  "Z",
  "q9",
  "é",
  "É",
  "ß",
  "ẞ",
  "İ",
  "Σ",
  "σ",
  "ς",
  "ǅ",
  "ǈ",
  "ﬁ",
  "Ω",
  "٣",
  "漢字",
  "ー",
  "〇",
  "Ⅻ",
  "①",
  "½",
  "𝐀",
  "𝟘",
  "😀",
  "\ud800",
  "\udc00",
  "\u0301",
  "\u200d",
  "-",
  " ",
  "\n",
  "_",
  ".",
  "'",
  "search[laptop]",
  "café",
  "42",
];

function rng(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe("search words", () => {
  const r = rng(11);
  const text = () => Array.from({ length: Math.floor(r() * 40) }, () => PIECES[Math.floor(r() * PIECES.length)]).join("");

  it("gives a text's words exactly as the Unicode-class split does (5,000 random texts)", () => {
    for (let i = 0; i < 5000; i++) {
      const t = text();
      expect(textWords(t), JSON.stringify(t)).toEqual(byRegex(t));
    }
  });

  it("gives several texts' distinct words up to a length, in order of first appearance (3,000 random sets)", () => {
    for (let i = 0; i < 3000; i++) {
      const texts = Array.from({ length: 1 + Math.floor(r() * 4) }, text);
      const max = 1 + Math.floor(r() * 6);
      const want = [...new Set(texts.flatMap(byRegex).filter((w) => w.length <= max))];
      expect(distinctWords(texts, max), JSON.stringify(texts)).toEqual(want);
    }
  });

  it("keeps every distinct word of a text with thousands of them (its table grows)", () => {
    const words = Array.from({ length: 5000 }, (_, i) => `w${i.toString(36)}`);
    expect(distinctWords([words.join(" "), words.slice(0, 100).join(" ")], 64)).toEqual(words);
  });
});
