// Benchmark of lib/credit: turns per second of GiGPO and GRPO on 10^4, 10^5, 10^6 turns, and
// peak memory; then `runCredit` (validation included) against the kernel, and end to end on 10^6
// GiGPO turns: the credit command as a user runs it (`turnlens-credit`, the package's bin, through
// a link as `npm link` makes one; and `npm run --silent credit`) against scripts/credit_numpy_port.py, a float64 numpy port of the same semantics written as a Python
// user would (json.load, dictionaries, numpy per group), on the same input file in the same run,
// with the ratios, the load average, and the largest difference of the advantages (< 1e-9).
// Run: `npm run bench:credit` (`-- --quick`: 10^4 and 10^5 only, no end-to-end part; `-- --e2e`:
// only runCredit and the end-to-end part; `-- --cli`: only the end-to-end part).
//
// Batches look like agent rollouts: groups of 8 trajectories of 5-15 turns (mean 10) that walk
// a 4x4 grid from the same start, so anchors (rendered observations, ~50 chars) repeat across
// the group's trajectories and within them. The batch goes through a JSON round trip first, so
// every turn is a plain object with its own flat string, as the CLI and the API receive it.
// Timing covers the whole `compute(batch)`: flattening, the estimator and the per-trajectory output.
import { spawnSync } from "node:child_process";
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { cpus, loadavg as loadavg1, tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import v8 from "node:v8";
import vm from "node:vm";
import { runCredit } from "../lib/credit/index";
import { estimators } from "../lib/credit/registry";
import type { Batch, Group, Turn } from "../lib/credit/types";

function rng(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function render(x: number, y: number, task: number): string {
  // a small text observation: the task id and the agent's position on a 4x4 grid
  let s = `task ${task} | `;
  for (let r = 0; r < 4; r++) {
    for (let c = 0; c < 4; c++) s += r === y && c === x ? "P" : (r * 4 + c + task) % 7 === 0 ? "H" : ".";
    s += r < 3 ? "/" : "";
  }
  return s + ` | goal 3,3`;
}

export function makeBatch(targetTurns: number, seed = 1): Batch {
  const rand = rng(seed);
  const groups: Group[] = [];
  let turns = 0;
  let g = 0;
  while (turns < targetTurns) {
    const task = g % 997;
    const trajectories = [];
    for (let k = 0; k < 8 && turns < targetTurns; k++) {
      const len = Math.min(5 + Math.floor(rand() * 11), targetTurns - turns);
      let x = 0;
      let y = 0;
      const ts: Turn[] = [];
      for (let t = 0; t < len; t++) {
        const anchor = render(x, y, task); // a fresh string object per turn
        const move = Math.floor(rand() * 4);
        if (move === 0) x = Math.min(3, x + 1);
        else if (move === 1) y = Math.min(3, y + 1);
        else if (move === 2) x = Math.max(0, x - 1);
        else y = Math.max(0, y - 1);
        const last = t === len - 1;
        ts.push({ anchor, reward: last && x + y >= 4 ? 1 : 0, invalid: rand() < 0.05 });
      }
      turns += len;
      trajectories.push({ id: `g${g}-t${k}`, turns: ts });
    }
    groups.push({ uid: `g${g}`, trajectories });
    g++;
  }
  return { groups };
}

function countTurns(b: Batch): number {
  let n = 0;
  for (const g of b.groups) for (const t of g.trajectories) n += t.turns.length;
  return n;
}

function main(): void {
  v8.setFlagsFromString("--expose-gc");
  const gc = vm.runInNewContext("gc") as () => void;
  const quick = process.argv.includes("--quick");
  const cliOnly = process.argv.includes("--cli"); // only the end-to-end part
  const e2eOnly = cliOnly || process.argv.includes("--e2e"); // only runCredit vs kernel and end to end
  const sizes = e2eOnly ? [] : quick ? [1e4, 1e5] : [1e4, 1e5, 1e6];
  const reps = (n: number) => (n >= 1e6 ? 6 : n >= 1e5 ? 8 : 20);

  console.log(`lib/credit benchmark (node ${process.version}, ${process.platform}/${process.arch}, ${cpus().length} cores, load average ${loadavg()})`);
  console.log("estimator  turns      best ms   median ms  cpu ms (best)  turns/s (best)   heap+ MB   peak RSS MB");
  for (const size of sizes) {
    // JSON round trip: flat strings and plain objects, exactly what the CLI / API would receive
    const batch = JSON.parse(JSON.stringify(makeBatch(size, 7))) as Batch;
    const n = countTurns(batch);
    for (const id of ["gigpo", "grpo"] as const) {
      const spec = estimators[id];
      const params = id === "gigpo" ? { gamma: 0.95, omega: 1, mode: "mean_std_norm", invalidPenalty: 0.1 } : {};
      spec.compute({ groups: batch.groups.slice(0, 50) }, params); // warm-up (JIT)
      const times: number[] = [];
      let cpuBest = Infinity;
      let heapDelta = 0;
      for (let r = 0; r < reps(size); r++) {
        gc();
        const heap0 = process.memoryUsage().heapUsed;
        const fresh: Batch = { groups: batch.groups };
        const c0 = process.cpuUsage();
        const t0 = performance.now();
        const res = spec.compute(fresh, params);
        const t1 = performance.now();
        const c = process.cpuUsage(c0);
        times.push(t1 - t0);
        cpuBest = Math.min(cpuBest, (c.user + c.system) / 1000);
        heapDelta = Math.max(heapDelta, process.memoryUsage().heapUsed - heap0);
        if (res.trajectories.length === 0) throw new Error("empty result");
      }
      times.sort((a, b) => a - b);
      const best = times[0];
      const median = times[Math.floor(times.length / 2)];
      const peakRss = process.resourceUsage().maxRSS / 1024;
      console.log(
        `${id.padEnd(10)} ${String(n).padEnd(10)} ${best.toFixed(1).padStart(8)} ${median.toFixed(1).padStart(10)} ${cpuBest.toFixed(1).padStart(13)}  ${Math.round(
          n / (best / 1000),
        )
          .toLocaleString("en-US")
          .padStart(14)}   ${(heapDelta / 2 ** 20).toFixed(1).padStart(8)}   ${peakRss.toFixed(0).padStart(10)}`,
      );
    }
  }
  console.log("cpu = process CPU time (all threads, GC included); heap+ = heap growth while one result is alive");
  console.log("(input batch excluded); peak RSS = process maximum so far (includes the input batches).");
  if (!quick) {
    gc();
    if (!cliOnly) runCreditVsKernel(gc);
    gc();
    endToEnd();
  }
}

const GIGPO_PARAMS = { gamma: 0.95, omega: 1, mode: "mean_std_norm", invalidPenalty: 0.1 };

/** Best wall and best CPU time (ms) of `reps` runs; CPU time is steadier on a shared machine. */
function best(reps: number, fn: () => void, gc?: () => void): { wall: number; cpu: number } {
  let wall = Infinity;
  let cpu = Infinity;
  for (let r = 0; r < reps; r++) {
    gc?.();
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    fn();
    wall = Math.min(wall, performance.now() - t0);
    const c = process.cpuUsage(c0);
    cpu = Math.min(cpu, (c.user + c.system) / 1000);
  }
  return { wall, cpu };
}

/** runCredit (validation, transform, estimator, output objects) against compute(batch) alone. */
function runCreditVsKernel(gc: () => void): void {
  const request = JSON.parse(JSON.stringify({ estimator: "gigpo", params: GIGPO_PARAMS, groups: makeBatch(1e6, 7).groups }));
  const kernel = best(5, () => estimators.gigpo.compute({ groups: request.groups }, GIGPO_PARAMS), gc);
  const full = best(5, () => runCredit(request), gc);
  const adv = best(5, () => runCredit(request, { output: "advantages" }), gc);
  const fmt = (x: { wall: number; cpu: number }) =>
    `${x.wall.toFixed(0)} wall (${(x.wall / kernel.wall).toFixed(2)}x), ${x.cpu.toFixed(0)} cpu (${(x.cpu / kernel.cpu).toFixed(2)}x)`;
  console.log(`\nrunCredit vs kernel, gigpo, 10^6 turns (best of 5, ms; ratio to the kernel):`);
  console.log(`  kernel compute(batch)       ${kernel.wall.toFixed(0)} wall, ${kernel.cpu.toFixed(0)} cpu`);
  console.log(`  runCredit full              ${fmt(full)}`);
  console.log(`  runCredit advantages-only   ${fmt(adv)}`);
}

const TIME = "/usr/bin/time";
const hasTime = spawnSync(TIME, ["-f", "%U", "true"]).status === 0;

/** Median, lowest and highest of some timings. */
interface Spread {
  median: number;
  min: number;
  max: number;
}
function spread(xs: number[]): Spread {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return { median: s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2, min: s[0], max: s[s.length - 1] };
}

/**
 * Wall time and CPU time (user + system of the process tree, via /usr/bin/time when present) of
 * `reps` runs of a command reading `input` on stdin and writing stdout to `output`, in seconds.
 * CPU time is the steadier figure on a shared machine, where wall time also measures the other jobs.
 */
function timeCommand(cmd: string, args: string[], input: string, output: string, reps: number): { wall: Spread; cpu: Spread | null } {
  const walls: number[] = [];
  const cpus: number[] = [];
  for (let r = 0; r < reps; r++) {
    const inFd = openSync(input, "r");
    const outFd = openSync(output, "w");
    const t0 = performance.now();
    const res = hasTime
      ? spawnSync(TIME, ["-f", "cpu %U %S", cmd, ...args], { stdio: [inFd, outFd, "pipe"], cwd: join(import.meta.dirname, "..") })
      : spawnSync(cmd, args, { stdio: [inFd, outFd, "pipe"], cwd: join(import.meta.dirname, "..") });
    walls.push((performance.now() - t0) / 1000);
    closeSync(inFd);
    closeSync(outFd);
    if (res.status !== 0) throw new Error(`${cmd} ${args.join(" ")} exited ${res.status}: ${res.stderr}`);
    const m = /cpu ([\d.]+) ([\d.]+)\s*$/.exec(res.stderr.toString());
    if (m) cpus.push(Number(m[1]) + Number(m[2]));
  }
  return { wall: spread(walls), cpu: cpus.length === reps ? spread(cpus) : null };
}

/** Largest |a - b| over every advantage of two responses (same trajectories, same order). */
function maxAbsDiff(fileA: string, fileB: string): number {
  const a = JSON.parse(readFileSync(fileA, "utf8")).trajectories as { id: string; advantages: number[] }[];
  const b = JSON.parse(readFileSync(fileB, "utf8")).trajectories as { id: string; advantages: number[] }[];
  if (a.length !== b.length) throw new Error(`${fileA}: ${a.length} trajectories, ${fileB}: ${b.length}`);
  let worst = 0;
  a.forEach((t, i) => {
    const u = b[i];
    if (t.id !== u.id || t.advantages.length !== u.advantages.length) throw new Error(`trajectory ${i}: ${t.id} vs ${u.id}`);
    t.advantages.forEach((x, j) => {
      worst = Math.max(worst, Math.abs(x - u.advantages[j]));
    });
  });
  return worst;
}

const loadavg = () =>
  loadavg1()
    .map((x) => x.toFixed(2))
    .join(" ");

/**
 * The CLI against scripts/credit_numpy_port.py (GiGPO in float64 numpy as a Python user writes it:
 * json.load, dictionaries for the groups, numpy arithmetic per group, json.dumps) on one 10^6-turn
 * GiGPO request file, in this one run; checks that both give the same advantages.
 */
function endToEnd(): void {
  const dir = mkdtempSync(join(tmpdir(), "bench-credit-"));
  try {
    const input = join(dir, "request.json");
    writeFileSync(input, JSON.stringify({ estimator: "gigpo", params: GIGPO_PARAMS, groups: makeBatch(1e6, 7).groups }));
    const mb = (f: string) => (readFileSync(f).length / 2 ** 20).toFixed(0);
    const py = process.env.TURNLENS_PYTHON ?? "python3";
    const hasNumpy = spawnSync(py, ["-c", "import numpy"]).status === 0;
    // 5 runs of each CLI command, 3 of the numpy port (8 s each): medians, with the range
    const reps = { cli: 5, py: 3 };
    console.log(
      `\nend to end, gigpo, 10^6 turns, request ${mb(input)} MB (median (min-max) of ${reps.cli} runs, numpy port ${reps.py}; process start included; ${cpus().length} cores, load average ${loadavg()}):`,
    );
    spawnSync("node", ["scripts/credit-cli.mjs", "--build"], { cwd: join(import.meta.dirname, "..") });
    // one untimed run on a small request: writes the CLI's code cache when the build above was new
    const small = JSON.stringify({ estimator: "gigpo", params: GIGPO_PARAMS, groups: makeBatch(500, 3).groups });
    spawnSync("node", ["scripts/credit-cli.mjs"], { cwd: join(import.meta.dirname, ".."), input: small });
    const fmt = (x: Spread) => `${x.median.toFixed(2).padStart(5)} (${x.min.toFixed(2)}-${x.max.toFixed(2)})`;
    const run = (label: string, cmd: string, args: string[], out: string, n: number) => {
      const t = timeCommand(cmd, args, input, join(dir, out), n);
      console.log(`  ${label.padEnd(52)} ${fmt(t.wall)} s wall ${t.cpu ? fmt(t.cpu) : "   -"} s cpu  (response ${mb(join(dir, out))} MB)`);
      return t;
    };
    // the bin as `npm link` / `npm install -g` installs it: a symlink to scripts/credit-cli.mjs, run through its #! line
    const bin = join(dir, "turnlens-credit");
    symlinkSync(join(import.meta.dirname, "credit-cli.mjs"), bin);
    const binFull = run("turnlens-credit (full response)", bin, [], "full.json", reps.cli);
    const binAdv = run("turnlens-credit --advantages-only", bin, ["--advantages-only"], "adv.json", reps.cli);
    const npmFull = run("npm run --silent credit (full response)", "npm", ["run", "--silent", "credit"], "full2.json", reps.cli);
    const npmAdv = run("npm run --silent credit -- --advantages-only", "npm", ["run", "--silent", "credit", "--", "--advantages-only"], "adv2.json", reps.cli);
    if (!hasNumpy) {
      console.log(`  numpy port: skipped (${py} has no numpy)`);
      return;
    }
    const pyT = run("python3 scripts/credit_numpy_port.py (advantages)", py, ["scripts/credit_numpy_port.py"], "py.json", reps.py);
    // same numbers: the numpy port and the CLI agree on every advantage, full and advantages-only
    const diffAdv = maxAbsDiff(join(dir, "adv.json"), join(dir, "py.json"));
    const diffFull = maxAbsDiff(join(dir, "full.json"), join(dir, "py.json"));
    const ok = diffAdv < 1e-9 && diffFull < 1e-9;
    console.log(
      `  max abs difference of the advantages, CLI vs numpy port: ${diffAdv.toExponential(2)} (advantages-only), ${diffFull.toExponential(2)} (full)  ${ok ? "ok (< 1e-9)" : "FAIL (>= 1e-9)"}`,
    );
    if (!ok) process.exitCode = 1;
    // ratios of the medians; in brackets the worst case (slowest CLI run against the fastest port run)
    const ratio = (p: Spread, c: Spread) => `${(p.median / c.median).toFixed(1)}x [${(p.min / c.max).toFixed(1)}x]`;
    const ratios = (k: "wall" | "cpu", full: typeof binFull, adv: typeof binAdv) => {
      const [p, f, a] = [pyT[k], full[k], adv[k]];
      return p && f && a ? `full ${ratio(p, f)}, advantages-only ${ratio(p, a)}` : "-";
    };
    console.log(
      `  ratio numpy port / turnlens-credit (medians [worst]), wall: ${ratios("wall", binFull, binAdv)}   (goals: full >= 5x, advantages-only >= 8x)`,
    );
    if (hasTime) console.log(`  ratio numpy port / turnlens-credit (medians [worst]), cpu:  ${ratios("cpu", binFull, binAdv)}`);
    console.log(`  ratio numpy port / npm run credit (medians [worst]), wall:  ${ratios("wall", npmFull, npmAdv)}   (npm's launcher included)`);
    console.log(`  load average after: ${loadavg()} (1, 5, 15 min)`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) main();
