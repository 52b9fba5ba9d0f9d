// fast-check generators of batches carrying every turn field, so any estimator can run on them.
import fc from "fast-check";
import type { AnchorValue, Batch, Turn } from "../../lib/credit/types";

const small = fc.constantFrom(0, 0.5, 1, -1, 0.25);
const anchor: fc.Arbitrary<AnchorValue> = fc.oneof(
  fc.constantFrom<AnchorValue>("A", "B", "C", "D"),
  fc.constantFrom<AnchorValue>({ x: 1, y: 2 }, { y: 2, x: 1.0 }, [1, "a"]),
  // same canonical text, different JSON types: never one anchor group
  fc.constantFrom<AnchorValue>(1, "1", null, "null", '{"x":1,"y":2}'),
);

export const turnArb: fc.Arbitrary<Turn> = fc.record({
  reward: small,
  anchor,
  invalid: fc.boolean(),
  agent: fc.constantFrom("p1", "p2"),
  value: fc.double({ min: -1, max: 1, noNaN: true }),
  q1: fc.double({ min: -1, max: 1, noNaN: true }),
  q2: fc.double({ min: -1, max: 1, noNaN: true }),
  v2: fc.double({ min: -1, max: 1, noNaN: true }),
  infoGain: fc.oneof(fc.constant(0), fc.double({ min: -0.5, max: 0.5, noNaN: true })),
  judgeScore: fc.oneof(fc.constant(null), small),
  segment: fc.constantFrom(0, 1),
  tokens: fc.integer({ min: 0, max: 4 }),
  toolResult: fc.boolean(),
  highValue: fc.double({ min: -1, max: 1, noNaN: true }),
});

/** A batch of 1-3 groups, 1-5 trajectories each, 1-6 turns each, with unique ids. */
export const batchArb: fc.Arbitrary<Batch> = fc
  .array(fc.array(fc.array(turnArb, { minLength: 1, maxLength: 6 }), { minLength: 1, maxLength: 5 }), { minLength: 1, maxLength: 3 })
  .map((groups) => ({
    groups: groups.map((trajs, g) => ({
      uid: `g${g}`,
      trajectories: trajs.map((turns, i) => ({ id: `g${g}t${i}`, turns })),
    })),
  }));

/** Rewards-and-anchors batches for the loop-vs-fast comparisons. */
export const simpleBatchArb: fc.Arbitrary<Batch> = fc
  .array(
    fc.array(
      fc.array(fc.record({ reward: small, anchor: fc.constantFrom<AnchorValue>("A", "B", "C", 1, "1", null, "null"), invalid: fc.boolean() }), {
        minLength: 1,
        maxLength: 8,
      }),
      { minLength: 1, maxLength: 6 },
    ),
    { minLength: 1, maxLength: 4 },
  )
  .map((groups) => ({
    groups: groups.map((trajs, g) => ({ uid: `g${g}`, trajectories: trajs.map((turns, i) => ({ id: `g${g}t${i}`, turns })) })),
  }));
