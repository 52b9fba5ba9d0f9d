// Invariants (fast-check) and loop-vs-fast comparisons against plain reference loops.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ESTIMATOR_IDS, estimators } from "../../lib/credit/registry";
import type { Batch } from "../../lib/credit/types";
import { batchArb, simpleBatchArb } from "./arbitraries";
import { gigpoLoop, grpoLoop } from "./reference";

const close = (a: number, b: number, tol = 1e-7) => Math.abs(a - b) <= tol * Math.max(1, Math.abs(b));

function byId(batch: Batch, id: string, params: Record<string, unknown> = {}) {
  const res = estimators[id as keyof typeof estimators].compute(batch, params);
  return Object.fromEntries(res.trajectories.map((t) => [t.id, t.advantages]));
}

/** Estimators that whiten over the batch's valid tokens with their default parameters. */
const WHITENING = new Set(["reinforcepp", "reinforcepp_baseline", "gae", "mars"]);
const validTokens = (batch: Batch) => batch.groups.flatMap((g) => g.trajectories.flatMap((t) => t.turns.map((x) => x.tokens ?? 1))).reduce((a, b) => a + b, 0);

/** byId, or null where the README's convention raises: whitening over <= 1 valid token. */
function byIdOrDegenerate(batch: Batch, id: string) {
  if (WHITENING.has(id) && validTokens(batch) <= 1) {
    expect(() => byId(batch, id)).toThrow(/needs at least 2, got [01]/);
    return null;
  }
  return byId(batch, id);
}

describe("invariants", () => {
  it("permuting the trajectories of a group permutes the output (every estimator)", () => {
    fc.assert(
      fc.property(batchArb, fc.nat(), (batch, seed) => {
        const permuted: Batch = {
          groups: batch.groups.map((g, gi) => {
            const t = [...g.trajectories];
            // deterministic Fisher-Yates from the seed
            let s = seed + gi;
            for (let i = t.length - 1; i > 0; i--) {
              s = (s * 1103515245 + 12345) % 2147483648;
              const j = s % (i + 1);
              [t[i], t[j]] = [t[j], t[i]];
            }
            return { ...g, trajectories: t };
          }),
        };
        for (const id of ESTIMATOR_IDS) {
          const a = byIdOrDegenerate(batch, id);
          const b = byIdOrDegenerate(permuted, id);
          if (a === null || b === null) continue;
          for (const k of Object.keys(a)) {
            a[k].forEach((x, i) => {
              if (!close(x, b[k][i])) throw new Error(`${id} ${k}[${i}]: ${x} vs ${b[k][i]}`);
            });
          }
        }
      }),
      { numRuns: 60 },
    );
  });

  it("GRPO advantages of a group sum to ~0 over its trajectories", () => {
    fc.assert(
      fc.property(simpleBatchArb, (batch) => {
        const a = byId(batch, "grpo");
        for (const g of batch.groups) {
          if (g.trajectories.length < 2) continue;
          const s = g.trajectories.reduce((acc, t) => acc + a[t.id][0], 0);
          expect(Math.abs(s)).toBeLessThan(1e-9);
        }
      }),
      { numRuns: 200 },
    );
  });

  it("GiGPO with all anchors distinct equals its episode part", () => {
    fc.assert(
      fc.property(simpleBatchArb, fc.constantFrom("mean_std_norm", "mean_norm"), (batch, mode) => {
        let k = 0;
        const distinct: Batch = {
          groups: batch.groups.map((g) => ({
            ...g,
            trajectories: g.trajectories.map((t) => ({ ...t, turns: t.turns.map((x) => ({ ...x, anchor: `s${k++}` })) })),
          })),
        };
        const res = estimators.gigpo.compute(distinct, { mode });
        for (const t of res.trajectories) {
          expect(t.advantages).toEqual(t.components.episode);
          expect(t.components.step.every((x) => x === 0)).toBe(true);
        }
      }),
      { numRuns: 200 },
    );
  });

  it("every estimator: one finite advantage and one entry per component per turn", () => {
    fc.assert(
      fc.property(batchArb, (batch) => {
        for (const id of ESTIMATOR_IDS) {
          if (byIdOrDegenerate(batch, id) === null) continue;
          const res = estimators[id].compute(batch, {});
          res.trajectories.forEach((t, i) => {
            const n = batch.groups.flatMap((g) => g.trajectories)[i].turns.length;
            expect(t.advantages).toHaveLength(n);
            expect(t.advantages.every(Number.isFinite)).toBe(true);
            for (const c of Object.values(t.components)) expect(c).toHaveLength(n);
          });
        }
      }),
      { numRuns: 60 },
    );
  });
});

describe("loop vs fast", () => {
  it("GRPO matches the dictionary loop", () => {
    fc.assert(
      fc.property(simpleBatchArb, (batch) => {
        const fast = byId(batch, "grpo");
        const loop = grpoLoop(batch);
        for (const k of Object.keys(loop))
          loop[k].forEach((x, i) => {
            expect(close(fast[k][i], x, 1e-12)).toBe(true);
          });
      }),
      { numRuns: 300 },
    );
  });

  it("GiGPO matches the core_gigpo.py-style loop in every mode", () => {
    fc.assert(
      fc.property(
        simpleBatchArb,
        fc.record({
          gamma: fc.constantFrom(0.5, 0.95, 1),
          omega: fc.constantFrom(0, 0.5, 1),
          mode: fc.constantFrom("mean_std_norm" as const, "mean_norm" as const),
          invalidPenalty: fc.constantFrom(0, 0.1),
          perTrajectory: fc.boolean(),
          epsilon: fc.constant(1e-6),
        }),
        (batch, p) => {
          const res = estimators.gigpo.compute(batch, p);
          const loop = gigpoLoop(batch, p);
          for (const t of res.trajectories) {
            const ref = loop[t.id];
            t.advantages.forEach((x, i) => {
              if (!close(x, ref.adv[i], 1e-9)) throw new Error(`${t.id}[${i}] ${x} vs ${ref.adv[i]} (${JSON.stringify(p)})`);
              expect(close(t.components.episode[i] as number, ref.ep[i], 1e-9)).toBe(true);
              expect(close(t.components.step[i] as number, ref.step[i], 1e-9)).toBe(true);
            });
          }
        },
      ),
      { numRuns: 400 },
    );
  });
});
