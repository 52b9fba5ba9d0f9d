// G-RA reward transform, token broadcasting, canonical anchor keys.
import { describe, expect, it } from "vitest";
import { anchorGroupKey, canonicalAnchorKey } from "../../lib/credit/anchor-key";
import { runCredit } from "../../lib/credit/index";
import { applyRewardTransform } from "../../lib/credit/reward-transform";
import { broadcastToTokens } from "../../lib/credit/tokens";
import { rewards } from "./helpers";

describe("gated reward accumulation (G-RA)", () => {
  const batch = rewards({ g: { a: [0.2, 0.3, 1], b: [0.2, 0.5] } });
  it("immediate rewards count only when the outcome (last turn) reward >= tau", () => {
    const { batch: out, stats } = applyRewardTransform(batch, { kind: "gated", tau: 1, fields: ["reward"] });
    expect(out.groups[0].trajectories[0].turns.map((t) => t.reward)).toEqual([0.2, 0.3, 1]);
    expect(out.groups[0].trajectories[1].turns.map((t) => t.reward)).toEqual([0, 0.5]);
    expect(stats.gateOpenShare).toBe(0.5);
    expect(batch.groups[0].trajectories[1].turns[0].reward).toBe(0.2); // input untouched
  });
  it("composes with any estimator through the request", () => {
    const res = runCredit({ estimator: "drgrpo", rewardTransform: { kind: "gated", tau: 1 }, groups: batch.groups });
    // scores after gating: a 1.5, b 0.5 -> mean 1
    expect(res.trajectories[0].advantages).toEqual([0.5, 0.5, 0.5]);
    expect(res.trajectories[1].advantages).toEqual([-0.5, -0.5]);
    expect(res.diagnostics.rewardTransform).toEqual({ kind: "gated", tau: 1, gateOpenShare: 0.5 });
  });
  it("can gate judge scores and info gains", () => {
    const b = {
      groups: [
        {
          uid: "g",
          trajectories: [
            {
              id: "a",
              turns: [
                { reward: 0, judgeScore: 0.7, infoGain: 0.1 },
                { reward: 0, judgeScore: null },
                { reward: 0, judgeScore: 1 },
              ],
            },
          ],
        },
      ],
    };
    const out = applyRewardTransform(b, { kind: "gated", tau: 0.5, fields: ["judgeScore", "infoGain"] }).batch;
    const turns = out.groups[0].trajectories[0].turns;
    expect(turns.map((t) => t.judgeScore)).toEqual([0, null, 1]);
    expect(turns[0].infoGain).toBe(0);
  });
});

describe("broadcastToTokens", () => {
  it("each response token gets its turn's advantage; observation and padding tokens (-1) get 0", () => {
    const out = broadcastToTokens([1.5, -2], Int32Array.from([-1, 0, 0, -1, -1, 1, 1, -1]));
    expect(Array.from(out)).toEqual([0, 1.5, 1.5, 0, 0, -2, -2, 0]);
    expect(out).toBeInstanceOf(Float32Array);
  });
  it("rejects an index outside the turns", () => {
    expect(() => broadcastToTokens([1], [0, 1])).toThrow(/tokenTurnIndex\[1\]/);
  });
});

describe("canonicalAnchorKey", () => {
  it("equal states give equal keys whatever the key order or number formatting", () => {
    const a = JSON.parse('{"pos":[1.0,2],"inv":{"key":true,"gold":10},"room":"hall"}');
    const b = JSON.parse('{"room":"hall","inv":{"gold":1e1,"key":true},"pos":[1,2.00]}');
    expect(canonicalAnchorKey(a)).toBe(canonicalAnchorKey(b));
    expect(canonicalAnchorKey(-0)).toBe(canonicalAnchorKey(0));
    expect(canonicalAnchorKey({ a: [1, 2] })).not.toBe(canonicalAnchorKey({ a: [2, 1] }));
    expect(canonicalAnchorKey("plain text")).toBe("plain text");
    // the text forgets the type (a string is its own text); grouping keys by type too, so an
    // environment's canonical string and the same state sent as a JSON object are different
    // anchors (test/credit/anchor-types.test.ts)
    expect(canonicalAnchorKey('{"a":[1,{"b":null}]}')).toBe(canonicalAnchorKey({ a: [1, { b: null }] }));
    expect(anchorGroupKey('{"a":[1,{"b":null}]}')).not.toBe(anchorGroupKey({ a: [1, { b: null }] }));
  });
});
