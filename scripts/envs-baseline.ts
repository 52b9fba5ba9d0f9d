// The random-policy floor of every environment, and step throughput.
//   npm run envs:baseline                      # 1,000 episodes per environment, default configs
//   npm run envs:baseline -- --episodes 200 --env sokoban,shop
//   npm run envs:baseline -- --instances 100000   # distinct instances among 10^5 seeds per environment
// A uniformly random policy samples env.sampleActions() where the environment defines it
// (open action spaces: search queries, answers), else env.admissibleActions(). Tasks are the
// held-out set's distinct instances (lib/envs/heldout.ts), the ones trained policies are
// evaluated on; the policy's stream is seeded separately, so the table is reproducible.
import { ENV_IDS, createEnv, defaultConfig, type EnvId } from "../lib/envs/registry";
import { evalTasks, heldOutSet, sampleInstances } from "../lib/envs/heldout";
import { randomAction } from "../lib/envs/random-policy";
import { createRng, mixSeed } from "../lib/envs/rng";

// What "random" means where the action space is open (see lib/envs/README.md).
const NOTES: Partial<Record<EnvId, string>> = {
  shop: "search page: one of 4 generated queries (the instruction, the product type, attribute + type, another type); other pages: uniform over the page's clickables",
  searchqa:
    "uniform over search[name] for each entity in the questions and in the last passages, plus 4 answer[...] candidates (each question's gold answer is in exactly one)",
  countdown: "uniform over the legal combinations of two numbers (whole-expression answers are not sampled)",
  twentyq: "uniform over the 20 yes/no questions and a guess for each of the 16 candidates",
  tictactoe: "both players random; success = player 0 (X) wins; return = player 0's",
  kuhnpoker: "both players random; success = player 0 wins the hand; return = player 0's chips",
};

interface Row {
  id: EnvId;
  episodes: number;
  success: number;
  meanReturn: number;
  meanLength: number;
  invalidRate: number;
  truncatedRate: number;
  stepsPerSec: number;
  turnsPerSec: number;
  resetMicros: number;
  extra?: string;
}

function measure(id: EnvId, episodes: number): Row {
  const env = createEnv(id);
  const seeds = evalTasks(heldOutSet(id, {}, episodes), episodes).map((t) => t.seed);
  let successes = 0;
  let resetMs = 0;
  let totalReturn = 0;
  let turns = 0;
  let invalid = 0;
  let truncated = 0;
  let stepMs = 0;
  const outcomes = [0, 0, 0]; // two-player: player 0 wins, player 1 wins, draws
  const t0 = performance.now();
  for (let i = 0; i < episodes; i++) {
    // A small instance space holds out fewer instances than episodes: they repeat.
    const seed = seeds[i % seeds.length];
    const rng = createRng(mixSeed("baseline-policy", id, i));
    const r0 = performance.now();
    env.reset(seed);
    resetMs += performance.now() - r0;
    const returns = new Array<number>(env.numAgents).fill(0);
    for (;;) {
      env.anchorKey(); // the worker stores an anchor for every turn: count its cost
      const action = randomAction(env, rng);
      const s0 = performance.now();
      const r = env.step(action);
      stepMs += performance.now() - s0;
      turns++;
      if (!r.info.valid) invalid++;
      if (r.rewards)
        r.rewards.forEach((x, i) => {
          returns[i] += x;
        });
      else returns[0] += r.reward;
      if (r.done || r.truncated) {
        if (r.truncated) truncated++;
        if (env.numAgents === 2) {
          const winner = r.info.winner as number | null | undefined;
          outcomes[winner === 0 ? 0 : winner === 1 ? 1 : 2]++;
          if (winner === 0) successes++;
        } else if (r.info.success) successes++;
        break;
      }
    }
    totalReturn += returns[0];
  }
  const totalMs = performance.now() - t0;
  return {
    id,
    episodes,
    success: successes / episodes,
    meanReturn: totalReturn / episodes,
    meanLength: turns / episodes,
    invalidRate: invalid / turns,
    truncatedRate: truncated / episodes,
    stepsPerSec: turns / (stepMs / 1000),
    turnsPerSec: turns / (totalMs / 1000),
    resetMicros: (1000 * resetMs) / episodes,
    extra:
      env.numAgents === 2
        ? `P0 wins ${pct(outcomes[0] / episodes)}, P1 wins ${pct(outcomes[1] / episodes)}, draws/unfinished ${pct(outcomes[2] / episodes)}`
        : undefined,
  };
}

function pct(x: number): string {
  return `${(100 * x).toFixed(1)}%`;
}

function kilo(x: number): string {
  return x >= 1e6 ? `${(x / 1e6).toFixed(2)}M` : `${Math.round(x / 1000)}k`;
}

function parseArgs(argv: string[]): { episodes: number; ids: EnvId[]; instances: number } {
  let episodes = 1000;
  let instances = 0;
  let ids: EnvId[] = [...ENV_IDS];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "--episodes") episodes = Number(argv[++i]);
    else if (argv[i] === "--instances") instances = Number(argv[++i]);
    else if (argv[i] === "--env") {
      const wanted = argv[++i].split(",");
      for (const w of wanted) if (!(ENV_IDS as readonly string[]).includes(w)) throw new Error(`unknown env ${w}; known: ${ENV_IDS.join(", ")}`);
      ids = wanted as EnvId[];
    } else throw new Error(`unknown argument ${argv[i]} (use --episodes N, --env a,b, --instances N)`);
  }
  if (!Number.isInteger(episodes) || episodes < 1) throw new Error("--episodes must be a positive integer");
  if (!Number.isInteger(instances) || instances < 0) throw new Error("--instances must be a non-negative integer");
  return { episodes, ids, instances };
}

/** Distinct instances among n seeds per environment (default configs), with the estimated space. */
function instanceTable(ids: EnvId[], n: number): string[] {
  const lines = [
    `Distinct instances among ${n.toLocaleString("en-US")} seeds (0..${n - 1}), default configs:`,
    "",
    "| env | config | distinct | estimated instances | reset() µs |",
    "|---|---|---:|---:|---:|",
  ];
  for (const id of ids) {
    const r = sampleInstances(id, {}, n);
    const estimate =
      r.estimate === null
        ? `> ${((n * n) / 2).toExponential(0)} (no repeat)`
        : r.distinct === r.estimate
          ? `${r.estimate} (exhausted)`
          : `~${r.estimate.toPrecision(2)}`;
    const cfg = Object.entries(defaultConfig(id))
      .filter(([k]) => k !== "maxTurns")
      .map(([k, v]) => `${k} ${JSON.stringify(v)}`)
      .join(", ");
    lines.push(`| ${id} | ${cfg} | ${r.distinct.toLocaleString("en-US")} | ${estimate} | ${((1e6 * r.seconds) / n).toFixed(0)} |`);
    process.stderr.write(`${id}: ${r.distinct} distinct in ${r.seconds.toFixed(1)} s\n`);
  }
  return lines;
}

function main(): void {
  const { episodes, ids, instances } = parseArgs(process.argv.slice(2));
  if (instances > 0) {
    console.log(instanceTable(ids, instances).join("\n"));
    return;
  }
  const rows: Row[] = [];
  for (const id of ids) {
    const row = measure(id, episodes);
    rows.push(row);
    process.stderr.write(`${id}: done (${row.episodes} episodes)\n`);
  }
  const lines = [
    `Random-policy baseline: ${episodes} episodes per environment on the held-out instances, default configs, Node ${process.version}.`,
    "",
    "| env | success | mean return | mean length | invalid | truncated | step() / s | turn / s | reset() µs |",
    "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ...rows.map(
      (r) =>
        `| ${r.id} | ${r.success.toFixed(3)} | ${r.meanReturn.toFixed(3)} | ${r.meanLength.toFixed(2)} | ${pct(r.invalidRate)} | ${pct(r.truncatedRate)} | ${kilo(r.stepsPerSec)} | ${kilo(r.turnsPerSec)} | ${r.resetMicros.toFixed(0)} |`,
    ),
    "",
    "step() / s: environment steps per second, step() alone. turn / s: whole turns per second including reset, anchorKey() and the random policy. reset() µs: mean generation time of an instance.",
    "",
    ...rows.filter((r) => NOTES[r.id] || r.extra).map((r) => `- ${r.id}: ${[NOTES[r.id], r.extra].filter(Boolean).join("; ")}.`),
  ];
  console.log(lines.join("\n"));
}

main();
