// npm run bench:load -- --store sqlite|postgresql|both [--duration 10] [--connections 1,8,64] [--ingest-queue N] [--mixed-ingest 8] [--rows all|mixed] [--repeat 1]
// Load figures of the production server (docs/scale.md): ingest and read endpoints
// driven by autocannon at 1, 8 and 64 concurrent connections, on a fresh database of each store
// (--store both: SQLite, then PostgreSQL, the same build, in one run). The last row, "reads during
// ingest", drives every read endpoint at random on 64 connections while --mixed-ingest connections
// post steps beside them: what a dashboard's readers see while trainers write. --repeat N runs that
// cell N times (one run spreads by a quarter on a shared 2-core machine) and gives the medians. Each
// such cell also says where the CPU went (scripts/cpu-split.ts): a machine busy on every core waits
// for cores, not for locks or round trips. Every single-endpoint cell also gives the CPU milliseconds
// each part spent per answered request.
//
// Seeds, through the HTTP API as a trainer would: 300 imported runs with varied configs (the run
// list's filter), one run of 10 metric keys x 100,000 steps (10^6 points: the chart), one run of
// 100 steps x 1,024 turns (the turn page and trajectories), and 64 runs that the ingest rows write
// into. Every ingest request carries its own batch id and its own steps, so nothing is
// deduplicated; the stored totals are checked against the 2xx count at the end.
// The load generator runs in this process on the same machine as the server (2 cores here).
import autocannon from "autocannon";
import { call, loadAverage, openStore, parseArgs, parseStore, percentile, startServer, stepBody, TURNS_PER_STEP } from "./bench-store";
import { CPU_GROUPS, cpuMsPerRequest, cpuSnapshot, cpuSplit } from "./cpu-split";
import { settleAfterBulkLoad } from "../lib/db/bulk-load";
import { openRawDb } from "../lib/db/raw";

const opts = parseArgs(process.argv.slice(2), {
  store: "sqlite",
  duration: "10",
  connections: "1,8,64",
  "ingest-queue": "",
  "mixed-ingest": "8",
  "server-processes": "",
  rows: "all",
  repeat: "1",
});
if (!["all", "mixed"].includes(opts.rows)) throw new Error(`--rows must be all or mixed (got ${opts.rows})`);
const repeat = Number(opts.repeat);
if (!(Number.isInteger(repeat) && repeat >= 1)) throw new Error(`--repeat must be a positive whole number (got ${opts.repeat})`);
// --server-processes: the server's TURNLENS_SERVER_PROCESSES (its default when not given)
const serverProcesses = opts["server-processes"];
if (serverProcesses && !(Number.isInteger(Number(serverProcesses)) && Number(serverProcesses) >= 1))
  throw new Error(`--server-processes must be a positive integer (got ${serverProcesses})`);
const kinds = opts.store === "both" ? (["sqlite", "postgresql"] as const) : [parseStore(opts.store)];
const mixedIngest = Number(opts["mixed-ingest"]);
if (!(Number.isInteger(mixedIngest) && mixedIngest >= 0)) throw new Error(`--mixed-ingest must be a whole number of connections (got ${opts["mixed-ingest"]})`);
const MIXED_READERS = 64;
const duration = Number(opts.duration);
const conns = opts.connections.split(",").map(Number);
if (!(duration > 0)) throw new Error(`--duration must be a positive number of seconds (got ${opts.duration})`);
if (conns.some((c) => !Number.isInteger(c) || c < 1)) throw new Error(`--connections must be positive integers joined by commas (got ${opts.connections})`);

const KEYS = Array.from({ length: 10 }, (_, i) => `train/k${i}`);
const METRIC_STEPS_PER_REQUEST = 100; // 100 steps x 10 keys = 1,000 points a request
const INGEST_RUNS = 64;

const loadStart = loadAverage();
const startedAt = new Date().toISOString();
const summaries: string[] = [];
for (const kind of kinds) summaries.push(await benchStore(kind));
console.log(`\nbench:load, ${startedAt}, ${duration} s a cell, stores ${kinds.join(" then ")}, load average at start ${loadStart}, at end ${loadAverage()}`);
for (const s of summaries) console.log(s);

async function benchStore(kind: (typeof kinds)[number]): Promise<string> {
  const store = await openStore(kind);
  console.error(`bench:load: ${kind} at ${store.url}`);
  // --ingest-queue: the server's TURNLENS_INGEST_QUEUE (default 16 in flight, then 429 + Retry-After)
  const queue = opts["ingest-queue"];
  if (queue && !(Number.isInteger(Number(queue)) && Number(queue) >= 1)) throw new Error(`--ingest-queue must be a positive integer (got ${queue})`);
  const server = await startServer(store.url, "/tmp/turnlens-bench-load-server.log", {
    ...(queue ? { TURNLENS_INGEST_QUEUE: queue } : {}),
    ...(serverProcesses ? { TURNLENS_SERVER_PROCESSES: serverProcesses } : {}),
  });
  const api = server.api;

  interface Imported {
    id: string;
    writeKey: string;
  }
  const importRun = (name: string, config: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
    call<Imported>(`${api}/runs/import`, { body: { project: "bench-load", name, config, envId: "sokoban", estimator: "gigpo", ...extra } });
  const writeHeaders = (r: Imported) => ({ "content-type": "application/json", "x-turnlens-write-key": r.writeKey });

  // ---- seed what the read endpoints need
  const t0 = performance.now();
  const LRS = [1e-6, 3e-6, 1e-5, 3e-5, 1e-4, 3e-4, 1e-3];
  for (let i = 0; i < 300; i += 10)
    await Promise.all(
      Array.from({ length: 10 }, (_, j) =>
        importRun(`sweep-${i + j}`, { lr: LRS[(i + j) % LRS.length], envConfig: { size: [4, 6, 8][(i + j) % 3] }, model: { layers: 2 + ((i + j) % 4) } }),
      ),
    );
  const chart = await importRun("chart", { lr: 1e-5 });
  for (let s0 = 0; s0 < 100_000; s0 += 10_000) {
    const steps = Array.from({ length: 10_000 }, (_, i) => s0 + i);
    const values = Object.fromEntries(KEYS.map((k, ki) => [k, steps.map((s) => Math.sin(s / 5000 + ki) + ((s * 7919) % 1000) / 5000)]));
    await call(`${api}/runs/${chart.id}/metrics`, { body: { batchId: `seed-${s0}`, steps, values }, headers: writeHeaders(chart) });
  }
  const rollouts = await importRun("rollouts", { lr: 1e-5 });
  for (let step = 0; step < 100; step++)
    await call(`${api}/runs/${rollouts.id}/steps`, { body: stepBody(step, `seed-${step}`), headers: writeHeaders(rollouts) });
  const trajIds = new Set<string>();
  for (let after = -1; trajIds.size < 2000; after += 5000) {
    const page = await call<{ turns: { trajectoryId: string }[] }>(`${api}/runs/${rollouts.id}/turns?limit=1000&after=${after}`);
    for (const t of page.turns) trajIds.add(t.trajectoryId);
  }
  const trajectories = [...trajIds];
  const ingest = await Promise.all(Array.from({ length: INGEST_RUNS }, (_, i) => importRun(`ingest-${i}`, { lr: 1e-4 })));
  // What the store's own maintenance does within a minute of such a load (PostgreSQL's autovacuum
  // analyzes the new rows; SQLite keeps no statistics), so the first cells are not timed on a
  // planner that has not seen the tables yet.
  const conn = openRawDb(store.url);
  settleAfterBulkLoad(conn);
  conn.close();
  console.error(`bench:load: seeded in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

  // ---- the rows
  // The filter matches 5 sweep runs in 21 (lr <= 1e-4 and size 6): 71 of the 366 runs.
  const FILTER = encodeURIComponent("lr<=1e-4;envConfig.size=6");
  const rand = (n: number) => Math.floor(Math.random() * n);
  let counter = 0;
  // Step body with the step number and batch id spliced in: stringifying 1,024 turns per request
  // would load this process (it shares the 2 cores with the server).
  const stepTemplate = JSON.stringify(stepBody(123456789, "BATCHID"));
  const [stepHead, stepTail] = stepTemplate.split("123456789");
  const [stepMid, stepEnd] = stepTail.split("BATCHID");
  const metricValues = JSON.stringify(Object.fromEntries(KEYS.map((k, ki) => [k, Array.from({ length: METRIC_STEPS_PER_REQUEST }, (_, i) => ki + i / 100)])));

  interface Row {
    name: string;
    kind: "ingest" | "read";
    unit?: { name: string; per: number };
    setup: (req: autocannon.Request) => autocannon.Request;
  }
  const runId = () => `${Date.now().toString(36)}-${counter}`;
  const rows: Row[] = [
    {
      name: "POST /runs/{id}/metrics (1,000 points)",
      kind: "ingest",
      unit: { name: "points/s", per: KEYS.length * METRIC_STEPS_PER_REQUEST },
      setup: (req) => {
        const n = counter++;
        const run = ingest[n % INGEST_RUNS];
        const base = Math.floor(n / INGEST_RUNS) * METRIC_STEPS_PER_REQUEST;
        const steps = Array.from({ length: METRIC_STEPS_PER_REQUEST }, (_, i) => base + i);
        return {
          ...req,
          method: "POST",
          path: `/api/v1/runs/${run.id}/metrics`,
          headers: writeHeaders(run),
          body: `{"batchId":"m-${runId()}","steps":[${steps.join(",")}],"values":${metricValues}}`,
        };
      },
    },
    {
      name: `POST /runs/{id}/steps (${TURNS_PER_STEP.toLocaleString()} turns)`,
      kind: "ingest",
      unit: { name: "turns/s", per: TURNS_PER_STEP },
      setup: (req) => {
        const n = counter++;
        const run = ingest[n % INGEST_RUNS];
        return {
          ...req,
          method: "POST",
          path: `/api/v1/runs/${run.id}/steps`,
          headers: writeHeaders(run),
          body: `${stepHead}${Math.floor(n / INGEST_RUNS)}${stepMid}s-${runId()}${stepEnd}`,
        };
      },
    },
    {
      name: "GET metric series (chart: 10^5 steps of a key, maxPoints 1500)",
      kind: "read",
      setup: (req) => ({
        ...req,
        method: "GET",
        path: `/api/v1/runs/${chart.id}/metrics/series?key=${encodeURIComponent(KEYS[rand(KEYS.length)])}&maxPoints=1500`,
      }),
    },
    {
      name: "GET /runs/{id}/turns (100 turns at a random offset of 102,400)",
      kind: "read",
      setup: (req) => ({ ...req, method: "GET", path: `/api/v1/runs/${rollouts.id}/turns?limit=100&after=${rand(100 * TURNS_PER_STEP - 100)}` }),
    },
    {
      name: "GET /trajectories/{id} (8 turns)",
      kind: "read",
      setup: (req) => ({ ...req, method: "GET", path: `/api/v1/trajectories/${trajectories[rand(trajectories.length)]}` }),
    },
    {
      name: "GET /runs?config=lr<=1e-4;envConfig.size=6 (71 of 366 runs)",
      kind: "read",
      setup: (req) => ({ ...req, method: "GET", path: `/api/v1/runs?config=${FILTER}&pageSize=50` }),
    },
  ];

  interface Measured {
    row: Row;
    connections: number;
    ok: number;
    seconds: number;
    p50: number;
    p99: number;
    codes: string;
    errors: number;
    load: string;
    /** where the CPU went during the cell (the mixed cells) */
    cpu?: string;
    /** CPU ms of each group per 2xx answer, then their sum (the cells of one row) */
    cpuMs?: string[] | null;
  }
  const results: Measured[] = [];
  const measured = (row: Row, connections: number, r: autocannon.Result): Measured => {
    const codes = Object.entries(r.statusCodeStats ?? {})
      .filter(([code]) => !code.startsWith("2"))
      .map(([code, s]) => `${code} x${s.count}`)
      .join(", ");
    const m: Measured = {
      row,
      connections,
      ok: r["2xx"],
      seconds: r.duration,
      p50: r.latency.p50,
      p99: r.latency.p99,
      codes,
      errors: r.errors + r.timeouts,
      load: loadAverage(),
    };
    console.error(
      `  ${kind}: ${row.name} c=${connections}: ${(m.ok / m.seconds).toFixed(1)} req/s p50 ${m.p50} ms p99 ${m.p99} ms ${codes} errors ${m.errors} (load ${m.load})`,
    );
    return m;
  };
  const url = api.replace(/\/api\/v1$/, "");
  try {
    for (const row of rows) {
      // Next loads a route's code on its first request, the ingest workers start on the first write.
      await autocannon({ url, connections: 1, amount: 3, requests: [{ setupRequest: row.setup }] });
      if (opts.rows === "all")
        for (const c of conns) {
          const cpu0 = cpuSnapshot(server.pid);
          const m = measured(row, c, await autocannon({ url, connections: c, duration, timeout: 60, requests: [{ setupRequest: row.setup }] }));
          results.push({ ...m, cpuMs: cpuMsPerRequest(cpu0, cpuSnapshot(server.pid), m.ok) });
        }
    }

    // Reads during ingest: every read row's request at random on MIXED_READERS connections while
    // mixedIngest connections post steps, both for the same duration.
    const reads = rows.filter((r) => r.kind === "read");
    const stepsRow = rows.find((r) => r.name.startsWith("POST /runs/{id}/steps"))!;
    const mixedRead: Row = { name: "reads during ingest (each read above at random)", kind: "read", setup: (req) => reads[rand(reads.length)].setup(req) };
    const mixedWrite: Row = { ...stepsRow, name: `${stepsRow.name} during those reads` };
    const mixed: Measured[] = [];
    for (let i = 0; i < repeat; i++) {
      const cpu0 = cpuSnapshot(server.pid);
      const cells = await Promise.all([
        autocannon({ url, connections: MIXED_READERS, duration, timeout: 60, requests: [{ setupRequest: mixedRead.setup }] }),
        mixedIngest > 0 ? autocannon({ url, connections: mixedIngest, duration, timeout: 60, requests: [{ setupRequest: mixedWrite.setup }] }) : null,
      ]);
      const cpu = cpuSplit(cpu0, cpuSnapshot(server.pid));
      if (cpu) console.error(`  ${kind}: cpu during that cell: ${cpu}`);
      for (const [row, c, r] of [
        [mixedRead, MIXED_READERS, cells[0]],
        [mixedWrite, mixedIngest, cells[1]],
      ] as const) {
        if (r) mixed.push({ ...measured(row, c, r), cpu });
      }
    }
    results.push(...mixed);

    // Nothing was deduplicated: every 2xx ingest request added its points and its step. A cell's
    // end abandons the requests in flight (at most its connections), which the server may still store.
    const series = await Promise.all(ingest.map((r) => call<{ keys: { count: number }[] }>(`${api}/runs/${r.id}/metrics`)));
    const points = series.reduce((s, x) => s + x.keys.reduce((a, k) => a + k.count, 0), 0);
    const steps = await Promise.all(ingest.map((r) => call<{ total: number }>(`${api}/runs/${r.id}/steps?pageSize=1`)));
    const stored = steps.reduce((s, x) => s + x.total, 0);
    const okOf = (k: string) => results.filter((m) => m.row.name.startsWith(k)).reduce((s, m) => s + m.ok, 0) + 3; // + the warm-up
    const slack = conns.reduce((a, b) => a + b, 0) + mixedIngest * repeat;
    const pointReqs = points / (KEYS.length * METRIC_STEPS_PER_REQUEST);
    const verdict = (stored: number, ok: number) => (stored >= ok && stored <= ok + slack ? "ok" : "MISMATCH");
    const check =
      `metric requests stored ${pointReqs.toLocaleString()} for ${okOf("POST /runs/{id}/metrics").toLocaleString()} 2xx answers (${verdict(pointReqs, okOf("POST /runs/{id}/metrics"))}), ` +
      `steps stored ${stored.toLocaleString()} for ${okOf("POST /runs/{id}/steps").toLocaleString()} 2xx answers (${verdict(stored, okOf("POST /runs/{id}/steps"))}); ` +
      `up to ${slack} more may be stored from requests in flight when a cell ended`;

    const out = [
      `\n### ${kind}: TURNLENS_SERVER_PROCESSES ${serverProcesses || "default (1)"}, TURNLENS_INGEST_QUEUE ${queue || "default (16)"}${kind === "postgresql" ? `, TURNLENS_INGEST_PROCESSES ${process.env.TURNLENS_INGEST_PROCESSES ?? "default (2)"}` : ""}\n`,
      "| endpoint | conns | req/s | turns/s or points/s | p50 ms | p99 ms | non-2xx / errors | load avg (1/5/15 min) |",
      "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ];
    for (const m of results) {
      const rps = m.ok / m.seconds;
      const unit = m.row.unit ? `${Math.round(rps * m.row.unit.per).toLocaleString()} ${m.row.unit.name}` : "-";
      const errs = m.codes || m.errors ? [m.codes, m.errors ? `${m.errors} socket errors/timeouts` : ""].filter(Boolean).join(", ") : "0";
      const ms = (x: number) => (x === 0 ? "<1" : String(x)); // autocannon records whole milliseconds
      out.push(`| ${m.row.name} | ${m.connections} | ${rps.toFixed(1)} | ${unit} | ${ms(m.p50)} | ${ms(m.p99)} | ${errs} | ${m.load} |`);
    }
    const perRequest = results.filter((m) => m.cpuMs);
    if (perRequest.length)
      out.push(
        "\nCPU per 2xx answer (ms of CPU time of each part, from /proc; at 1 connection requests run one after another, so the sum is about a request's latency):\n",
        `| endpoint | conns | ${CPU_GROUPS.join(" | ")} | sum |`,
        `| --- | --- |${" --- |".repeat(CPU_GROUPS.length + 1)}`,
        ...perRequest.map((m) => `| ${m.row.name} | ${m.connections} | ${m.cpuMs!.join(" | ")} |`),
      );
    const cpuLines = mixed.filter((m) => m.cpu && m.row === mixedRead).map((m, i) => `- cell ${i + 1}: ${m.cpu}`);
    if (cpuLines.length) out.push("\nCPU during the reads-during-ingest cells (cores: CPU seconds a second):", ...cpuLines);
    if (repeat > 1) {
      const median = (xs: number[]) => percentile(xs, 50);
      for (const row of [mixedRead, mixedWrite]) {
        const ms = mixed.filter((m) => m.row === row);
        if (ms.length)
          out.push(
            `median of ${ms.length} cells, ${row.name}: ${median(ms.map((m) => m.ok / m.seconds)).toFixed(1)} req/s, p99 ${median(ms.map((m) => m.p99))} ms ` +
              `(req/s ${ms.map((m) => (m.ok / m.seconds).toFixed(1)).join(", ")}; p99 ${ms.map((m) => m.p99).join(", ")} ms)`,
          );
      }
    }
    out.push(`\ncheck (nothing deduplicated): ${check}`);
    out.push("req/s, turns/s and points/s count 2xx answers only; p50/p99 are over every answer.");
    return out.join("\n");
  } finally {
    await server.stop();
    await store.stop();
  }
}
