// The ALFWorld-sized workload the real-scale benchmarks write (bench:realistic, bench:store):
// one GiGPO training step of 16 tasks x 8 trajectories x 50 turns = 6,400 turns, the size of
// verl-agent's ALFWorld defaults, with 1-2 KB observations that repeat each other the way a text
// environment's do (the room, the task, the admissible actions), anchors, validity, token counts,
// turn entropies and the GiGPO advantages lib/credit gives them; optionally `tokens` response
// tokens a turn with ids, texts, log-probs, advantages and entropies. Seeded: the same step every time.
import { createRng } from "../lib/envs/rng";
import type { RolloutStepInput } from "../lib/schemas/rollouts";
import { withGigpoAdvantages } from "./seed-bench-ui";

export const TASKS = 16;
export const G = 8;
export const T = 50;
export const GIGPO_PARAMS = { gamma: 0.95, omega: 1 };

const ROOMS = ["kitchen", "livingroom", "bedroom", "bathroom"];
const OBJECTS = [
  "apple",
  "mug",
  "knife",
  "plate",
  "book",
  "pen",
  "keychain",
  "cellphone",
  "pillow",
  "soapbar",
  "towel",
  "candle",
  "vase",
  "watch",
  "cd",
  "bowl",
];
const PLACES = [
  "countertop 1",
  "countertop 2",
  "cabinet 1",
  "cabinet 2",
  "drawer 1",
  "drawer 2",
  "fridge 1",
  "microwave 1",
  "shelf 1",
  "sinkbasin 1",
  "desk 1",
  "bed 1",
  "sofa 1",
  "garbagecan 1",
  "stoveburner 1",
  "toilet 1",
];
const ACTIONS = ["go to", "open", "close", "take", "put", "examine", "use", "look", "inventory", "heat", "cool", "clean"];

/** An ALFWorld-like observation of 1-2 KB: the room, what the agent sees, and the task. */
function observation(task: number, turn: number, place: number, r: () => number): string {
  const lines = [
    `-= Welcome to TextWorld, ALFRED! =- Turn ${turn + 1}.`,
    `You are in the middle of a ${ROOMS[task % 4]}. Looking quickly around you, you see ${PLACES.map((p, i) => `a ${p}${i % 3 === 0 ? " (open)" : ""}`).join(", ")}.`,
    `Your task is to: put a clean ${OBJECTS[task % OBJECTS.length]} in ${PLACES[(task * 5) % PLACES.length]}.`,
    `You arrive at ${PLACES[place]}. On the ${PLACES[place]}, you see ${Array.from({ length: 3 + Math.floor(r() * 6) }, (_, i) => `a ${OBJECTS[(place + i * 3) % OBJECTS.length]} ${1 + ((i + turn) % 3)}`).join(", ")}.`,
    `Admissible actions: ${Array.from({ length: 10 + Math.floor(r() * 14) }, (_, i) => `${ACTIONS[(i + turn) % ACTIONS.length]} ${PLACES[(i * 7 + place) % PLACES.length]}`).join(", ")}.`,
  ];
  return lines.join("\n");
}

/** Step `step` of a run of `steps` (success rises and entropy falls over the run). */
export async function realisticStep(step: number, steps: number, tokens = 0): Promise<RolloutStepInput> {
  const r = createRng(step * 7919 + 1).next;
  const groups: RolloutStepInput["groups"] = [];
  for (let g = 0; g < TASKS; g++) {
    const task = step * TASKS + g;
    groups.push({
      uid: `task-${task}`,
      envId: "alfworld",
      taskSeed: task,
      trajectories: Array.from({ length: G }, () => {
        const success = r() < 0.2 + (0.5 * step) / Math.max(1, steps);
        let place = 0;
        return {
          success,
          truncated: !success,
          turns: Array.from({ length: T }, (_, i) => {
            const obs = observation(task, i, place, r);
            const next = Math.floor(r() * PLACES.length);
            const action = `Think: the ${OBJECTS[task % OBJECTS.length]} may be at ${PLACES[next]}.\nAction: go to ${PLACES[next]}`;
            const anchor = `${task}:${PLACES[place]}`;
            place = next;
            return {
              observation: obs,
              action,
              reward: i === T - 1 && success ? 10 : 0,
              valid: r() > 0.05,
              done: i === T - 1,
              anchor,
              tokenCount: 20 + Math.floor(r() * 40),
              // the policy's turn entropy, falling over training at the later turns
              entropy: Math.max(0.05, 1.2 - (0.9 * step * i) / (steps * T)) + 0.2 * r(),
            };
          }),
        };
      }),
    });
  }
  await withGigpoAdvantages(groups, GIGPO_PARAMS);
  if (tokens > 0) {
    const rt = createRng(step * 104729 + 7).next;
    for (const g of groups)
      for (const t of g.trajectories)
        for (const u of t.turns) {
          u.tokenIds = Array.from({ length: tokens }, () => Math.floor(rt() * 150_000));
          u.tokenTexts = Array.from({ length: tokens }, () => `t${Math.floor(rt() * 100)}`);
          u.tokenLogprobs = Array.from({ length: tokens }, () => -rt());
          u.tokenAdvantages = Array.from({ length: tokens }, () => u.advantage ?? 0);
          u.tokenEntropies = Array.from({ length: tokens }, () => rt());
        }
  }
  return { step, estimator: "gigpo", params: GIGPO_PARAMS, groups };
}
