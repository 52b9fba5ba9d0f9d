// Deterministic imported-run data for the dashboard tests (unit, API and end to end): FrozenLake-
// like random walks on one 4x4 map per task group, G trajectories per group that revisit the same
// states (so GiGPO anchor groups have several members), occasional invalid moves, and the
// advantages a GiGPO trainer would have stored (computed with lib/credit, so "stored" and
// "recomputed as trained" agree).
import { runCredit } from "../../lib/credit";
import type { RolloutStepInput } from "../../lib/schemas/rollouts";

export const GIGPO_PARAMS = { gamma: 0.95, omega: 1 };

function rng(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const MOVES: Record<string, [number, number]> = { left: [0, -1], right: [0, 1], up: [-1, 0], down: [1, 0] };

function lakeMap(task: number): string[][] {
  const r = rng(1000 + task);
  const m = Array.from({ length: 4 }, () => Array.from({ length: 4 }, () => "F"));
  for (let i = 0; i < 2; i++) m[1 + Math.floor(r() * 3)][Math.floor(r() * 3)] = "H";
  m[0][0] = "S";
  m[3][3] = "G";
  return m;
}

const render = (m: string[][], pos: [number, number]) => m.map((row, i) => row.map((c, j) => (i === pos[0] && j === pos[1] ? "P" : c)));

/** One training step: `groups` task groups x `G` trajectories of up to `maxTurns` turns. */
export function gigpoStep(
  step: number,
  opts: { groups?: number; G?: number; maxTurns?: number; seed?: number; estimator?: string | null } = {},
): RolloutStepInput {
  const { groups = 3, G = 4, maxTurns = 6, seed = 0 } = opts;
  const r = rng(seed * 7919 + step * 104729 + 1);
  const out: RolloutStepInput = { step, estimator: opts.estimator === undefined ? "gigpo" : opts.estimator, params: GIGPO_PARAMS, groups: [] };
  for (let g = 0; g < groups; g++) {
    const task = step * 10 + g;
    const map = lakeMap(task);
    const trajectories = [];
    for (let t = 0; t < G; t++) {
      let pos: [number, number] = [0, 0];
      const turns = [];
      let success = false;
      for (let i = 0; i < maxTurns; i++) {
        const grid = render(map, pos);
        const observation = `Turn ${i + 1}. You are P on the frozen lake; reach G, avoid holes H.\n${grid.map((row) => row.join("")).join("\n")}\nYour move (left/right/up/down):`;
        // Prefer right/down (toward the goal) so some trajectories succeed; sometimes say nonsense.
        const u = r();
        const invalid = u < 0.08;
        const name = invalid ? "jump" : u < 0.5 ? "right" : u < 0.92 ? "down" : u < 0.96 ? "left" : "up";
        const action = invalid ? "I will jump over the hole." : `I move ${name}. <action>${name}</action>`;
        let next = pos;
        if (!invalid) {
          const [dr, dc] = MOVES[name];
          next = [Math.max(0, Math.min(3, pos[0] + dr)), Math.max(0, Math.min(3, pos[1] + dc))];
        }
        const cell = map[next[0]][next[1]];
        const done = cell === "H" || cell === "G" || i === maxTurns - 1;
        const reward = cell === "G" ? 1 : 0;
        success = cell === "G";
        turns.push({
          observation,
          action,
          reward,
          valid: !invalid,
          done,
          anchor: `lake${task}:${pos[0]},${pos[1]}`,
          tokenCount: action.split(/\s+/).length,
          info: { view: { kind: "grid", cells: grid, legend: { P: "player", F: "frozen", H: "hole", G: "goal", S: "start" } } },
        });
        pos = next;
        if (done) break;
      }
      trajectories.push({ success, truncated: !success && turns.length === maxTurns && map[pos[0]][pos[1]] !== "H", turns });
    }
    out.groups.push({ uid: `task-${task}`, envId: "frozenlake", taskSeed: task, trajectories });
  }
  if (out.estimator) {
    const res = runCredit({ estimator: out.estimator, params: out.estimator === "gigpo" ? GIGPO_PARAMS : {}, groups: creditGroups(out) });
    let k = 0;
    for (const g of out.groups)
      for (const t of g.trajectories) {
        const adv = res.trajectories[k++].advantages;
        t.turns.forEach((u, i) => {
          (u as { advantage?: number }).advantage = adv[i];
        });
      }
  }
  return out;
}

/** The lib/credit batch of a step input, with ids `${uid}/${index}` (tests map them to stored ids). */
export function creditGroups(step: RolloutStepInput) {
  return step.groups.map((g) => ({
    uid: g.uid,
    trajectories: g.trajectories.map((t, i) => ({
      id: `${g.uid}/${i}`,
      ...(t.truncated ? { truncated: true } : {}),
      envTag: g.envId,
      turns: t.turns.map((u) => ({
        reward: u.reward,
        ...(u.anchor ? { anchor: u.anchor } : {}),
        ...(u.valid === false ? { invalid: true } : {}),
        ...(u.tokenCount !== undefined && u.tokenCount !== null ? { tokens: u.tokenCount } : {}),
      })),
    })),
  }));
}

/** A smooth noisy learning curve for imported runs' metrics. */
export function curve(steps: number, seed: number, ceiling: number): { step: number; values: Record<string, number> }[] {
  const r = rng(seed + 17);
  return Array.from({ length: steps }, (_, s) => {
    const p = ceiling * (1 - Math.exp(-s / (steps / 3)));
    return {
      step: s,
      values: {
        "rollout/success_rate": Math.max(0, Math.min(1, p + (r() - 0.5) * 0.15)),
        "rollout/env_steps": (s + 1) * 96,
        "credit/adv_std": 0.8 + (r() - 0.5) * 0.2,
      },
    };
  });
}
