// The credit command (cli/credit): what the process prints is what `computeCredit` returns
// in-process, byte for byte, on either path; and each level's reader (request, group, trajectory,
// turn) names the field where it stops, as validation names it for a bad value.
import { spawnSync } from "node:child_process";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { computeCredit } from "../../cli/credit/compute";
import { readRequest } from "../../cli/credit/read/request";
import { Declined } from "../../cli/credit/read/scan";
import { runCredit } from "../../lib/credit/index";

const cwd = path.resolve(__dirname, "../..");
const bin = path.join(cwd, "scripts/credit-cli.mjs");
/** The command as the package's bin runs it: the script itself, through its #! line. */
const cli = (input: string, args: string[] = []) => spawnSync(bin, args, { cwd, input });

const turn = (reward: number, anchor: unknown, invalid = false) => ({ reward, anchor, invalid });
const base = {
  estimator: "gigpo",
  params: { gamma: 0.9 },
  groups: [
    {
      uid: "g0",
      trajectories: [
        { id: "a", turns: [turn(0, "s0"), turn(1, "s1")] },
        { id: "b", turns: [turn(0, "s0"), turn(0, { x: 1 }, true)] },
      ],
    },
    { uid: "g1", trajectories: [{ id: "c", turns: [turn(0.5, "s0")] }] },
  ],
};

describe("turnlens-credit", () => {
  // the fast path (reward / anchor / invalid), the ordinary path (another field, a transform, another estimator)
  const requests = {
    fast: base,
    "another field": { ...base, groups: [{ uid: "g", trajectories: [{ id: "a", turns: [{ reward: 1, anchor: "s", tokens: 3 }] }] }] },
    "reward transform": { ...base, rewardTransform: { kind: "gated", tau: 0.5 } },
    mars: { estimator: "mars", groups: [{ uid: "g", trajectories: [{ id: "a", envTag: "x", turns: [{ reward: 1 }, { reward: 0 }] }] }] },
  };
  for (const [name, req] of Object.entries(requests)) {
    it(`prints what computeCredit returns in-process (${name})`, () => {
      const text = JSON.stringify(req);
      for (const args of [[], ["--advantages-only"]]) {
        const options = args.length ? { output: "advantages" as const } : {};
        const want = Buffer.concat(computeCredit(text, options)).toString("utf8");
        const r = cli(text, args);
        expect(r.stderr.toString()).toBe("");
        expect(r.status).toBe(0);
        expect(r.stdout.toString()).toBe(want);
        // and both are runCredit's response
        expect(want).toBe(JSON.stringify(runCredit(JSON.parse(text), options)) + "\n");
      }
    });
  }

  it("names the field of a bad request on stderr as computeCredit's error does", () => {
    const bad = JSON.stringify(base).replace('"reward":1', '"reward":"1"');
    expect(() => computeCredit(bad)).toThrow("groups[0].trajectories[0].turns[1].reward: expected a finite number, got the string");
    const r = cli(bad);
    expect(r.status).toBe(1);
    expect(r.stdout.toString()).toBe("");
    expect(r.stderr.toString()).toMatch(/^error: groups\[0\]\.trajectories\[0\]\.turns\[1\]\.reward: expected a finite number, got the string "1"\n$/);
  });
});

describe("the readers name the field where the fast path stops", () => {
  /** The request with one change made to a copy, as JSON text. */
  const edit = (f: (r: typeof base & Record<string, unknown>) => void) => {
    const r = structuredClone(base) as typeof base & Record<string, unknown>;
    f(r);
    return JSON.stringify(r);
  };
  const declined = (text: string) => {
    try {
      readRequest(Buffer.from(text));
    } catch (e) {
      if (e instanceof Declined) return e.path;
      throw e;
    }
    return null;
  };
  const g0t1 = "groups[0].trajectories[1]";
  const cases: [string, string, string, string | null][] = [
    // level, request text, where the reader stops, the start of validation's message (null: a good request)
    ["request", edit((r) => (r.extra = 1)), "extra", 'unknown field "extra"'],
    ["request", JSON.stringify({ ...base, groups: {} }), "groups", "groups: expected array, got an object"],
    ["group", edit((r) => ((r.groups[1] as Record<string, unknown>).uid = "")), "groups[1].uid", "groups[1].uid: expected a non-empty string"],
    ["group", edit((r) => ((r.groups[0] as Record<string, unknown>).tag = "x")), "groups[0].tag", 'groups[0]: unknown field "tag"'],
    [
      "trajectory",
      edit((r) => ((r.groups[0].trajectories[1] as Record<string, unknown>).id = 5)),
      `${g0t1}.id`,
      `${g0t1}.id: expected a non-empty string, got 5`,
    ],
    [
      "trajectory",
      edit((r) => ((r.groups[0].trajectories[1] as Record<string, unknown>).truncated = "yes")),
      `${g0t1}.truncated`,
      `${g0t1}.truncated: expected boolean, got the string "yes"`,
    ],
    [
      "trajectory",
      edit((r) => (r.groups[1].trajectories[0].id = "a")),
      "groups[1].trajectories[0].id",
      'groups[1].trajectories[0].id: duplicate trajectory id "a"',
    ],
    [
      "turn",
      edit((r) => ((r.groups[0].trajectories[1].turns[0] as Record<string, unknown>).reward = "1")),
      `${g0t1}.turns[0].reward`,
      `${g0t1}.turns[0].reward: expected a finite number, got the string "1"`,
    ],
    [
      "turn",
      edit((r) => ((r.groups[0].trajectories[1].turns[1] as Record<string, unknown>).invalid = 1)),
      `${g0t1}.turns[1].invalid`,
      `${g0t1}.turns[1].invalid: expected boolean, got 1`,
    ],
    [
      "turn",
      edit((r) => ((r.groups[1].trajectories[0].turns[0] as Record<string, unknown>).reward = 1e101)),
      "groups[1].trajectories[0].turns[0].reward",
      "groups[1].trajectories[0].turns[0].reward: expected a finite number with magnitude at most 1e100, got 1e+101",
    ],
    // a field the fast path does not read: the ordinary path takes the request
    ["turn", edit((r) => ((r.groups[0].trajectories[0].turns[1] as Record<string, unknown>).value = 0.5)), "groups[0].trajectories[0].turns[1].value", null],
  ];
  for (const [level, text, where] of cases) {
    it(`${level}: ${where}`, () => {
      expect(declined(text)).toBe(where);
    });
  }
  it("and validation names the same field", () => {
    for (const [, text, , message] of cases) {
      const r = cli(text);
      if (message === null) {
        expect(r.stderr.toString()).toBe("");
        expect(r.stdout.toString()).toBe(Buffer.concat(computeCredit(text, { fast: false })).toString("utf8"));
        continue;
      }
      expect(r.status, text).toBe(1);
      expect(r.stderr.toString().startsWith(`error: ${message}`), r.stderr.toString()).toBe(true);
    }
  });
  it("takes the request it reads", () => {
    expect(declined(JSON.stringify(base))).toBeNull();
  });
});
