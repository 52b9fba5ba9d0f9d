// Anchors are keyed by JSON type and value: the number 1 and the string "1", null and "null",
// {"a":1} and the string '{"a":1}' (same canonical text) are different states and never share a
// GiGPO anchor group, in exact and in similarity matching; equal values of one type still do.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { anchorGroupKey, anchorKind, canonicalAnchorKey } from "../../lib/credit/anchor-key";
import { buildAnchorGroups, flatten } from "../../lib/credit/index";
import { estimators } from "../../lib/credit/registry";
import type { AnchorValue, Batch } from "../../lib/credit/types";

/** Look-alikes: values whose canonical text equals another type's, and equal values spelled differently. */
const LOOKALIKES: AnchorValue[] = [1, "1", 1.0, null, "null", true, "true", { a: 1 }, '{"a":1}', { a: 1.0 }, [1], "[1]", "", "\u0000", "\u0000u", "A"];

const batchArb: fc.Arbitrary<Batch> = fc
  .array(
    fc.array(fc.array(fc.record({ reward: fc.constantFrom(0, 1), anchor: fc.constantFrom(...LOOKALIKES) }), { minLength: 1, maxLength: 6 }), {
      minLength: 1,
      maxLength: 4,
    }),
    {
      minLength: 1,
      maxLength: 3,
    },
  )
  .map((groups) => ({ groups: groups.map((trajs, g) => ({ uid: `g${g}`, trajectories: trajs.map((turns, i) => ({ id: `g${g}t${i}`, turns })) })) }));

/** Every pair of rows of one uid: same anchor group iff same JSON type and same canonical text. */
function checkGroups(batch: Batch, groupOf: ArrayLike<number>) {
  let r = 0;
  for (const g of batch.groups) {
    const rows: { kind: number; text: string; group: number }[] = [];
    for (const t of g.trajectories)
      for (const turn of t.turns) rows.push({ kind: anchorKind(turn.anchor), text: canonicalAnchorKey(turn.anchor), group: groupOf[r++] });
    for (const a of rows)
      for (const b of rows) {
        const same = a.kind === b.kind && a.text === b.text;
        if ((a.group === b.group) !== same) throw new Error(`${JSON.stringify(a)} vs ${JSON.stringify(b)}`);
      }
  }
}

describe("anchors of different JSON types", () => {
  it("have different grouping keys; equal values of one type have equal keys", () => {
    expect(anchorGroupKey(1)).not.toBe(anchorGroupKey("1"));
    expect(anchorGroupKey(null)).not.toBe(anchorGroupKey("null"));
    expect(anchorGroupKey({ a: 1 })).not.toBe(anchorGroupKey('{"a":1}'));
    expect(anchorGroupKey(undefined)).not.toBe(anchorGroupKey(""));
    expect(anchorGroupKey(undefined)).not.toBe(anchorGroupKey("\u0000u"));
    expect(anchorGroupKey("\u0000")).not.toBe(anchorGroupKey(undefined));
    expect(anchorGroupKey({ b: [1.0, 2], a: null })).toBe(anchorGroupKey(JSON.parse('{"a":null,"b":[1,2e0]}')));
    expect(anchorGroupKey("plain")).toBe("plain"); // a string is its own key
    const keys = LOOKALIKES.map(anchorGroupKey);
    const distinct = new Set(LOOKALIKES.map((a) => `${anchorKind(a)}|${canonicalAnchorKey(a)}`));
    expect(new Set(keys).size).toBe(distinct.size);
  });

  it("never share a GiGPO anchor group (exact matching), and the estimator's anchorGroup component agrees", () => {
    fc.assert(
      fc.property(batchArb, (batch) => {
        const flat = flatten(batch);
        checkGroups(batch, buildAnchorGroups(flat, flat.anchorIds()).groupOf);
        checkGroups(batch, buildAnchorGroups(flat, flat.anchorKeys()).groupOf); // the string-key form (lib/db's)
        const res = estimators.gigpo.compute(batch, {});
        checkGroups(
          batch,
          res.trajectories.flatMap((t) => t.components.anchorGroup as number[]),
        );
      }),
      { numRuns: 300 },
    );
  });

  it("never share a group in similarity matching either (same text, ratio 1)", () => {
    fc.assert(
      fc.property(batchArb, (batch) => {
        const res = estimators.gigpo.compute(batch, { anchorMatch: "similarity", similarityThreshold: 0.95 });
        const groupOf = res.trajectories.flatMap((t) => t.components.anchorGroup as number[]);
        let r = 0;
        for (const g of batch.groups) {
          const rows = g.trajectories.flatMap((t) => t.turns.map((turn) => ({ kind: anchorKind(turn.anchor), group: groupOf[r++] })));
          for (const a of rows) for (const b of rows) if (a.group === b.group) expect(a.kind).toBe(b.kind);
        }
      }),
      { numRuns: 200 },
    );
  });

  it('the issue\'s cases: 1 / "1", {"a":1} / \'{"a":1}\', null / "null" in one uid give six groups', () => {
    const batch: Batch = {
      groups: [
        {
          uid: "g",
          trajectories: [
            {
              id: "a",
              turns: [
                { reward: 0, anchor: 1 },
                { reward: 0, anchor: { a: 1 } },
                { reward: 1, anchor: null },
              ],
            },
            {
              id: "b",
              turns: [
                { reward: 0, anchor: "1" },
                { reward: 0, anchor: '{"a":1}' },
                { reward: 0, anchor: "null" },
              ],
            },
          ],
        },
      ],
    };
    const res = estimators.gigpo.compute(batch, {});
    expect(res.diagnostics.anchorGroups!.count).toBe(6);
    expect(res.trajectories.map((t) => t.components.anchorGroupSize)).toEqual([
      [1, 1, 1],
      [1, 1, 1],
    ]);
    // one type, two spellings: one group
    const same = estimators.gigpo.compute(
      {
        groups: [
          {
            uid: "g",
            trajectories: [
              { id: "a", turns: [{ reward: 0, anchor: { a: 1, b: 2 } }] },
              { id: "b", turns: [{ reward: 1, anchor: { b: 2, a: 1.0 } }] },
            ],
          },
        ],
      },
      {},
    );
    expect(same.diagnostics.anchorGroups!.count).toBe(1);
  });
});
