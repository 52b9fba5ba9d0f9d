// Prisma Client (driver adapters: better-sqlite3, pg) against lib/db's raw layer (better-sqlite3,
// libpq's synchronous calls) on the store's fast paths, on SQLite and on PostgreSQL (a temporary
// cluster, or TURNLENS_TEST_PG):
//
//   npm run bench:prisma-vs-raw [-- --store sqlite|postgresql|both] [--scale 1]
//
// Two identical databases per store: A takes the raw layer's own functions (writeMetrics,
// writeRolloutStep, readSeries, turnsPage, a fenced writeTransaction), B takes Prisma. Each raw call
// runs on a connection that records its statements; B then runs the very same statements through
// Prisma ($executeRawUnsafe / $queryRawUnsafe, inside $transaction where the raw call had a
// transaction, with the same advisory lock on PostgreSQL), so both databases stay equal and the SQL
// is identical: the difference is the client. A replayed op's Prisma time counts the raw call's
// own JavaScript (packing turns, building rollups: the raw time minus its statements' time) too.
// "typed" rows use Prisma's typed API (createMany, findMany, updateMany) for the same work instead.
// Figures are p50 over the iterations, raw and Prisma interleaved so both see the same load.
import { randomUUID } from "node:crypto";
import { performance } from "node:perf_hooks";
import { createPrisma } from "../lib/db/client";
import { claimNextJob, insertQueuedJob } from "../lib/db/jobs";
import { writeMark } from "../lib/db/job-marks";
import { metricChunks } from "../lib/db/metric-export";
import type { MetricPoint } from "../lib/db/metric-points";
import { readSeries } from "../lib/db/metric-series";
import { writeMetrics } from "../lib/db/metric-writes";
import { PgSyncDb, toPgPlaceholders, type RawStatement } from "../lib/db/pg-sync";
import { dbDateTime, insertRows, openRawDb, writeTransaction, type Fence, type RawDb } from "../lib/db/raw";
import { turnsPage, writeRolloutStep } from "../lib/db/rollouts";
import { createRun, importedRun } from "../lib/db/runs";
import type { PrismaClient } from "../lib/generated/prisma/client";
import { rolloutStepInputSchema } from "../lib/schemas/rollouts";
import { importRunSchema } from "../lib/schemas/runs";
import { loadAverage, openStore, parseArgs, percentile, stepBody, TURNS_PER_STEP, type Store, type StoreKind } from "./bench-store";

const args = parseArgs(process.argv.slice(2), { store: "both", scale: "1" });
const stores: StoreKind[] = args.store === "both" ? ["sqlite", "postgresql"] : [args.store === "postgresql" ? "postgresql" : "sqlite"];
const scale = Number(args.scale);
if (!(scale > 0)) throw new Error(`--scale must be a positive number (got ${args.scale})`);
const iters = (n: number) => Math.max(8, Math.round(n * scale)); // the first few of each op are warm-up

// ---- a raw connection that records the statements it runs (and the time spent in them)

interface Stmt {
  sql: string;
  params: unknown[];
  reads: boolean;
}
type TxMode = "immediate" | "shared" | "deferred" | null;

interface Recorder extends RawDb {
  trace: Stmt[];
  sqlMs: number;
  tx: TxMode;
}

function recording(inner: RawDb): Recorder {
  // Object.create keeps `instanceof PgSyncDb`, so lib/db picks the same dialect and locking.
  const rec = Object.create(inner) as Recorder;
  rec.trace = [];
  rec.sqlMs = 0;
  rec.tx = null;
  const timed = <T>(sql: string, params: unknown[], reads: boolean, f: () => T): T => {
    const flat = params.length === 1 && Array.isArray(params[0]) ? (params[0] as unknown[]) : params;
    rec.trace.push({ sql, params: flat, reads });
    const t0 = performance.now();
    try {
      return f();
    } finally {
      rec.sqlMs += performance.now() - t0;
    }
  };
  Object.defineProperties(rec, {
    open: { get: () => inner.open },
    inTransaction: { get: () => inner.inTransaction },
  });
  rec.prepare = (sql: string): RawStatement => {
    const st = inner.prepare(sql);
    const w: RawStatement = {
      run: (...p) => timed(sql, p, false, () => st.run(...p)),
      get: (...p) => timed(sql, p, true, () => st.get(...p)),
      all: (...p) => timed(sql, p, true, () => st.all(...p)),
      iterate: (...p) => timed(sql, p, true, () => st.all(...p))[Symbol.iterator]() as IterableIterator<unknown>,
      pluck: (t = true) => (st.pluck(t), w),
      raw: (t = true) => (st.raw(t), w),
    };
    return w;
  };
  rec.transaction = ((fn: (...a: unknown[]) => unknown) => {
    const t = inner.transaction(fn);
    const mode =
      (m: TxMode, f: (...a: unknown[]) => unknown) =>
      (...a: unknown[]) => {
        if (!rec.tx) rec.tx = m;
        return f(...a);
      };
    return Object.assign(mode("deferred", t), {
      deferred: mode("deferred", t.deferred),
      immediate: mode("immediate", t.immediate),
      exclusive: mode("immediate", t.exclusive),
      ...(t.shared ? { shared: mode("shared", t.shared) } : {}),
    });
  }) as RawDb["transaction"];
  rec.close = () => inner.close();
  rec.pragma = (s: string) => inner.pragma(s);
  return rec;
}

/** Runs `f` on the recorder: its time, its statements and their time. */
function traced<T>(rec: Recorder, f: () => T): { ms: number; sqlMs: number; trace: Stmt[]; tx: TxMode; out: T } {
  rec.trace = [];
  rec.sqlMs = 0;
  rec.tx = null;
  const t0 = performance.now();
  const out = f();
  return { ms: performance.now() - t0, sqlMs: rec.sqlMs, trace: rec.trace, tx: rec.tx, out };
}

type Tx = Pick<PrismaClient, "$executeRawUnsafe" | "$queryRawUnsafe">;

/** The recorded statements through Prisma, in one $transaction when the raw call had one. */
async function replay(prisma: PrismaClient, pg: boolean, r: { trace: Stmt[]; tx: TxMode }): Promise<number> {
  const run = async (c: Tx) => {
    // the raw layer's PostgreSQL write lock (lib/db/pg-sync.ts), so both sides wait for the same thing
    if (pg && r.tx === "immediate") await c.$queryRawUnsafe(`SELECT pg_advisory_xact_lock(7203)::text`);
    if (pg && r.tx === "shared") await c.$queryRawUnsafe(`SELECT pg_advisory_xact_lock_shared(7203)::text`);
    for (const s of r.trace) {
      const sql = pg ? toPgPlaceholders(s.sql).text : s.sql;
      if (s.reads) await c.$queryRawUnsafe(sql, ...s.params);
      else await c.$executeRawUnsafe(sql, ...s.params);
    }
  };
  const t0 = performance.now();
  if (r.tx) await prisma.$transaction((tx) => run(tx));
  else await run(prisma);
  return performance.now() - t0;
}

// ---- the operations

interface Row {
  op: string;
  store: StoreKind;
  raw: number[];
  prisma: number[];
  how: string;
}

const KEYS = 10;
const STEPS_PER_WRITE = 100;

function metricPoints(from: number): MetricPoint[] {
  const out: MetricPoint[] = [];
  for (let k = 0; k < KEYS; k++)
    for (let s = from; s < from + STEPS_PER_WRITE; s++) out.push({ key: `train/m${k}`, step: s, value: Math.sin(s * 0.01 + k), wallTime: 1.7e9 + s });
  return out;
}

async function benchStore(kind: StoreKind): Promise<Row[]> {
  const stores: Store[] = [await openStore(kind), await openStore(kind)];
  const [rawDb, rawB] = [openRawDb(stores[0].url), openRawDb(stores[1].url)]; // rawB: only to set up the fenced job
  const rec = recording(rawDb);
  const prisma = createPrisma(stores[1].url);
  const pg = rawDb instanceof PgSyncDb;
  const rows: Row[] = [];
  const row = (op: string, how: string) => {
    const r: Row = { op, store: kind, raw: [], prisma: [], how };
    rows.push(r);
    return r;
  };
  try {
    // the same run (same id) in both databases: replayed statements name it
    const { runId } = createRun(importedRun(importRunSchema.parse({ project: "bench", name: "prisma-vs-raw", config: {} })), rawDb);
    await prisma.run.create({
      data: { id: runId, name: "prisma-vs-raw", kind: "imported", status: "running", config: {}, project: { create: { name: "bench" } } },
    });

    // metric ingest: writeMetrics of 10 keys x 100 steps, appended
    const ingest = row("metric ingest (10 keys x 100 steps)", "same SQL");
    for (let i = 0; i < iters(30); i++) {
      const r = traced(rec, () => writeMetrics(runId, metricPoints(i * STEPS_PER_WRITE), null, rec));
      const p = await replay(prisma, pg, r);
      if (i >= 3) ingest.raw.push(r.ms), ingest.prisma.push(p + r.ms - r.sqlMs);
    }

    // step ingest: writeRolloutStep of 16 groups x 8 trajectories x 8 turns
    const steps = row(`step ingest (${TURNS_PER_STEP} turns)`, "same SQL");
    for (let i = 0; i < iters(15); i++) {
      const input = rolloutStepInputSchema.parse(stepBody(i));
      const r = traced(rec, () => writeRolloutStep(runId, input, null, rec));
      const p = await replay(prisma, pg, r);
      if (i >= 2) steps.raw.push(r.ms), steps.prisma.push(p + r.ms - r.sqlMs);
    }

    // series read: readSeries downsampled (3,000 points to at most 1,000), and whole (typed findMany)
    const perKey = iters(30) * STEPS_PER_WRITE;
    const series = row(`series read (${perKey} pts to <= 1,000)`, "same SQL");
    const whole = row(`series export (${perKey} pts, one query)`, "typed findMany");
    for (let i = 0; i < iters(40); i++) {
      const key = `train/m${i % KEYS}`;
      const r = traced(rec, () => readSeries(runId, key, { maxPoints: 1000 }, rec));
      const p = await replay(prisma, pg, r);
      // the whole key as the export reads it: [key, step, value, wallTime] rows in step order
      const t0 = performance.now();
      const rows = [...metricChunks(runId, [key], 20_000, rawDb)].flat();
      const t1 = performance.now();
      const { id } = (await prisma.metricSeries.findUnique({ where: { runId_key: { runId, key } }, select: { id: true } }))!;
      const pts = await prisma.metric.findMany({
        where: { seriesId: id, step: { gt: -1 } },
        select: { step: true, value: true, wallTime: true },
        orderBy: { step: "asc" },
        take: 20_000,
      });
      const typed = pts.map((x) => [key, x.step, x.value, x.wallTime]);
      const t2 = performance.now();
      if (typed.length !== rows.length) throw new Error(`series export: Prisma ${typed.length} points, raw ${rows.length}`);
      if (i >= 3) series.raw.push(r.ms), series.prisma.push(p + r.ms - r.sqlMs), whole.raw.push(t1 - t0), whole.prisma.push(t2 - t1);
    }

    // the bulk insert alone (after the series reads: these rows are no series' points): 1,000 Metric rows, insertRows against createMany, in a transaction each
    const bulk = row("metric rows insert (1,000 rows)", "typed createMany");
    const { id: seriesId } = (await prisma.metricSeries.findFirst({ where: { runId }, orderBy: { id: "asc" }, select: { id: true } }))!; // the same in A
    for (let i = 0; i < iters(30); i++) {
      const base = 1_000_000 + i * 1000;
      const data = Array.from({ length: 1000 }, (_, j) => ({ seriesId, step: base + j, value: j * 0.5, wallTime: 1.7e9 + j }));
      const t0 = performance.now();
      writeTransaction(
        null,
        (db) =>
          insertRows(
            db,
            `INSERT INTO "Metric" ("seriesId","step","value","wallTime")`,
            4,
            data.flatMap((d) => [d.seriesId, d.step, d.value, d.wallTime]),
          ),
        rawDb,
      );
      const t1 = performance.now();
      await prisma.$transaction((tx) => tx.metric.createMany({ data }));
      const t2 = performance.now();
      if (i >= 3) bulk.raw.push(t1 - t0), bulk.prisma.push(t2 - t1);
    }

    // turns page: 200 turns of the run from a cursor (unpacking counted on both sides)
    const turns = row("turns page (200 turns)", "same SQL");
    const total = iters(15) * TURNS_PER_STEP;
    for (let i = 0; i < iters(40); i++) {
      const after = (i * 7919) % (total - 400);
      const r = traced(rec, () => turnsPage(runId, after, 200, rec));
      if (r.out.turns.length !== 200) throw new Error(`turns page: ${r.out.turns.length} turns`);
      const p = await replay(prisma, pg, r);
      if (i >= 3) turns.raw.push(r.ms), turns.prisma.push(p + r.ms - r.sqlMs);
    }

    // fenced write: the lease check and one row, in the job's write transaction
    const fenced = row("fenced write (1 row)", "same SQL");
    const fencedTyped = row("fenced write (1 row)", "typed updateMany+create");
    const fenceA = runningJob(rawDb, runId);
    const fenceB = runningJob(rawB, runId);
    for (let i = 0; i < iters(100); i++) {
      const r = traced(rec, () => writeTransaction(fenceA, (db) => writeMark(fenceA.jobId, -1 - i, "mark", "{}", db), rec));
      const p = await replay(prisma, pg, {
        trace: r.trace.map((s) =>
          s.sql.startsWith(`UPDATE "Job"`)
            ? { ...s, params: [s.params[0], fenceB.jobId, fenceB.leaseToken] }
            : { ...s, params: [fenceB.jobId, ...s.params.slice(1)] },
        ),
        tx: r.tx,
      });
      const t0 = performance.now();
      await prisma.$transaction(async (tx) => {
        if (pg) await tx.$queryRawUnsafe(`SELECT pg_advisory_xact_lock(7203)::text`);
        const { count } = await tx.job.updateMany({
          where: { id: fenceB.jobId, leaseToken: fenceB.leaseToken, status: "running" },
          data: { heartbeatAt: new Date() },
        });
        if (count !== 1) throw new Error("lease lost");
        await tx.jobLog.create({ data: { jobId: fenceB.jobId, seq: -1_000_000 - i, time: Date.now() / 1000, level: "mark", line: "{}" } });
      });
      const t1 = performance.now();
      if (i >= 5) fenced.raw.push(r.ms), fenced.prisma.push(p), fencedTyped.raw.push(r.ms), fencedTyped.prisma.push(t1 - t0);
    }
    // the replays did what the raw calls did: both databases hold the same rows
    const prismaA = createPrisma(stores[0].url);
    const counts = (c: PrismaClient) =>
      Promise.all([c.metricSeries.count(), c.metric.count(), c.metricRollup.count(), c.rolloutStep.count(), c.trajectory.count(), c.trajectorySearch.count()]);
    const [a, b] = [await counts(prismaA), await counts(prisma)];
    await prismaA.$disconnect();
    if (a.join() !== b.join()) throw new Error(`rows (series, metrics, rollups, steps, trajectories, index): raw layer ${a.join()}, Prisma ${b.join()}`);
  } finally {
    await prisma.$disconnect();
    rawDb.close();
    rawB.close();
    for (const s of stores) await s.stop();
  }
  return rows;
}

/** A job of the run, claimed: its fence. */
function runningJob(db: RawDb, runId: string): Fence {
  const at = dbDateTime();
  insertQueuedJob(db, { id: randomUUID(), runId, kind: "bench", payload: "{}", priority: 0, maxAttempts: 1, timeoutMs: null, availableAt: at, at });
  const job = claimNextJob({ workerId: "bench", now: new Date(), leaseMs: 600_000 }, db)!;
  return { jobId: job.id, leaseToken: job.leaseToken! };
}

const startLoad = loadAverage();
const t0 = Date.now();
const rows: Row[] = [];
for (const kind of stores) rows.push(...(await benchStore(kind)));
const fmt = (x: number) => (x < 10 ? x.toFixed(2) : x.toFixed(1));
console.log(`\nPrisma Client 7 (driver adapters) against lib/db's raw layer: p50 per op, ms`);
console.log(`node ${process.version}; load average at start: ${startLoad}; at end: ${loadAverage()}; ${((Date.now() - t0) / 1000).toFixed(0)} s\n`);
console.log(`| op | store | raw ms p50 | prisma ms p50 | prisma / raw | prisma path |`);
console.log(`| --- | --- | ---: | ---: | ---: | --- |`);
for (const r of rows) {
  const a = percentile(r.raw, 50);
  const b = percentile(r.prisma, 50);
  console.log(`| ${r.op} | ${r.store} | ${fmt(a)} | ${fmt(b)} | ${(b / a).toFixed(2)} | ${r.how} |`);
}
