// Where a benchmark cell's CPU went, from Linux's /proc: the whole machine, the server's event loop,
// its other threads (SQLite's ingest thread, GC, libuv's pool), its ingest processes (PostgreSQL),
// PostgreSQL's processes, and this load generator. It tells a cell that waited for cores (the
// machine busy on every core) from one that waited for a lock or a round trip (cores idle), which
// decides whether more concurrency (an asynchronous pool, more processes) could help at all.
import fs from "node:fs";
import os from "node:os";

export interface CpuSnapshot {
  at: number;
  /** whole machine: busy and total jiffies over all cores (/proc/stat) */
  machineBusy: number;
  machineTotal: number;
  /** jiffies of each group below */
  groups: Record<CpuGroup, number>;
}

/** The groups a snapshot counts, in the order cpuMsPerRequest gives them. */
export const CPU_GROUPS = [
  "server event loop",
  "server's other threads",
  "other server processes",
  "ingest processes",
  "PostgreSQL",
  "load generator",
] as const;
export type CpuGroup = (typeof CPU_GROUPS)[number];

/** The fields of a /proc/<pid>/stat or /proc/<pid>/task/<tid>/stat line read here; null once the process has ended. */
export function procStat(file: string): { ppid: number; cpuJiffies: number; nice: number; comm: string } | null {
  let s: string;
  try {
    s = fs.readFileSync(file, "utf8");
  } catch {
    return null; // the process ended meanwhile
  }
  const close = s.lastIndexOf(")");
  const f = s.slice(close + 2).split(" "); // f[0] is field 3 (state): ppid 4, utime 14, stime 15, nice 19
  return { ppid: Number(f[1]), cpuJiffies: Number(f[11]) + Number(f[12]), nice: Number(f[16]), comm: s.slice(s.indexOf("(") + 1, close) };
}

/** Whether a process is one of a server's ingest processes (PostgreSQL's, lib/ingest/pool.ts). */
export function isIngestProcess(pid: number): boolean {
  return cmdline(pid).includes("thread-boot");
}

function cmdline(pid: number): string {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ");
  } catch {
    return "";
  }
}

/** The CPU time so far of each group, with the server's process id; null where /proc is not Linux's. */
export function cpuSnapshot(serverPid: number): CpuSnapshot | null {
  if (!fs.existsSync("/proc/stat")) return null;
  const cpu = fs.readFileSync("/proc/stat", "utf8").split("\n")[0].split(/\s+/).slice(1).map(Number);
  const total = cpu.reduce((a, b) => a + b, 0);
  const idle = cpu[3] + (cpu[4] ?? 0); // idle + iowait
  const groups = Object.fromEntries(CPU_GROUPS.map((g) => [g, 0])) as Record<CpuGroup, number>;
  const procs = new Map<number, NonNullable<ReturnType<typeof procStat>>>();
  for (const name of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    const st = procStat(`/proc/${name}/stat`);
    if (st) procs.set(Number(name), st);
  }
  const underServer = (pid: number) => {
    for (let p = procs.get(pid)?.ppid; p && p > 1; p = procs.get(p)?.ppid) if (p === serverPid) return true;
    return false;
  };
  for (const [pid, { cpuJiffies, comm }] of procs) {
    if (pid === serverPid) {
      // per thread: the event loop is the thread whose id is the process id
      for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
        const t = procStat(`/proc/${pid}/task/${tid}/stat`);
        if (t) groups[Number(tid) === pid ? "server event loop" : "server's other threads"] += t.cpuJiffies;
      }
    } else if (pid === process.pid) groups["load generator"] += cpuJiffies;
    else if (comm === "postgres") groups.PostgreSQL += cpuJiffies;
    else if (underServer(pid)) groups[isIngestProcess(pid) ? "ingest processes" : "other server processes"] += cpuJiffies;
  }
  return { at: performance.now(), machineBusy: total - idle, machineTotal: total, groups };
}

/** Cores each group used between two snapshots (CPU seconds a second), the machine's busy cores and the seconds between; null where /proc is not Linux's. */
export function cpuCores(
  a: CpuSnapshot | null,
  b: CpuSnapshot | null,
): { seconds: number; cores: number; busy: number; groups: Record<CpuGroup, number> } | null {
  if (!a || !b) return null;
  const hz = 100; // USER_HZ: /proc's jiffies are 1/100 s on Linux whatever the kernel's tick
  const seconds = (b.at - a.at) / 1000;
  const cores = os.availableParallelism();
  const busy = ((b.machineBusy - a.machineBusy) / (b.machineTotal - a.machineTotal)) * cores;
  const groups = Object.fromEntries(CPU_GROUPS.map((g) => [g, (b.groups[g] - a.groups[g]) / hz / seconds])) as Record<CpuGroup, number>;
  return { seconds, cores, busy, groups };
}

/** "machine 1.97 of 2 cores busy; server event loop 0.95, ..." between two snapshots (cores: CPU seconds a second). */
export function cpuSplit(a: CpuSnapshot | null, b: CpuSnapshot | null): string {
  const c = cpuCores(a, b);
  if (!c) return "";
  const parts = CPU_GROUPS.filter((g) => c.groups[g] >= 0.005).map((g) => `${g} ${c.groups[g].toFixed(2)}`);
  return `machine ${c.busy.toFixed(2)} of ${c.cores} cores busy; ${parts.join(", ")}`;
}

/**
 * CPU milliseconds each group spent per answered request between two snapshots, as table cells in
 * the order of `CPU_GROUPS`, then their sum; null where /proc is not Linux's. At one connection the
 * requests run one after another, so the sum is about a request's latency: it says which part of
 * the path a request waits on.
 */
export function cpuMsPerRequest(a: CpuSnapshot | null, b: CpuSnapshot | null, requests: number): string[] | null {
  const c = cpuCores(a, b);
  if (!c || requests <= 0) return null;
  const ms = CPU_GROUPS.map((g) => (c.groups[g] * c.seconds * 1000) / requests);
  return [...ms, ms.reduce((x, y) => x + y, 0)].map((x) => x.toFixed(2));
}
