// A small BM25 retriever (Robertson & Zaragoza 2009) shared by the shop's product search and
// the search-QA tool. WebShop and Search-R1 use BM25 (Pyserini) too; this is the same
// scoring with k1 = 1.2, b = 0.75, without stemming.

const STOPWORDS = new Set(
  "a an and are as at be but by for from has have i in is it its me my need of on or that the their this to was what when where which who whom whose with would you your".split(
    " ",
  ),
);

/** Lower-case, stemmed word tokens without stopwords ("Men's T-Shirts" -> ["men", "s", "t", "shirt"]). */
export function tokenize(text: string): string[] {
  return (text.toLowerCase().match(/[a-z0-9]+/g) ?? []).filter((t) => !STOPWORDS.has(t)).map(stem);
}

/**
 * A deliberately tiny suffix stripper so "founder"/"founded" and "headquarters"/
 * "headquartered" meet; applied to documents and queries alike, so an exact word always
 * matches itself.
 */
export function stem(t: string): string {
  if (t.length > 5 && t.endsWith("ing")) return t.slice(0, -3);
  if (t.length > 4 && (t.endsWith("ed") || t.endsWith("er"))) return t.slice(0, -2);
  if (t.length > 3 && t.endsWith("s") && !t.endsWith("ss")) return t.slice(0, -1);
  return t;
}

export class Bm25Index {
  private readonly postings = new Map<string, { doc: number; tf: number }[]>();
  private readonly lengths: number[];
  private readonly avgLength: number;

  constructor(
    docs: readonly string[],
    private readonly k1 = 1.2,
    private readonly b = 0.75,
  ) {
    this.lengths = docs.map((d, i) => {
      const tokens = tokenize(d);
      const tf = new Map<string, number>();
      for (const t of tokens) tf.set(t, (tf.get(t) ?? 0) + 1);
      for (const [t, n] of tf) {
        let list = this.postings.get(t);
        if (!list) {
          list = [];
          this.postings.set(t, list);
        }
        list.push({ doc: i, tf: n });
      }
      return tokens.length;
    });
    this.avgLength = this.lengths.reduce((a, b) => a + b, 0) / Math.max(1, docs.length);
  }

  /** Indices of the best documents (score > 0), best first; ties keep document order. */
  search(query: string, k: number): number[] {
    const scores = new Map<number, number>();
    const n = this.lengths.length;
    for (const term of new Set(tokenize(query))) {
      const list = this.postings.get(term);
      if (!list) continue;
      const idf = Math.log(1 + (n - list.length + 0.5) / (list.length + 0.5));
      for (const { doc, tf } of list) {
        const norm = tf + this.k1 * (1 - this.b + (this.b * this.lengths[doc]) / this.avgLength);
        scores.set(doc, (scores.get(doc) ?? 0) + (idf * tf * (this.k1 + 1)) / norm);
      }
    }
    return [...scores]
      .sort((x, y) => y[1] - x[1] || x[0] - y[0])
      .slice(0, k)
      .map(([doc]) => doc);
  }
}
