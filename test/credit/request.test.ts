// runCredit validation and the command-line contract.
import { execFileSync, spawnSync } from "node:child_process";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { CreditRequestError, creditRequestSchema, parseRequestText, runCredit } from "../../lib/credit/index";

const ok = {
  estimator: "gigpo",
  params: { gamma: 0.95, omega: 1, mode: "mean_std_norm", invalidPenalty: 0 },
  groups: [{ uid: "g0", trajectories: [{ id: "a0", turns: [{ anchor: "A", reward: 0, invalid: false }] }] }],
};

function err(req: unknown): string {
  try {
    runCredit(req);
  } catch (e) {
    expect(e).toBeInstanceOf(CreditRequestError);
    const m = (e as Error).message;
    expect(m).not.toContain("\n");
    return m;
  }
  throw new Error("no error");
}

const withTurns = (estimator: string, turns: unknown[], extra: Record<string, unknown> = {}) => ({
  estimator,
  ...extra,
  groups: [{ uid: "g", trajectories: [{ id: "t", turns }] }],
});

describe("runCredit", () => {
  it("returns trajectories in request order with one advantage per turn", () => {
    const res = runCredit({
      estimator: "grpo",
      groups: [
        {
          uid: "g1",
          trajectories: [
            { id: "z", turns: [{ reward: 1 }, { reward: 0 }] },
            { id: "y", turns: [{ reward: 0 }] },
          ],
        },
        { uid: "g0", trajectories: [{ id: "x", turns: [{ reward: 2 }] }] },
      ],
    });
    expect(res.trajectories.map((t) => t.id)).toEqual(["z", "y", "x"]);
    expect(res.trajectories.map((t) => t.advantages.length)).toEqual([2, 1, 1]);
    expect(Object.keys(res.trajectories[0]).sort()).toEqual(["advantages", "components", "id"]);
    expect(JSON.parse(JSON.stringify(res))).toEqual(res);
  });
  it("exposes the zod request schema", () => {
    expect(creditRequestSchema.safeParse(ok).success).toBe(true);
  });
  it("names the problem and the field path in one line", () => {
    expect(err({ ...ok, estimator: "ppo" })).toMatch(/^estimator: unknown estimator "ppo"; known: grpo, drgrpo, rloo, .*archer$/);
    expect(err(withTurns("gae", [{ reward: 1, value: 0 }, { reward: 0 }]))).toBe(
      'groups[0].trajectories[0].turns[1].value: missing; estimator "gae" needs value on every turn',
    );
    expect(err(withTurns("grpo", [{ reward: NaN }]))).toBe("groups[0].trajectories[0].turns[0].reward: expected a finite number, got NaN");
    expect(err(withTurns("grpo", [{ reward: "NaN" }]))).toBe('groups[0].trajectories[0].turns[0].reward: expected a finite number, got the string "NaN"');
    expect(err(withTurns("grpo", [{ reward: null }]))).toBe("groups[0].trajectories[0].turns[0].reward: expected a finite number, got null");
    expect(err(withTurns("grpo", [{ reward: Infinity }]))).toMatch(/reward: expected a finite number, got Infinity/);
    expect(err(withTurns("grpo", [{}]))).toMatch(/turns\[0\]\.reward: missing/);
    expect(
      err({
        estimator: "grpo",
        groups: [
          { uid: "g", trajectories: [{ id: "a", turns: [{ reward: 1 }] }] },
          { uid: "h", trajectories: [{ id: "a", turns: [{ reward: 1 }] }] },
        ],
      }),
    ).toBe('groups[1].trajectories[0].id: duplicate trajectory id "a" (first at groups[0].trajectories[0])');
    expect(
      err({
        estimator: "grpo",
        groups: [
          { uid: "g", trajectories: [{ id: "a", turns: [{ reward: 1 }] }] },
          { uid: "g", trajectories: [{ id: "b", turns: [{ reward: 1 }] }] },
        ],
      }),
    ).toMatch(/groups\[1\]\.uid: duplicate group uid "g"/);
    expect(err({ ...ok, params: { gama: 1 } })).toMatch(/^params\.gama: unknown parameter for estimator "gigpo"; known: gamma, omega,/);
    expect(err({ ...ok, params: { mode: "zscore" } })).toBe('params.mode: expected one of "mean_std_norm", "mean_norm", got the string "zscore"');
    expect(err(withTurns("grpo", [{ reward: 1, rewrd: 2 }]))).toBe('groups[0].trajectories[0].turns[0]: unknown field "rewrd"');
    expect(err(withTurns("gigpo", [{ reward: 1 }]))).toMatch(/turns\[0\]\.anchor: missing; estimator "gigpo" needs anchor/);
    expect(err(withTurns("mapo", [{ reward: 1 }]))).toMatch(/judgeScore: missing/);
    expect(err({ estimator: "grpo", groups: [] })).toMatch(/^groups: the request needs at least one group/);
    expect(err(withTurns("grpo", [{ reward: 1 }], { rewardTransform: { kind: "gated" } }))).toBe("rewardTransform.tau: missing (expected number)");
    expect(err("hello")).toMatch(/^request: expected a JSON object/);
  });
  it("info gain is needed on every turn but the answer turn (IGPO)", () => {
    expect(runCredit(withTurns("igpo", [{ reward: 0, infoGain: 0.1 }, { reward: 1 }])).trajectories[0].advantages).toHaveLength(2);
    expect(err(withTurns("igpo", [{ reward: 0 }, { reward: 1 }]))).toMatch(/turns\[0\]\.infoGain: missing; estimator "igpo" needs infoGain$/);
  });
  it("accepts bare NaN / Infinity tokens in the text only to name the field", () => {
    const req = parseRequestText('{"estimator":"grpo","groups":[{"uid":"g","trajectories":[{"id":"a","turns":[{"reward":NaN,"anchor":"NaN in a string"}]}]}]}');
    expect(err(req)).toBe("groups[0].trajectories[0].turns[0].reward: expected a finite number, got NaN");
    expect(() => parseRequestText("{")).toThrow(/^request: not valid JSON/);
  });
});

describe("CLI (compiled: what `turnlens-credit` and `npm run credit` run)", () => {
  const cwd = path.resolve(__dirname, "../..");
  // scripts/credit-cli.mjs rebuilds dist/credit-cli.cjs first when lib/credit is newer
  const node = process.execPath;
  const cli = path.join(cwd, "scripts/credit-cli.mjs");
  it("prints the response JSON for a good request", () => {
    const out = execFileSync(node, [cli], { cwd, input: JSON.stringify(ok) }).toString();
    const res = JSON.parse(out);
    expect(res.trajectories[0].id).toBe("a0");
    expect(res.trajectories[0].advantages).toHaveLength(1);
    expect(res.diagnostics.anchorGroups.count).toBe(1);
  });
  it('--advantages-only and "output": "advantages" leave the components out', () => {
    for (const [args, req] of [
      [["--advantages-only"], ok],
      [[], { ...ok, output: "advantages" }],
    ] as const) {
      const res = JSON.parse(execFileSync(node, [cli, ...args], { cwd, input: JSON.stringify(req) }).toString());
      expect(res.trajectories).toEqual([{ id: "a0", advantages: [0], components: {} }]);
      expect(res.diagnostics.counts.turns).toBe(1);
    }
    const r = spawnSync(node, [cli, "--bogus"], { cwd, input: JSON.stringify(ok) });
    expect(r.status).toBe(1);
    expect(r.stderr.toString()).toMatch(/^error: argument "--bogus": unknown; usage: turnlens-credit \[--advantages-only\]/);
  });
  it("names an anchor nested 100000 deep instead of overflowing the stack", () => {
    const deep = "[".repeat(100_000) + "]".repeat(100_000);
    const r = spawnSync(node, [cli], {
      cwd,
      input: `{"estimator":"gigpo","groups":[{"uid":"g","trajectories":[{"id":"a","turns":[{"reward":0,"anchor":${deep}}]}]}]}`,
    });
    expect(r.status).toBe(1);
    expect(r.stderr.toString().trim()).toBe("error: groups[0].trajectories[0].turns[0].anchor: nested deeper than 64 levels of arrays / objects");
  });
  it("exits non-zero with one line on stderr and nothing on stdout for a bad request", () => {
    const r = spawnSync(node, [cli], { cwd, input: '{"estimator":"grpo","groups":[{"uid":"g","trajectories":[{"id":"a","turns":[{"reward":NaN}]}]}]}' });
    expect(r.status).toBe(1);
    expect(r.stdout.toString()).toBe("");
    const lines = r.stderr.toString().trim().split("\n");
    expect(lines).toEqual(["error: groups[0].trajectories[0].turns[0].reward: expected a finite number, got NaN"]);
  });
});
