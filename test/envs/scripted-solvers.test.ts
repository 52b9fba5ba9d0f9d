// A scripted solver reaches success on every environment (and on every seed tried).
import { describe, expect, it } from "vitest";
import { CountdownEnv, countdownConfigSchema, parseExpression } from "../../lib/envs/countdown";
import { HOUSEHOLD_TASK_TYPES, HouseholdEnv, householdConfigSchema } from "../../lib/envs/household";
import { KuhnPokerEnv, kuhnPokerConfigSchema } from "../../lib/envs/kuhnpoker";
import { SearchQaEnv, searchQaConfigSchema } from "../../lib/envs/searchqa";
import { ShopEnv, shopConfigSchema } from "../../lib/envs/shop";
import { TicTacToeEnv, ticTacToeConfigSchema } from "../../lib/envs/tictactoe";
import { TwentyQEnv, twentyQConfigSchema } from "../../lib/envs/twentyq";
import { playEpisode } from "../../lib/envs/play";
import { householdExpertAction, shopExpertAction, twentyQExpertAction } from "./solvers";

describe("household", () => {
  for (const numRooms of [1, 2, 4]) {
    it(`${numRooms} room(s): the expert completes 150 tasks of every type within maxTurns`, () => {
      const env = new HouseholdEnv(householdConfigSchema.parse({ numRooms }));
      const seen = new Set<string>();
      for (let seed = 0; seed < 150; seed++) {
        const ep = playEpisode(env, seed, (e) => householdExpertAction(e as HouseholdEnv), { recordView: false });
        expect(ep.success, `seed ${seed}: ${env.state.task.text}`).toBe(true);
        expect(ep.turns.every((t) => t.valid)).toBe(true);
        expect(ep.totalReward).toBe(1);
        seen.add(env.state.task.type);
      }
      if (numRooms > 1) expect(seen.size).toBe(HOUSEHOLD_TASK_TYPES.length);
    });
  }

  it("each task type alone is generated and solvable", () => {
    for (const type of HOUSEHOLD_TASK_TYPES) {
      const env = new HouseholdEnv(householdConfigSchema.parse({ numRooms: 2, taskTypes: [type] }));
      for (let seed = 0; seed < 20; seed++) {
        env.reset(seed);
        expect(env.state.task.type).toBe(type);
        expect(playEpisode(env, seed, (e) => householdExpertAction(e as HouseholdEnv)).success).toBe(true);
      }
    }
  });

  it("speaks ALFWorld: admissible commands and 'Nothing happens.' for the rest", () => {
    const env = new HouseholdEnv(householdConfigSchema.parse({}));
    const obs = env.reset(3);
    expect(obs).toMatch(/Your task is to: /);
    const cmds = env.admissibleActions();
    expect(cmds).toContain("look");
    expect(cmds.some((c) => /^go to countertop \d$|^go to \w+ \d$/.test(c))).toBe(true);
    expect(env.step("fly to the moon")).toMatchObject({ observation: "Nothing happens.", info: { valid: false } });
    const r = env.step(
      "> Go To " +
        cmds
          .find((c) => c.startsWith("go to "))!
          .slice(6)
          .toUpperCase(),
    );
    expect(r.info.valid).toBe(true);
  });

  it("accepts ALFWorld's older 'put X in/on Y' for 'move X to Y'", () => {
    const env = new HouseholdEnv(householdConfigSchema.parse({ taskTypes: ["pick_and_place"] }));
    for (let seed = 0; seed < 20; seed++) {
      const ep = playEpisode(env, seed, (e) => householdExpertAction(e as HouseholdEnv).replace(/^move (.+) to (.+)$/, "put $1 in/on $2"));
      expect(ep.success).toBe(true);
      expect(ep.turns[ep.length - 1].info.action).toMatch(/^move /);
    }
  });
});

describe("shop", () => {
  it("the expert buys a perfect match on 200 instructions (reward 1)", () => {
    const env = new ShopEnv(shopConfigSchema.parse({}));
    for (let seed = 0; seed < 200; seed++) {
      const ep = playEpisode(env, seed, (e) => shopExpertAction(e as ShopEnv), { recordView: false });
      expect(ep.success, `seed ${seed}`).toBe(true);
      expect(ep.totalReward).toBe(1);
    }
  });

  it("partial matches earn WebShop's partial credit", () => {
    const env = new ShopEnv(shopConfigSchema.parse({}));
    env.reset(4);
    const goal = env.state.goal;
    const product = env.catalogue.find((p) => p.id === goal.productId)!;
    env.step(`search[${product.title}]`);
    env.step(`click[${product.id}]`);
    const r = env.step("click[buy now]"); // no option chosen
    const total = goal.attributes.length + Object.keys(goal.options).length + 1;
    expect(r.reward).toBeCloseTo((goal.attributes.length + 1) / total, 4);
    expect(r.info.success).toBe(false);
    expect(r.done).toBe(true);
  });

  it("the instruction's own query finds the target within the results", () => {
    const env = new ShopEnv(shopConfigSchema.parse({}));
    let found = 0;
    for (let seed = 0; seed < 100; seed++) {
      env.reset(seed);
      const q = env.state.goal.instruction.replace(/, and price lower than.*$/, "");
      if (env.search(q).includes(env.state.goal.productId)) found++;
    }
    expect(found).toBeGreaterThan(80);
  });
});

describe("searchqa", () => {
  for (const hops of [1, 2, 3]) {
    it(`${hops}-hop: searching each entity of the chain retrieves the next hop; the gold answers score 1`, () => {
      const env = new SearchQaEnv(searchQaConfigSchema.parse({ hops, numObjectives: 3, maxTurns: 20 }));
      for (let seed = 0; seed < 60; seed++) {
        env.reset(seed);
        const { objectives } = env.state;
        for (const o of objectives) {
          for (let i = 0; i + 1 < o.chain.length; i++) {
            const r = env.step(`<search>${o.chain[i]}</search>`);
            expect(r.info.valid).toBe(true);
            // The entity's own passage comes first and names the next hop.
            const first = r.observation.split("\n")[1];
            expect(first.startsWith(`Doc 1 (${o.chain[i]}):`), `${seed}: ${first}`).toBe(true);
            expect(first).toContain(o.chain[i + 1]);
          }
        }
        const r = env.step(`<answer>${env.goldAnswer()}</answer>`);
        expect(r).toMatchObject({ reward: 1, done: true, info: { success: true } });
      }
    });
  }

  it("the tool matches inflections (founder ~ founded)", () => {
    const env = new SearchQaEnv(searchQaConfigSchema.parse({}));
    env.reset(0);
    const company = env.kb.entities.find((e) => e.kind === "company")!.name;
    const r = env.step(`search[founder of ${company}]`);
    expect(r.observation).toContain(`Doc 1 (${company}): ${company} is a`);
  });

  it("splits multi-answers written in several styles", async () => {
    const { splitAnswers } = await import("../../lib/envs/searchqa");
    expect(splitAnswers("A; B", 2)).toEqual(["A", "B"]);
    expect(splitAnswers("1. A\n2. B", 2)).toEqual(["A", "B"]);
    expect(splitAnswers("(1) A (2) B", 2)).toEqual(["A", "B"]);
    expect(splitAnswers("A | B | C", 2)).toEqual(["A", "B"]);
    expect(splitAnswers("1. A", 1)).toEqual(["A"]);
  });

  it("scores F1 per objective and averages", () => {
    const env = new SearchQaEnv(searchQaConfigSchema.parse({ numObjectives: 2 }));
    env.reset(11);
    const [a] = env.goldAnswer().split("; ");
    const r = env.step(`answer[${a}; nobody]`);
    expect(r.reward).toBeCloseTo(0.5);
    expect(r.info.success).toBe(false);
  });
});

describe("countdown", () => {
  it("24 points: the solution steps reach 24 on 300 deals; the gold expression evaluates to 24", () => {
    const env = new CountdownEnv(countdownConfigSchema.parse({}));
    for (let seed = 0; seed < 300; seed++) {
      env.reset(seed);
      const gold = env.goldAnswer();
      const expr = parseExpression(gold)!;
      expect(expr.value).toEqual({ n: 24, d: 1 });
      expect(expr.numbers.sort()).toEqual(env.state.start.slice().sort());
      const r = env.step(`<answer>${gold}</answer>`);
      expect(r).toMatchObject({ reward: 1, done: true, info: { success: true } });
    }
  });

  it("step by step with a depth-first solver (Countdown mode, 5 numbers)", async () => {
    const { solveCountdown } = await import("../../lib/envs/countdown");
    const env = new CountdownEnv(countdownConfigSchema.parse({ randomTarget: true, numCount: 5, maxNumber: 25 }));
    for (let seed = 0; seed < 100; seed++) {
      env.reset(seed);
      const steps = solveCountdown(env.state.numbers, env.state.target)!;
      let r = null;
      for (const s of steps) r = env.step(`Action: ${s}`);
      expect(r).toMatchObject({ reward: 1, done: true, info: { success: true } });
    }
  });

  it("accepts fractions in a whole expression (8 / (3 - 8 / 3))", () => {
    expect(parseExpression("8 / (3 - 8 / 3)")!.value).toEqual({ n: 24, d: 1 });
  });
});

describe("twentyq", () => {
  it("halving questions find the object on 300 games, reading only the yes/no replies", () => {
    const env = new TwentyQEnv(twentyQConfigSchema.parse({}));
    for (let seed = 0; seed < 300; seed++) {
      const history: { question: string; answer: string }[] = [];
      let last = "";
      const ep = playEpisode(env, seed, (e, obs, t) => {
        if (t > 0) history.push({ question: last, answer: obs });
        last = twentyQExpertAction(e as TwentyQEnv, history);
        return last;
      });
      expect(ep.success, `seed ${seed}`).toBe(true);
      expect(ep.length).toBeLessThanOrEqual(8);
    }
  });
});

describe("two-player games", () => {
  it("tic-tac-toe: a scripted line wins for X with +1/-1", () => {
    const env = new TicTacToeEnv(ticTacToeConfigSchema.parse({}));
    const moves = ["a1", "b1", "a2", "b2", "a3"];
    const ep = playEpisode(env, 0, (_e, _o, t) => moves[t]);
    expect(ep.success).toBe(true);
    expect(ep.turns.map((t) => t.agent)).toEqual([0, 1, 0, 1, 0]);
    expect(ep.turns[4].rewards).toEqual([1, -1]);
    expect(ep.returns).toEqual([1, -1]);
    expect(ep.turns[4].info.winner).toBe(0);
  });

  it("tic-tac-toe: perfect play by both players draws", () => {
    const env = new TicTacToeEnv(ticTacToeConfigSchema.parse({}));
    const lines = [
      [0, 1, 2],
      [3, 4, 5],
      [6, 7, 8],
      [0, 3, 6],
      [1, 4, 7],
      [2, 5, 8],
      [0, 4, 8],
      [2, 4, 6],
    ];
    const memo = new Map<string, number>();
    // Negamax value for the player to move.
    const value = (b: string[], me: string): number => {
      const k = b.join("") + me;
      if (memo.has(k)) return memo.get(k)!;
      const other = me === "X" ? "O" : "X";
      if (lines.some((l) => l.every((i) => b[i] === other))) return -1;
      if (!b.includes(".")) return 0;
      let best = -2;
      b.forEach((c, i) => {
        if (c !== ".") return;
        b[i] = me;
        best = Math.max(best, -value(b, other));
        b[i] = ".";
      });
      memo.set(k, best);
      return best;
    };
    const ep = playEpisode(env, 0, (e) => {
      const { board, toMove } = (e as TicTacToeEnv).state;
      const me = toMove === 0 ? "X" : "O";
      let bestCell = -1;
      let bestValue = -2;
      board.forEach((c, i) => {
        if (c !== ".") return;
        board[i] = me;
        const v = -value(board, me === "X" ? "O" : "X");
        board[i] = ".";
        if (v > bestValue) [bestValue, bestCell] = [v, i];
      });
      return `${"abc"[bestCell % 3]}${Math.floor(bestCell / 3) + 1}`;
    });
    expect(ep.turns[ep.length - 1].info.draw).toBe(true);
    expect(ep.returns).toEqual([0, 0]);
  });

  it("kuhn poker: betting a king and folding anything else wins the hand", () => {
    const env = new KuhnPokerEnv(kuhnPokerConfigSchema.parse({ hands: 1 }));
    let wins = 0;
    for (let seed = 0; seed < 60; seed++) {
      const ep = playEpisode(env, seed, (e) => {
        const s = (e as KuhnPokerEnv).state;
        const me = e.currentAgent()!;
        const king = s.cards[me] === 2;
        const legal = e.admissibleActions()!;
        if (legal.includes("bet")) return king ? "bet" : "check";
        return king ? "call" : "fold";
      });
      const winner = ep.turns[ep.length - 1].info.winner as number;
      const king = env.state.cards.indexOf(2);
      if (king >= 0) {
        expect(winner).toBe(king);
        wins++;
      }
      expect(ep.returns[0] + ep.returns[1]).toBe(0);
    }
    expect(wins).toBeGreaterThan(20);
  });

  it("kuhn poker: chips add up over several hands and the first player alternates", () => {
    const env = new KuhnPokerEnv(kuhnPokerConfigSchema.parse({ hands: 4, maxTurns: 40 }));
    const ep = playEpisode(env, 5, () => "check");
    expect(ep.length).toBe(8);
    expect(ep.turns.map((t) => t.agent)).toEqual([0, 1, 1, 0, 0, 1, 1, 0]);
    expect(ep.returns[0] + ep.returns[1]).toBe(0);
    expect(Math.abs(ep.returns[0])).toBeLessThanOrEqual(4);
  });
});
