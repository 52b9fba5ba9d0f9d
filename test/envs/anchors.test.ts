// Anchor keys (GiGPO): equal states give equal keys, whatever path led there; different
// states give different keys.
import { describe, expect, it } from "vitest";
import { createEnv } from "../../lib/envs/registry";
import { playEpisode } from "../../lib/envs/play";
import { randomPolicy } from "../../lib/envs/random-policy";
import type { Env } from "../../lib/envs/types";
import { type CountdownEnv, countdownSteps } from "../../lib/envs/countdown";
import type { HouseholdEnv } from "../../lib/envs/household";
import type { KuhnPokerEnv } from "../../lib/envs/kuhnpoker";
import type { SokobanEnv } from "../../lib/envs/sokoban";
import type { SearchQaEnv } from "../../lib/envs/searchqa";

/** Anchor after playing `actions` from reset(seed); every action must be valid. */
function anchorAfter(env: Env, seed: number, actions: string[]): string {
  env.reset(seed);
  for (const a of actions) expect(env.step(a).info.valid, a).toBe(true);
  return env.anchorKey();
}

describe("grid environments: anchor equal exactly when the grid is equal", () => {
  for (const id of ["sokoban", "frozenlake", "tictactoe"]) {
    it(id, () => {
      const env = createEnv(id, id === "frozenlake" ? { maxTurns: 30 } : {});
      const byAnchor = new Map<string, string>();
      const byObs = new Map<string, string>();
      for (let seed = 0; seed < 40; seed++) {
        const ep = playEpisode(env, seed % 5, randomPolicy(seed)); // 5 tasks, 8 rollouts each
        for (const t of ep.turns) {
          const state = JSON.stringify(t.view);
          if (byAnchor.has(t.anchor)) expect(byAnchor.get(t.anchor)).toBe(state);
          if (byObs.has(state)) expect(byObs.get(state)).toBe(t.anchor);
          byAnchor.set(t.anchor, state);
          byObs.set(state, t.anchor);
        }
      }
      expect(byAnchor.size).toBeGreaterThan(10);
    });
  }

  it("sokoban: stepping away and back gives the start anchor; a different cell does not", () => {
    const env = createEnv("sokoban") as SokobanEnv;
    for (let seed = 0; seed < 50; seed++) {
      const start = anchorAfter(env, seed, []);
      const { player, boxes, walls, width } = env.state;
      const pairs: [string, string, number][] = [
        ["left", "right", -1],
        ["right", "left", 1],
        ["up", "down", -width],
        ["down", "up", width],
      ];
      const free = pairs.find(([, , d]) => !walls[player + d] && !boxes.includes(player + d));
      if (!free) continue;
      expect(anchorAfter(env, seed, [free[0], free[1]])).toBe(start);
      expect(anchorAfter(env, seed, [free[0]])).not.toBe(start);
    }
  });
});

describe("path independence", () => {
  it("household: open+close returns to the same state; walking A->B equals walking to B", () => {
    const env = createEnv("household") as HouseholdEnv;
    let checked = 0;
    for (let seed = 0; seed < 30; seed++) {
      env.reset(seed);
      const gotos = env.admissibleActions().filter((a) => a.startsWith("go to "));
      const closed = env.state.receptacles.find((r) => r.openable && r.room === env.state.room);
      if (!closed) continue; // a living room has nothing to open
      const [a, b] = gotos.filter((g) => g !== `go to ${closed.id}`);
      expect(anchorAfter(env, seed, [a, b])).toBe(anchorAfter(env, seed, [b]));
      const at = anchorAfter(env, seed, [`go to ${closed.id}`]);
      expect(anchorAfter(env, seed, [`go to ${closed.id}`, `open ${closed.id}`, `close ${closed.id}`])).toBe(at);
      expect(anchorAfter(env, seed, [`go to ${closed.id}`, `open ${closed.id}`])).not.toBe(at);
      // Look and inventory change nothing.
      expect(anchorAfter(env, seed, [`go to ${closed.id}`, "look", "inventory"])).toBe(at);
      checked++;
    }
    expect(checked).toBeGreaterThan(15);
  });

  it("shop: back to search returns to the start; query spelling variants are one state", () => {
    const env = createEnv("shop");
    const start = anchorAfter(env, 1, []);
    expect(anchorAfter(env, 1, ["search[running shoes]", "click[back to search]"])).toBe(start);
    expect(anchorAfter(env, 1, ["search[Running  Shoes]"])).toBe(anchorAfter(env, 1, ["search[running shoes]"]));
    expect(anchorAfter(env, 1, ["search[running shoes]"])).not.toBe(anchorAfter(env, 1, ["search[hoodie]"]));
  });

  it("searchqa: the same passages read in any order are one state", () => {
    const env = createEnv("searchqa") as SearchQaEnv;
    env.reset(2);
    const [o] = env.state.objectives;
    const q1 = `search[${o.chain[0]}]`;
    const q2 = `search[${o.chain[1]}]`;
    expect(anchorAfter(env, 2, [q1, q2])).toBe(anchorAfter(env, 2, [q2, q1]));
    expect(anchorAfter(env, 2, [q1, q1])).toBe(anchorAfter(env, 2, [q1]));
    expect(anchorAfter(env, 2, [q1])).not.toBe(anchorAfter(env, 2, [q2]));
    expect(anchorAfter(env, 2, [])).not.toBe(anchorAfter(env, 2, [q1]));
  });

  it("countdown: combining disjoint pairs in either order reaches one state", () => {
    const env = createEnv("countdown") as CountdownEnv;
    let checked = 0;
    for (let seed = 0; seed < 40; seed++) {
      env.reset(seed);
      const [a, b, c, d] = env.state.numbers;
      const s1 = countdownSteps([a, b]).find((s) => s.op === "+")!.text;
      const s2 = countdownSteps([c, d]).find((s) => s.op === "*")!.text;
      expect(anchorAfter(env, seed, [s1, s2])).toBe(anchorAfter(env, seed, [s2, s1]));
      expect(anchorAfter(env, seed, [s1])).not.toBe(anchorAfter(env, seed, [s2]));
      checked++;
    }
    expect(checked).toBe(40);
  });

  it("twentyq: the same answers in any order are one state", () => {
    const env = createEnv("twentyq");
    const q1 = "Is it alive?";
    const q2 = "Is it made of metal?";
    expect(anchorAfter(env, 4, [q1, q2])).toBe(anchorAfter(env, 4, [q2, q1]));
    expect(anchorAfter(env, 4, [q1, q1])).toBe(anchorAfter(env, 4, [q1]));
    expect(anchorAfter(env, 4, [q1])).not.toBe(anchorAfter(env, 4, [q2]));
  });

  it("tictactoe: transposed move orders give one board", () => {
    const env = createEnv("tictactoe");
    expect(anchorAfter(env, 0, ["a1", "b1", "a2"])).toBe(anchorAfter(env, 0, ["a2", "b1", "a1"]));
    expect(anchorAfter(env, 0, ["a1", "b1", "a2"])).not.toBe(anchorAfter(env, 0, ["a1", "b2", "a2"]));
  });

  it("kuhn poker: the anchor holds only what the acting player sees", () => {
    const env = createEnv("kuhnpoker") as KuhnPokerEnv;
    const bySeen = new Map<string, Set<string>>();
    for (let seed = 0; seed < 60; seed++) {
      env.reset(seed);
      const { cards } = env.state;
      // Player 0's first decision: same own card => same anchor, whatever player 1 holds.
      const seen = `p0:${cards[0]}`;
      if (!bySeen.has(seen)) bySeen.set(seen, new Set());
      bySeen.get(seen)!.add(env.anchorKey());
    }
    expect(bySeen.size).toBe(3);
    for (const keys of bySeen.values()) expect(keys.size).toBe(1);
    const all = [...bySeen.values()].map((k) => [...k][0]);
    expect(new Set(all).size).toBe(3);
  });
});

describe("anchors are canonical strings", () => {
  it("are the same for an equal state in a fresh instance", () => {
    for (const id of ["household", "shop", "searchqa"]) {
      const a = createEnv(id);
      const b = createEnv(id);
      const ep = playEpisode(a, 9, randomPolicy(9));
      const replay = playEpisode(b, 9, randomPolicy(9));
      expect(replay.turns.map((t) => t.anchor)).toEqual(ep.turns.map((t) => t.anchor));
    }
  });
});
