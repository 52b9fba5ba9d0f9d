// The CLI's fast path (cli/credit/fast-path.ts) against the ordinary one: for every request it
// takes, the response bytes are exactly JSON.stringify(runCredit(JSON.parse(text))) + "\n"; every
// request it does not take (bad, or outside its subset) returns null, so the CLI falls back.
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { fastCredit } from "../../cli/credit/fast-path";
import { parseRequestColumns } from "../../cli/credit/read/request";
import { shortestDouble } from "../../cli/credit/write/double";
import { writeResponse } from "../../cli/credit/write/response";
import { runCredit, type RunCreditOptions } from "../../lib/credit/index";
import type { CreditDiagnostics } from "../../lib/credit/result";

/** A number written with a chosen spelling (JSON.stringify cannot choose one). */
class Raw {
  constructor(readonly text: string) {}
}

/** JSON text of a value; Raw numbers as written; `indent` spaces out every level (like JSON.stringify's). */
function toJson(v: unknown, indent = "", at = ""): string {
  if (v instanceof Raw) return v.text;
  if (v === null || typeof v !== "object") return JSON.stringify(v);
  const nl = indent ? "\n" + at + indent : "";
  const end = indent ? "\n" + at : "";
  const sep = indent ? ": " : ":";
  if (Array.isArray(v)) return "[" + v.map((x) => nl + toJson(x, indent, at + indent)).join(",") + end + "]";
  return (
    "{" +
    Object.entries(v)
      .map(([k, x]) => nl + JSON.stringify(k) + sep + toJson(x, indent, at + indent))
      .join(",") +
    end +
    "}"
  );
}

/** The ordinary path's bytes, or null where it reports a bad request. */
function ordinary(text: string, options: RunCreditOptions = {}): string | null {
  let req: unknown;
  try {
    req = JSON.parse(text);
  } catch {
    return null;
  }
  try {
    return JSON.stringify(runCredit(req, options)) + "\n";
  } catch (e) {
    if ((e as Error).name === "CreditRequestError") return null;
    throw e;
  }
}

const fast = (text: string, options: RunCreditOptions = {}) => {
  const out = fastCredit(Buffer.from(text, "utf8"), options);
  return Array.isArray(out) ? Buffer.concat(out).toString("utf8") : null;
};

/** Rewards spelled many ways: integers, decimals, exponents, -0, long mantissas. */
const rewardArb = fc.oneof(
  fc.constantFrom(0, 1, -1, 0.5, 0.25, 1e-7, 123456789012345680000),
  fc.double({ min: -1e6, max: 1e6, noNaN: true }),
  fc
    .constantFrom("-0", "1.0", "1e0", "1E+2", "2.5e-3", "0.1000000000000000055511151231257827", "12345678901234567890", "-0.000", "3.14159265358979323846")
    .map((t) => new Raw(t)),
  fc.integer({ min: -1000, max: 1000 }).map((i) => new Raw(`${i}.${"0".repeat(Math.abs(i) % 4)}${Math.abs(i) % 10}`)),
);

/** Anchors of every JSON type, strings with escapes, U+0000 and UTF-8, and the typed look-alikes. */
const anchorArb = fc.oneof(
  fc.constantFrom("A", "B", "a room", "task 1 | P.../.... | goal", "", " ", "!"),
  fc.constantFrom("\u0041", "é", "日本", "😀", "tab\there", 'quo"te', "back\\slash", "\u0000", "\u0000s", "\u0000u", "1", "null", "true", '{"a":1}', "[1]"),
  fc.constantFrom(1, 1.0, -0, 2.5, null, true, false, { a: 1 }, { b: 2, a: 1 }, { a: 1, b: 2 }, [1, "a"], [], {}),
  fc.string({ maxLength: 6 }),
  fc.string({ unit: "binary", maxLength: 4 }),
);

const turnArb = fc.record({ reward: rewardArb, anchor: anchorArb, invalid: fc.boolean() }, { requiredKeys: ["reward"] });

const ESTIMATORS = ["grpo", "drgrpo", "rloo", "reinforcepp", "reinforcepp_baseline", "gigpo", "mars", "mtgrpo"] as const;

const requestArb = fc
  .record({
    estimator: fc.constantFrom(...ESTIMATORS),
    groups: fc.array(
      fc.array(
        fc.record({
          turns: fc.array(turnArb, { minLength: 1, maxLength: 5 }),
          truncated: fc.option(fc.boolean(), { nil: undefined }),
          envTag: fc.option(fc.constantFrom("x", "y"), { nil: undefined }),
        }),
        { minLength: 1, maxLength: 4 },
      ),
      { minLength: 1, maxLength: 3 },
    ),
    gigpo: fc.record({
      anchorMatch: fc.constantFrom("exact", "similarity"),
      perTrajectory: fc.boolean(),
      mode: fc.constantFrom("mean_std_norm", "mean_norm"),
      copies: fc.boolean(),
    }),
    output: fc.constantFrom(undefined, "full", "advantages"),
    indent: fc.constantFrom("", "", "  ", "\t"),
    idStyle: fc.constantFrom("plain", "unicode", "escaped"),
  })
  .map((r) => {
    const id = (s: string) => (r.idStyle === "plain" ? s : r.idStyle === "unicode" ? `é${s}` : `q"${s}\\`);
    const req: Record<string, unknown> = { estimator: r.estimator };
    if (r.estimator === "gigpo") {
      const { copies, ...p } = r.gigpo;
      req.params = copies ? { ...p, rowCopies: [[id("g0"), 0, 0, 2]] } : p;
    }
    if (r.output !== undefined) req.output = r.output;
    req.groups = r.groups.map((trajs, g) => ({
      uid: id(`g${g}`),
      trajectories: trajs.map((t, i) => {
        const out: Record<string, unknown> = { id: id(`g${g}t${i}`), turns: t.turns };
        if (t.truncated !== undefined) out.truncated = t.truncated;
        if (t.envTag !== undefined) out.envTag = t.envTag;
        return out;
      }),
    }));
    return { req, indent: r.indent };
  });

describe("CLI fast path", () => {
  it("writes exactly the ordinary path's bytes for every request it takes, and takes every good one of its subset", () => {
    let taken = 0;
    let bad = 0;
    fc.assert(
      fc.property(requestArb, fc.constantFrom<RunCreditOptions>({}, { output: "advantages" }, { output: "full" }), ({ req, indent }, options) => {
        const text = toJson(req, indent);
        const want = ordinary(text, options);
        const got = fast(text, options);
        if (want === null) {
          bad++;
          expect(got).toBeNull();
        } else {
          taken++;
          expect(got).toBe(want);
        }
      }),
      { numRuns: 600 },
    );
    expect(taken).toBeGreaterThan(400); // bad ones: whitening over < 2 tokens, a similarity-mode detail, ...
    expect(bad).toBeLessThan(200);
  });

  it("reads numbers exactly as JSON.parse does", () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.oneof(
            fc.double({ noNaN: true, noDefaultInfinity: true, min: -1e100, max: 1e100 }).map((x) => String(x)),
            fc
              .tuple(fc.integer({ min: -99999, max: 99999 }), fc.nat({ max: 10 ** 9 }), fc.integer({ min: 0, max: 12 }))
              .map(([i, f, z]) => `${i}.${"0".repeat(z)}${f}`),
            fc.tuple(fc.bigInt({ min: -(10n ** 25n), max: 10n ** 25n }), fc.integer({ min: -30, max: 30 })).map(([m, e]) => `${m}e${e}`),
          ),
          { minLength: 1, maxLength: 20 },
        ),
        (texts) => {
          const turns = texts.map((t) => `{"reward":${t},"anchor":"s"}`).join(",");
          const text = `{"estimator":"grpo","groups":[{"uid":"g","trajectories":[{"id":"t","turns":[${turns}]}]}]}`;
          const c = parseRequestColumns(Buffer.from(text));
          expect(c).not.toBeNull();
          texts.forEach((t, i) => {
            expect(Object.is(c!.reward[i], JSON.parse(t))).toBe(true);
          });
        },
      ),
      { numRuns: 300 },
    );
  });

  it("gives the same anchor the same group wherever its bytes lie and however it is spelled", () => {
    // string anchors are hashed four bytes at a time until a special byte: strings of ordinary
    // bytes around spaces, quotes, backslashes, control and non-ASCII bytes, at every alignment
    // (whitespace before the value), some sent with every character escaped as \uXXXX
    const charArb = fc.constantFrom("a", "b", "P", ".", "/", "|", " ", "!", "#", "~", '"', "\\", "\u0001", "\u001f", "é", "日", "\u007f");
    const anchorStr = fc.array(charArb, { maxLength: 13 }).map((cs) => cs.join(""));
    const escapeAll = (s: string) => `"${[...s].map((ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, "0")}`).join("")}"`;
    fc.assert(
      fc.property(
        fc.uniqueArray(anchorStr, { minLength: 1, maxLength: 4 }),
        fc.array(fc.tuple(fc.nat(), fc.nat({ max: 3 }), fc.boolean(), fc.integer({ min: 0, max: 2 })), { minLength: 2, maxLength: 24 }),
        fc.constantFrom("gigpo", "mars"),
        (pool, picks, estimator) => {
          const turns = picks.map(([k, pad, escaped, reward]) => {
            const a = pool[k % pool.length];
            return `{"reward":${reward},"anchor":${" ".repeat(pad)}${escaped ? escapeAll(a) : JSON.stringify(a)}}`;
          });
          const half = Math.ceil(turns.length / 2);
          const trajs = [turns.slice(0, half), turns.slice(half)]
            .filter((t) => t.length > 0)
            .map((t, i) => `{"id":"t${i}","turns":[${t.join(",")}]}`)
            .join(",");
          const text = `{"estimator":"${estimator}","groups":[{"uid":"g","trajectories":[${trajs}]}]}`;
          expect(fast(text)).toBe(ordinary(text));
        },
      ),
      { numRuns: 400 },
    );
  });

  it("writes a double's digits as String(x) does, or leaves it to String(x)", () => {
    // random bit patterns from 1e-7 to 1e16 (both signs), short decimals, 15-17 digit values,
    // discounted returns, and the neighbours of powers of ten
    const out = new Uint8Array(32);
    let handled = 0;
    let total = 0;
    const check = (x: number) => {
      total++;
      const n = shortestDouble(out, 0, x);
      if (n === 0) return;
      handled++;
      expect(Buffer.from(out.subarray(0, n)).toString("latin1"), String(x)).toBe(String(x));
    };
    const bits = new Float64Array(1);
    const words = new Uint32Array(bits.buffer);
    fc.assert(
      fc.property(fc.nat(), fc.nat({ max: 0xfffff }), fc.integer({ min: 999, max: 1077 }), fc.boolean(), fc.nat({ max: 16 }), (lo, mant, exp, neg, digits) => {
        words[0] = lo;
        words[1] = mant | (exp << 20) | (neg ? 0x80000000 : 0);
        check(bits[0]);
        check(Number(bits[0].toPrecision(1 + digits)));
        check((lo % 1e9) / 10 ** digits);
        check(0.95 ** (lo % 300) * (mant % 7));
      }),
      { numRuns: 20_000 },
    );
    for (let e = -7; e <= 16; e++) {
      const p = 10 ** e;
      for (const x of [p, p * (1 + 2 ** -52), p * (1 - 2 ** -53), 9.5 * p, (10 - 2 ** -49) * p, 2 ** (e * 3)]) {
        check(x);
        check(-x);
      }
    }
    expect(handled / total).toBeGreaterThan(0.6); // most do not fall back (some lie outside 1e-6..1e15)
  });

  it("writes every double as JSON.stringify does, across the 4 MB chunks of the response", () => {
    // the longest texts (25 bytes) and every length down to 1, repeated (the text memo) and new,
    // enough of them that the response spans several chunks
    const special = [
      -0.0000012345678901234567,
      -1.2345678901234567e-308,
      1.2345678901234568e21,
      -123456789012345680000,
      5e-324,
      -0,
      0.1,
      1e-7,
      0.000001,
      2 ** 31,
      -(2 ** 31),
      2 ** 53,
    ];
    const n = 600_000;
    const adv = new Float64Array(n);
    let s = 7;
    for (let i = 0; i < n; i++) {
      s = (Math.imul(s, 1103515245) + 12345) | 0;
      adv[i] = i % 5 === 0 ? special[(s >>> 8) % special.length] : i % 3 === 0 ? (s % 1000) / 7 : s / 3 ** ((s >>> 4) % 40);
    }
    adv[n - 1] = Number.NaN; // JSON.stringify: null
    const start = new Int32Array(n / 6 + 1).map((_, i) => i * 6);
    const ids = Array.from({ length: n / 6 }, (_, i) => `t${i}`);
    const diagnostics = { counts: { turns: n } } as unknown as CreditDiagnostics;
    const chunks = writeResponse(ids, start, { advantages: adv, components: [["x", adv]] }, diagnostics);
    expect(chunks.length).toBeGreaterThan(3);
    const want = {
      trajectories: ids.map((id, i) => ({
        id,
        advantages: Array.from(adv.subarray(i * 6, i * 6 + 6)),
        components: { x: Array.from(adv.subarray(i * 6, i * 6 + 6)) },
      })),
      diagnostics,
    };
    expect(Buffer.concat(chunks).toString("latin1")).toBe(JSON.stringify(want) + "\n");
  });

  it("returns null (the ordinary path reports or handles it) outside its subset and for bad requests", () => {
    const good = '{"estimator":"gigpo","groups":[{"uid":"g","trajectories":[{"id":"t","turns":[{"reward":1,"anchor":"a"}]}]}]}';
    expect(fast(good)).toBe(ordinary(good));
    const variants = [
      good.replace('"reward":1', '"reward":1,"reward":2'), // duplicate key: JSON.parse keeps the last
      good.replace('"reward":1', '"reward":NaN'),
      good.replace('"reward":1', '"reward":1e400'),
      good.replace('"reward":1', '"reward":1e101'),
      good.replace('"reward":1', '"reward":"1"'),
      good.replace('"reward":1', '"reward":01'),
      good.replace('"reward":1,', ""),
      good.replace(',"anchor":"a"', ""), // gigpo needs an anchor
      good.replace('"anchor":"a"', '"anchor":"a","value":1'), // another estimator's field
      good.replace('"anchor":"a"', '"anchor":"a","extra":1'),
      good.replace('"anchor":"a"', '"anchor":"a","invalid":null'),
      good.replace('"anchor":"a"', '"anchor":"a\u0001"'), // a raw control character
      good.replace('"anchor":"a"', '"\\u0061nchor":"a"'), // an escaped key
      good.replace('"anchor":"a"', `"anchor":${"[".repeat(70)}${"]".repeat(70)}`),
      good.replace('"id":"t"', '"id":""'),
      good.replace('"turns":[{"reward":1,"anchor":"a"}]', '"turns":[]'),
      good.replace('{"estimator"', '{"rewardTransform":{"kind":"gated","tau":0.5},"estimator"'),
      good.replace('"gigpo"', '"gae"'),
      good.replace('"gigpo"', '"nope"'),
      good.replace('"groups"', '"params":{"gama":1},"groups"'),
      good.replace("]}]}]}", ']},{"id":"t","turns":[{"reward":0,"anchor":"a"}]}]}]}'), // duplicate trajectory id
      good.replace("]}]}]}", ']},{"id":"\\u0074","turns":[{"reward":0,"anchor":"a"}]}]}]}'), // the same id, escaped
      "\ufeff" + good,
      good + "x",
      good.slice(0, -1),
      "",
      "[]",
    ];
    for (const v of variants) expect(fast(v), v.slice(0, 120)).toBeNull();
  });
});

describe("trajectory ids kept as bytes", () => {
  // 3,000 plain ids checked for uniqueness by their bytes' hashes: a late duplicate in another group declines
  const traj = (id: string) => `{"id":"${id}","turns":[{"reward":1,"anchor":"a"}]}`;
  const request = (ids: string[]) =>
    `{"estimator":"gigpo","groups":[{"uid":"g0","trajectories":[${ids.slice(0, 1500).map(traj).join(",")}]},{"uid":"g1","trajectories":[${ids.slice(1500).map(traj).join(",")}]}]}`;
  const ids = Array.from({ length: 3000 }, (_, i) => `traj-${i}`);
  it("answers as the ordinary path when all differ, and declines a duplicate", () => {
    expect(fast(request(ids))).toBe(ordinary(request(ids)));
    const dup = request([...ids.slice(0, 2999), "traj-17"]);
    expect(fastCredit(Buffer.from(dup))).toMatchObject({ path: "groups[1].trajectories[1499].id", why: "a duplicate trajectory id" });
    expect(ordinary(dup)).toBeNull();
  });
});

describe("CLI: fast and ordinary paths agree", () => {
  const cwd = path.resolve(__dirname, "../..");
  const cli = path.join(cwd, "scripts/credit-cli.mjs");
  const run = (input: string, env: Record<string, string> = {}, args: string[] = []) =>
    spawnSync(process.execPath, [cli, ...args], { cwd, input, env: { ...process.env, ...env } });
  it("runs with a code cache it wrote for this bundle, and replaces one that is not for it", () => {
    const cacheFile = path.join(cwd, "dist/credit-cli.cjs.v8cache");
    const good = JSON.stringify({
      estimator: "grpo",
      groups: [
        {
          uid: "g",
          trajectories: [
            { id: "a", turns: [{ reward: 1 }] },
            { id: "b", turns: [{ reward: 0 }] },
          ],
        },
      ],
    });
    const want = ordinary(good);
    expect(run(good).stdout.toString()).toBe(want); // builds the bundle if stale; writes the cache if missing
    const stamp = () =>
      createHash("sha1")
        .update(readFileSync(path.join(cwd, "dist/credit-cli.cjs"), "utf8"))
        .update(process.version)
        .digest();
    expect(readFileSync(cacheFile).subarray(0, 20).equals(stamp())).toBe(true);
    // a cache of another bundle (wrong stamp) is not used, and the run rewrites it
    writeFileSync(cacheFile, Buffer.alloc(4096, 7));
    expect(run(good).stdout.toString()).toBe(want);
    expect(readFileSync(cacheFile).subarray(0, 20).equals(stamp())).toBe(true);
    expect(run(good).stdout.toString()).toBe(want); // and the rewritten one is accepted
  });

  it("same bytes with TURNLENS_CREDIT_FAST=0, anchors of different types in different groups", () => {
    const req = {
      estimator: "gigpo",
      params: { invalidPenalty: 0 },
      groups: [
        {
          uid: "g",
          trajectories: [
            {
              id: "a",
              turns: [
                { reward: 0, anchor: 1 },
                { reward: 0, anchor: null },
                { reward: 1, anchor: { a: 1 } },
              ],
            },
            {
              id: "b",
              turns: [
                { reward: 0, anchor: "1" },
                { reward: 0, anchor: "null" },
                { reward: 0, anchor: '{"a":1}' },
              ],
            },
          ],
        },
      ],
    };
    for (const args of [[], ["--advantages-only"]]) {
      const f = run(JSON.stringify(req), {}, args);
      const o = run(JSON.stringify(req), { TURNLENS_CREDIT_FAST: "0" }, args);
      expect(f.status).toBe(0);
      expect(f.stdout.toString()).toBe(o.stdout.toString());
    }
    const res = JSON.parse(run(JSON.stringify(req)).stdout.toString());
    const [a, b] = res.trajectories.map((t: { components: { anchorGroup: number[] } }) => t.components.anchorGroup);
    expect(a).toEqual([0, 1, 2]);
    expect(b).toEqual([3, 4, 5]); // six groups, none shared across types
    expect(res.diagnostics.anchorGroups.count).toBe(6);
  });
});
