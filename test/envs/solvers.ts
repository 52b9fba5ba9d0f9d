// Scripted solvers used by the tests: independent of the environments' own generators,
// they read the state (or the observations) and pick actions by the rules of each game.
import type { HouseholdEnv } from "../../lib/envs/household";
import type { ShopEnv } from "../../lib/envs/shop";
import type { TwentyQEnv } from "../../lib/envs/twentyq";
import { TWENTYQ_QUESTIONS, twentyQAnswer } from "../../lib/envs/twentyq";

/** BFS over (player, boxes): a move-optimal Sokoban plan, null if unsolvable (lib/envs/sokoban-solver.ts). */
export { solveSokobanBfs } from "../../lib/envs/sokoban-solver";

/** BFS path on a FrozenLake map (rows of F/H/G, start top-left) as moves; null if none. */
export function solveFrozenLakeBfs(map: string[]): string[] | null {
  const n = map.length;
  const moves: [string, number, number][] = [
    ["left", 0, -1],
    ["down", 1, 0],
    ["right", 0, 1],
    ["up", -1, 0],
  ];
  const prev = new Map<number, [number, string] | null>([[0, null]]);
  const queue = [0];
  for (let qi = 0; qi < queue.length; qi++) {
    const cur = queue[qi];
    const r = Math.floor(cur / n);
    const c = cur % n;
    if (map[r][c] === "G") {
      const plan: string[] = [];
      for (let k = cur; prev.get(k); k = prev.get(k)![0]) plan.push(prev.get(k)![1]);
      return plan.reverse();
    }
    for (const [name, dr, dc] of moves) {
      const nr = r + dr;
      const nc = c + dc;
      if (nr < 0 || nc < 0 || nr >= n || nc >= n || map[nr][nc] === "H") continue;
      const k = nr * n + nc;
      if (!prev.has(k)) {
        prev.set(k, [cur, name]);
        queue.push(k);
      }
    }
  }
  return null;
}

/** Household: walk to an object, treat it if the task asks, carry it to the target (or the lamp). */
export function householdExpertAction(env: HouseholdEnv): string {
  const s = env.state;
  const task = s.task;
  const recep = (id: string) => s.receptacles.find((r) => r.id === id)!;
  const reach = (id: string): string | null => {
    const r = recep(id);
    if (r.room !== s.room) return `go to ${r.room}`;
    if (s.at !== id) return `go to ${id}`;
    if (r.openable && !r.open) return `open ${id}`;
    return null;
  };
  const held = s.holding ? s.objects.find((o) => o.id === s.holding)! : null;
  const treatment = task.type === "clean_then_place" ? "clean" : task.type === "heat_then_place" ? "heat" : task.type === "cool_then_place" ? "cool" : null;
  const appliance = treatment ? { clean: "sinkbasin", heat: "microwave", cool: "fridge" }[treatment] : null;
  const done = (o: (typeof s.objects)[number]) => !treatment || o[treatment === "clean" ? "clean" : treatment === "heat" ? "hot" : "cool"];

  if (!held) {
    const candidates = s.objects.filter(
      (o) => !o.lamp && o.type === task.objectType && o.loc !== "agent" && (task.targetType === null || recep(o.loc).type !== task.targetType),
    );
    const o = candidates[0];
    return reach(o.loc) ?? `take ${o.id} from ${o.loc}`;
  }
  if (task.type === "examine_in_light") {
    const lamp = s.objects.find((o) => o.lamp)!;
    return reach(lamp.loc) ?? `use ${lamp.id}`;
  }
  if (appliance && !done(held)) {
    const a = s.receptacles.find((r) => r.type === appliance)!;
    const r = recep(a.id);
    if (r.room !== s.room) return `go to ${r.room}`;
    if (s.at !== a.id) return `go to ${a.id}`;
    return `${treatment} ${held.id} with ${a.id}`;
  }
  const target = s.receptacles.find((r) => r.type === task.targetType)!;
  return reach(target.id) ?? `move ${held.id} to ${target.id}`;
}

/** Shop: search the target's title, open it from the results, pick the requested options, buy. */
export function shopExpertAction(env: ShopEnv): string {
  const { goal, page, selected } = env.state;
  const product = env.catalogue.find((p) => p.id === goal.productId)!;
  switch (page.kind) {
    case "search":
      return `search[${product.title}]`;
    case "results": {
      const clicks = env.clickables();
      if (clicks.includes(product.id)) return `click[${product.id}]`;
      return clicks.includes("next >") ? "click[next >]" : "click[back to search]";
    }
    case "item": {
      if (page.productId !== goal.productId) return "click[< prev]";
      const missing = Object.entries(goal.options).find(([d, v]) => selected[d] !== v);
      return missing ? `click[${missing[1]}]` : "click[buy now]";
    }
    case "detail":
      return "click[< prev]";
  }
}

/** Twenty questions: ask the question that best halves the consistent candidates; guess at one. */
export function twentyQExpertAction(env: TwentyQEnv, history: { question: string; answer: string }[]): string {
  const { candidates } = env.state; // only the public list; answers come from observations
  const consistent = candidates.filter((c) =>
    history.every(({ question, answer }) => {
      const q = TWENTYQ_QUESTIONS.find((x) => x.question === question);
      if (q) return twentyQAnswer(c, q.id) === (answer === "Yes.");
      return !question.includes(` ${c}?`); // a wrong guess
    }),
  );
  if (consistent.length === 1) return `Is it a ${consistent[0]}?`;
  let best = TWENTYQ_QUESTIONS[0];
  let bestScore = Infinity;
  for (const q of TWENTYQ_QUESTIONS) {
    const yes = consistent.filter((c) => twentyQAnswer(c, q.id)).length;
    const score = Math.abs(consistent.length - 2 * yes);
    if (score < bestScore) [best, bestScore] = [q, score];
  }
  return best.question;
}
