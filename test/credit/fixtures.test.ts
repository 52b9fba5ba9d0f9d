// Golden request/response pairs (test/credit/fixtures/golden.json). The expected advantages of the
// GiGPO and GRPO cases come from implementations independent of lib/credit (the Python port, the
// loop references; see generate.ts and each case's advantagesFrom). A change here means the
// semantics changed: re-derive, then regenerate.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { runCredit } from "../../lib/credit/index";

const golden = JSON.parse(readFileSync(new URL("./fixtures/golden.json", import.meta.url), "utf8")) as {
  cases: { name: string; request: unknown; response: { trajectories: { id: string; advantages: number[] }[] } }[];
};

/** Deep equality with numbers compared to 1e-12 (relative); keys, strings and nulls exactly. */
function approxEqual(a: unknown, b: unknown, at: string): void {
  if (typeof b === "number") {
    expect(typeof a, at).toBe("number");
    expect(Math.abs((a as number) - b), at).toBeLessThanOrEqual(1e-12 * Math.max(1, Math.abs(b)));
  } else if (b !== null && typeof b === "object") {
    expect(a !== null && typeof a === "object", at).toBe(true);
    expect(Object.keys(a as object).sort(), at).toEqual(Object.keys(b).sort());
    for (const k of Object.keys(b)) approxEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k], `${at}.${k}`);
  } else expect(a, at).toBe(b);
}

describe("golden fixtures", () => {
  it.each(golden.cases.map((c) => [c.name, c] as const))("%s", (_name, c) => {
    const res = runCredit(c.request);
    expect(res.trajectories.map((t) => t.id)).toEqual(c.response.trajectories.map((t) => t.id));
    res.trajectories.forEach((t, i) => {
      t.advantages.forEach((a, j) => {
        expect(a).toBeCloseTo(c.response.trajectories[i].advantages[j], 12);
      });
    });
    approxEqual(JSON.parse(JSON.stringify(res)), c.response, "response");
  });
});
