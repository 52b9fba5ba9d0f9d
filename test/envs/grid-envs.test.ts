// Sokoban and FrozenLake: every generated instance is solvable (an independent BFS finds a
// plan) and replaying the plan in the environment succeeds with the documented rewards.
import { describe, expect, it } from "vitest";
import { FrozenLakeEnv, frozenLakeConfigSchema, shortestPath } from "../../lib/envs/frozenlake";
import { SOKOBAN_REWARD, SokobanEnv, sokobanConfigSchema } from "../../lib/envs/sokoban";
import { solveFrozenLakeBfs, solveSokobanBfs } from "./solvers";

describe("sokoban", () => {
  const sizes = [
    { width: 6, height: 6, numBoxes: 1, n: 1000 },
    { width: 7, height: 7, numBoxes: 2, n: 100 },
    { width: 8, height: 8, numBoxes: 3, n: 30 },
    { width: 10, height: 6, numBoxes: 2, n: 30 },
  ];
  for (const { n, ...size } of sizes) {
    it(`${size.width}x${size.height} with ${size.numBoxes} box(es): ${n} levels are all solvable and the BFS plan succeeds`, () => {
      const env = new SokobanEnv(sokobanConfigSchema.parse({ ...size, maxTurns: 500 }));
      const minMoves = env.config.minSolutionMoves;
      expect(minMoves).toBeGreaterThanOrEqual(2);
      for (let seed = 0; seed < n; seed++) {
        env.reset(seed);
        const level = env.state;
        expect(level.boxes.length).toBe(size.numBoxes);
        expect(level.boxes.every((b) => level.targets.includes(b))).toBe(false);
        const plan = solveSokobanBfs(level);
        expect(plan, `seed ${seed} unsolvable`).not.toBeNull();
        // The default keeps no short levels (one-move levels were a third of them).
        expect(plan!.length, `seed ${seed}`).toBeGreaterThanOrEqual(minMoves);
        let total = 0;
        let last = null;
        for (const move of plan!) {
          last = env.step(move);
          total += last.reward;
        }
        expect(last!.done).toBe(true);
        expect(last!.info.success).toBe(true);
        // Each step costs 0.1; the final step adds the solve bonus.
        expect(total).toBeGreaterThanOrEqual(SOKOBAN_REWARD.solved + plan!.length * SOKOBAN_REWARD.step - 1e-9);
      }
    });
  }

  it("minSolutionMoves 0 keeps short levels (a third solve in one move), larger minima raise the optimum", () => {
    const optimum = (minSolutionMoves: number) => {
      const env = new SokobanEnv(sokobanConfigSchema.parse({ minSolutionMoves }));
      return Array.from({ length: 300 }, (_, seed) => {
        env.reset(seed);
        return solveSokobanBfs(env.state)!.length;
      });
    };
    const any = optimum(0);
    expect(any.filter((m) => m === 1).length).toBeGreaterThan(50);
    const hard = optimum(6);
    expect(Math.min(...hard)).toBeGreaterThanOrEqual(6);
  });

  it("walls block, boxes push, and rewards follow RAGEN's shaping", () => {
    const env = new SokobanEnv(sokobanConfigSchema.parse({ minSolutionMoves: 0 }));
    // Find a seed where the first BFS move is a push onto a target.
    for (let seed = 0; seed < 500; seed++) {
      env.reset(seed);
      const plan = solveSokobanBfs(env.state)!;
      if (plan.length === 1) {
        const r = env.step(plan[0]);
        expect(r.reward).toBeCloseTo(SOKOBAN_REWARD.step + SOKOBAN_REWARD.boxOnTarget + SOKOBAN_REWARD.solved);
        return;
      }
    }
    throw new Error("no one-move level in 500 seeds");
  });

  it("an invalid action costs nothing and changes nothing", () => {
    const env = new SokobanEnv(sokobanConfigSchema.parse({}));
    const obs = env.reset(1);
    const anchor = env.anchorKey();
    const r = env.step("dance");
    expect(r).toMatchObject({ observation: obs, reward: 0, done: false, info: { valid: false, success: false, action: null } });
    expect(env.anchorKey()).toBe(anchor);
  });

  it("rejects a room too small for the boxes, naming the field", () => {
    expect(() => sokobanConfigSchema.parse({ width: 5, height: 5, numBoxes: 4 })).toThrow(/numBoxes/);
  });
});

describe("frozenlake", () => {
  it.each([
    [3, 0.3],
    [4, 0.2],
    [4, 0.4],
    [6, 0.3],
    [8, 0.3],
  ])("size %i, holes %f: 500 maps are all solvable and the BFS path reaches the goal", (size, holeProbability) => {
    const env = new FrozenLakeEnv(frozenLakeConfigSchema.parse({ size, holeProbability, maxTurns: 100 }));
    for (let seed = 0; seed < 500; seed++) {
      env.reset(seed);
      const plan = solveFrozenLakeBfs(env.state.map);
      expect(plan, `seed ${seed}`).not.toBeNull();
      let last = null;
      for (const move of plan!) last = env.step(move);
      expect(last).toMatchObject({ reward: 1, done: true, info: { success: true } });
    }
  });

  it("shortestPath: its length equals an independent BFS, and following its first move reaches the goal in that many moves", () => {
    const env = new FrozenLakeEnv(frozenLakeConfigSchema.parse({ size: 6, maxTurns: 100 }));
    for (let seed = 0; seed < 200; seed++) {
      env.reset(seed);
      const map = env.state.map;
      const plan = solveFrozenLakeBfs(map)!;
      expect(shortestPath(map, 0, 0)?.length, `seed ${seed}`).toBe(plan.length);
      let [r, c, moves, last] = [0, 0, 0, null as ReturnType<FrozenLakeEnv["step"]> | null];
      for (let next = shortestPath(map, r, c); next?.firstMove; next = shortestPath(map, r, c)) {
        expect(next.length).toBe(plan.length - moves);
        last = env.step(next.firstMove);
        moves++;
        [r, c] = [env.state.row, env.state.col];
      }
      expect(moves).toBe(plan.length);
      expect(last).toMatchObject({ reward: 1, done: true });
      expect(shortestPath(map, r, c)).toEqual({ length: 0, firstMove: null });
    }
  });

  it("minPathLength keeps only maps that need a detour", () => {
    const env = new FrozenLakeEnv(frozenLakeConfigSchema.parse({ size: 6, holeProbability: 0.3, minPathLength: 12, maxTurns: 100 }));
    for (let seed = 0; seed < 200; seed++) {
      env.reset(seed);
      const plan = solveFrozenLakeBfs(env.state.map)!;
      expect(plan.length, `seed ${seed}`).toBeGreaterThanOrEqual(12);
      let last = null;
      for (const move of plan) last = env.step(move);
      expect(last).toMatchObject({ reward: 1, done: true });
    }
  });

  it("shows a compact ASCII grid: size rows of size single characters (default 6x6), then the player's four neighbours and the eight cells two moves away", () => {
    const env = new FrozenLakeEnv(frozenLakeConfigSchema.parse({}));
    const obs = env.reset(7);
    const rows = obs.split("\n");
    expect(rows).toHaveLength(8);
    for (const r of rows.slice(0, 6)) expect(r).toMatch(/^[PFHG]{6}$/);
    expect(obs[0]).toBe("P");
    expect(rows[5].endsWith("G")).toBe(true);
    // left, down, right, up of the start (top-left corner): the edge, row 2's first cell, row 1's second cell, the edge
    expect(rows[6]).toBe(`#${rows[1][0]}${rows[0][1]}#`);
    // two moves away, clockwise from left-left: edge, edge, (3,1), (2,2), (1,3), edge, edge, edge
    expect(rows[7]).toBe(`##${rows[2][0]}${rows[1][1]}${rows[0][2]}###`);
    const bare = (config: object) => new FrozenLakeEnv(frozenLakeConfigSchema.parse(config)).reset(7);
    expect(bare({ neighbours: false, farNeighbours: false })).toBe(rows.slice(0, 6).join("\n"));
    expect(bare({ farNeighbours: false })).toBe(rows.slice(0, 7).join("\n"));
    expect(bare({ neighbours: false })).toBe([...rows.slice(0, 6), rows[7]].join("\n"));
    // after two moves the lines follow the player: at (1,1), on a map where (0,1) and (1,1) are safe
    for (let seed = 0; seed < 50; seed++) {
      env.reset(seed);
      const m = env.state.map;
      if (m[0][1] === "H" || m[1][1] === "H") continue;
      env.step("right");
      const after = env.step("down").observation.split("\n");
      // at (1,1): left-left is the edge, down-left (2,0), down-down (3,1), down-right (2,2), right-right (1,3),
      // up-right (0,2), up-up the edge, up-left (0,0)
      expect(after[7]).toBe(`#${m[2][0]}${m[3][1]}${m[2][2]}${m[1][3]}${m[0][2]}#F`);
      return;
    }
    throw new Error("no map among seeds 0-49 with (0,1) and (1,1) safe");
  });

  it("falling into a hole ends the episode without reward", () => {
    const env = new FrozenLakeEnv(frozenLakeConfigSchema.parse({ holeProbability: 0.5 }));
    for (let seed = 0; seed < 100; seed++) {
      env.reset(seed);
      const map = env.state.map;
      if (map[0][1] === "H") {
        expect(env.step("right")).toMatchObject({ reward: 0, done: true, info: { success: false, fellInHole: true } });
        return;
      }
    }
    throw new Error("no map with a hole right of the start");
  });

  it("slippery ice is deterministic per seed and sometimes slides sideways", () => {
    const env = new FrozenLakeEnv(frozenLakeConfigSchema.parse({ slippery: true, holeProbability: 0, maxTurns: 50 }));
    const run = (seed: number) => {
      env.reset(seed);
      const moved: unknown[] = [];
      for (let i = 0; i < 20; i++) {
        const r = env.step("down");
        moved.push(r.info.moved);
        if (r.done) break;
      }
      return moved;
    };
    expect(run(3)).toEqual(run(3));
    const all = [0, 1, 2, 3, 4].flatMap(run);
    expect(all).toContain("down");
    expect(all.some((m) => m !== "down")).toBe(true);
  });
});
