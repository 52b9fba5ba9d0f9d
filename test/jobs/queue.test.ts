// Unit tests of lib/jobs against a real temporary database (SQLite, or PostgreSQL in the test
// command's second pass): claim / heartbeat / finish fencing, cancel, retry, reaping with a moved
// clock, Run mirroring, logs. No worker processes here.
import { execFile } from "node:child_process";
import path from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { ZodError } from "zod";
import { pageJobs } from "../../lib/db/jobs";
import { deleteAllJobs } from "../helpers/db-inspect";
import { writeMark } from "../../lib/db/job-marks";
import { LeaseLostError, openRawDb, writeTransaction } from "../../lib/db/raw";
import { getRun } from "../../lib/db/runs";
import {
  appendLog,
  claim,
  enqueue,
  finish,
  getJob,
  heartbeat,
  InvalidJobTransitionError,
  JobNotFoundError,
  progress,
  reapExpired,
  release,
  requestCancel,
  retry,
  RunNotFoundError,
  tailLog,
  workerConfig,
  isRetryable,
  RetryableJobError,
} from "../../lib/jobs";
import { statusOf } from "../../lib/api/errors";
import { PgSyncDb } from "../../lib/db/pg-sync";
import { makeRun, ROOT, useTempDatabase } from "../helpers/workers";
import { TEST_STORE } from "../helpers/temp-db";

let env: ReturnType<typeof useTempDatabase>;
beforeAll(() => {
  env = useTempDatabase("queue");
});
afterAll(async () => {
  await env.cleanup();
});
beforeEach(() => {
  deleteAllJobs(); // JobLog rows cascade
});

const at = (t0: Date, ms: number) => new Date(t0.getTime() + ms);
const runOf = async (id: string) => getRun(id);

describe("enqueue", () => {
  it("validates input and the run", async () => {
    await expect(enqueue({ kind: "Bad Kind", payload: {} })).rejects.toBeInstanceOf(ZodError);
    await expect(enqueue({ kind: "selftest", payload: {}, maxAttempts: 0 })).rejects.toBeInstanceOf(ZodError);
    await expect(enqueue({ kind: "selftest", payload: {}, runId: "no-such-run" })).rejects.toBeInstanceOf(RunNotFoundError);
    const job = await enqueue({ kind: "selftest", payload: { steps: 1 } });
    expect(job).toMatchObject({ status: "queued", attempts: 0, maxAttempts: 3, priority: 0, payload: { steps: 1 } });
  });

  it("marks the linked run queued", async () => {
    const runId = await makeRun();
    await enqueue({ kind: "selftest", payload: {}, runId });
    const j = (await claim("w"))!;
    await progress(j.id, j.leaseToken, 0.5);
    await finish(j.id, j.leaseToken, { status: "failed", error: "old" });
    expect(await runOf(runId)).toMatchObject({ status: "failed", error: "old", progress: 0.5 });
    await enqueue({ kind: "selftest", payload: {}, runId });
    expect(await runOf(runId)).toMatchObject({ status: "queued", error: null, progress: 0 });
  });
});

describe("claim", () => {
  it("takes priority first, then the oldest; skips future and other kinds", async () => {
    const t0 = new Date();
    const low = await enqueue({ kind: "a", payload: 1 }, { now: at(t0, 0) });
    const high = await enqueue({ kind: "a", payload: 2, priority: 5 }, { now: at(t0, 1) });
    const later = await enqueue({ kind: "a", payload: 3, priority: 9, availableAt: at(t0, 60_000) }, { now: at(t0, 2) });
    const other = await enqueue({ kind: "b", payload: 4, priority: 10 }, { now: at(t0, 3) });
    const low2 = await enqueue({ kind: "a", payload: 5 }, { now: at(t0, 4) });
    const order: string[] = [];
    for (;;) {
      const j = await claim("w", ["a"], { now: at(t0, 10) });
      if (!j) break;
      order.push(j.id);
    }
    expect(order).toEqual([high.id, low.id, low2.id]);
    expect((await claim("w", null, { now: at(t0, 10) }))?.id).toBe(other.id);
    expect((await claim("w", ["a"], { now: at(t0, 60_001) }))?.id).toBe(later.id);
  });

  it("sets the lease, a fresh token per claim and counts the attempt", async () => {
    const t0 = new Date();
    await enqueue({ kind: "a", payload: {} }, { now: t0 });
    const j = (await claim("worker-1", null, { now: t0, leaseMs: 3000 }))!;
    expect(j).toMatchObject({ leaseOwner: "worker-1", attempts: 1, fence: { jobId: j.id, leaseToken: j.leaseToken } });
    expect(j.leaseExpiresAt.getTime()).toBe(t0.getTime() + 3000);
    const row = await getJob(j.id);
    expect(row).toMatchObject({ status: "running", leaseToken: j.leaseToken, leaseOwner: "worker-1" });
    expect(await claim("worker-2", null, { now: t0 })).toBeNull();
  });

  it.skipIf(TEST_STORE !== "postgresql")("on PostgreSQL, skips a job another claimer has locked and takes the next (FOR UPDATE SKIP LOCKED)", async () => {
    const first = await enqueue({ kind: "a", payload: 1, priority: 5 });
    const second = await enqueue({ kind: "a", payload: 2 });
    const other = new PgSyncDb(env.url); // another worker, mid-claim: it holds the best row's lock
    try {
      other.exec("BEGIN");
      other.prepare(`SELECT "id" FROM "Job" WHERE "id" = ? FOR UPDATE`).get(first.id);
      const j = await claim("w", null);
      expect(j?.id).toBe(second.id);
      other.exec("ROLLBACK");
      expect((await claim("w", null))?.id).toBe(first.id);
      expect(await claim("w", null)).toBeNull();
    } finally {
      other.close();
    }
  });

  it("never gives one job to two claimers racing in separate processes", async () => {
    const N = 150;
    for (let i = 0; i < N; i++) await enqueue({ kind: "a", payload: i });
    // three processes claim until the queue is empty, all starting at the same moment
    const start = Date.now() + 4000;
    const claimer = `const q = await import(${JSON.stringify(path.join(ROOT, "lib/jobs/queue.ts"))});
      while (Date.now() < ${start}) await new Promise((r) => setTimeout(r, 5));
      const mine = []; for (let j; (j = await q.claim("w" + process.pid, null)); ) mine.push(j.id);
      console.log(JSON.stringify({ worker: "w" + process.pid, mine }));`;
    const won = await Promise.all(
      [0, 1, 2].map(
        () =>
          new Promise<{ worker: string; mine: string[] }>((resolve, reject) =>
            execFile(process.execPath, ["--import", "tsx", "--input-type=module", "-e", claimer], { cwd: ROOT, env: process.env }, (err, stdout) =>
              err ? reject(err) : resolve(JSON.parse(stdout.trim().split("\n").at(-1)!)),
            ),
          ),
      ),
    );
    const all = won.flatMap((w) => w.mine);
    expect(all).toHaveLength(N);
    expect(new Set(all).size).toBe(N);
    // each row is running once, under the lease of the process that got it
    const owner = new Map(won.flatMap((w) => w.mine.map((id) => [id, w.worker] as const)));
    const rows = pageJobs({}, "recent", 0, 1000);
    expect(rows).toHaveLength(N);
    for (const r of rows) expect(r).toMatchObject({ status: "running", attempts: 1, leaseOwner: owner.get(r.id) });
    console.log(`claims per process: ${won.map((w) => w.mine.length).join(", ")}`);
  }, 60_000);
});

describe("fencing", () => {
  it("heartbeat, progress and finish apply only under the current token", async () => {
    const runId = await makeRun();
    const job = await enqueue({ kind: "a", payload: {}, runId });
    const j = (await claim("w", null, { leaseMs: 1000 }))!;
    expect(await heartbeat(j.id, j.leaseToken, { leaseMs: 5000 })).toBe(false);
    expect((await getJob(j.id)).leaseExpiresAt!.getTime()).toBeGreaterThan(Date.now() + 3000);

    await expect(heartbeat(j.id, "stale", {})).rejects.toBeInstanceOf(LeaseLostError);
    expect(await progress(j.id, "stale", 0.9, "nope")).toBe(false);
    const before = await getJob(j.id);
    expect(await finish(j.id, "stale", { status: "succeeded", result: { x: 1 } })).toBe(false);
    expect(await getJob(j.id)).toEqual(before); // a stale finish changes nothing at all
    expect(await runOf(runId)).toMatchObject({ status: "running", progress: 0 });

    expect(await progress(j.id, j.leaseToken, 0.5, "half")).toBe(true);
    expect(await runOf(runId)).toMatchObject({ progress: 0.5, progressMessage: "half" });
    await expect(progress(j.id, j.leaseToken, 1.5)).rejects.toBeInstanceOf(RangeError);

    expect(await finish(j.id, j.leaseToken, { status: "succeeded", result: { ok: true } })).toBe(true);
    expect(await getJob(job.id)).toMatchObject({ status: "succeeded", progress: 1, result: { ok: true }, error: null });
    const run = await runOf(runId);
    expect(run).toMatchObject({ status: "succeeded", progress: 1, error: null });
    expect(run.startedAt).toEqual(expect.any(String));
    expect(Date.parse(run.finishedAt!)).toBeGreaterThanOrEqual(Date.parse(run.startedAt!));

    // finished: the same token no longer fences anything
    expect(await finish(j.id, j.leaseToken, { status: "failed", error: "late" })).toBe(false);
    await expect(heartbeat(j.id, j.leaseToken)).rejects.toBeInstanceOf(LeaseLostError);
    expect(() => writeTransaction(j.fence, () => 1)).toThrow(LeaseLostError);
    expect((await getJob(job.id)).status).toBe("succeeded");
  });

  it("a reaped and re-claimed job rejects the old lease's writes", async () => {
    const t0 = new Date();
    const runId = await makeRun();
    await enqueue({ kind: "a", payload: {}, runId }, { now: t0 });
    const first = (await claim("dead", null, { now: t0, leaseMs: 1000 }))!;
    expect(writeTransaction(first.fence, () => "ok")).toBe("ok");
    expect(await reapExpired({ now: at(t0, 2000), backoffMs: 0 })).toEqual({ requeued: [first.id], failed: [], canceled: [] });
    const second = (await claim("alive", null, { now: at(t0, 2000), leaseMs: 1000 }))!;
    expect(second.id).toBe(first.id);
    expect(second.leaseToken).not.toBe(first.leaseToken);
    expect(second.attempts).toBe(2);

    expect(() => writeTransaction(first.fence, () => "ok")).toThrow(LeaseLostError);
    await expect(heartbeat(first.id, first.leaseToken)).rejects.toBeInstanceOf(LeaseLostError);
    expect(await finish(first.id, first.leaseToken, { status: "failed", error: "zombie" })).toBe(false);
    expect(await release(first.id, first.leaseToken)).toBe(false);
    expect(await getJob(first.id)).toMatchObject({ status: "running", leaseOwner: "alive", error: expect.stringContaining("worker lost") });
    expect(await runOf(runId)).toMatchObject({ status: "running" });

    expect(writeTransaction(second.fence, () => "ok")).toBe("ok");
    expect(await finish(second.id, second.leaseToken, { status: "failed", error: "boom" })).toBe(true);
    expect(await runOf(runId)).toMatchObject({ status: "failed", error: "boom" });
  });
});

describe("reapExpired", () => {
  it("re-queues with back-off up to maxAttempts, then fails with the reason", async () => {
    const t0 = new Date();
    const runId = await makeRun();
    const job = await enqueue({ kind: "a", payload: {}, runId, maxAttempts: 2 }, { now: t0 });
    await claim("w1", null, { now: t0, leaseMs: 1000 });
    expect(await reapExpired({ now: at(t0, 999), backoffMs: 500 })).toEqual({ requeued: [], failed: [], canceled: [] });
    expect((await reapExpired({ now: at(t0, 1001), backoffMs: 500 })).requeued).toEqual([job.id]);
    const queued = await getJob(job.id);
    expect(queued).toMatchObject({ status: "queued", attempts: 1, leaseExpiresAt: null });
    expect(queued.availableAt.getTime()).toBe(t0.getTime() + 1001 + 500);
    expect(await runOf(runId)).toMatchObject({ status: "queued" });

    expect(await claim("w2", null, { now: at(t0, 1400) })).toBeNull(); // still backing off
    const again = (await claim("w2", null, { now: at(t0, 1501), leaseMs: 1000 }))!;
    expect(again.attempts).toBe(2);
    expect((await reapExpired({ now: at(t0, 3000), backoffMs: 500 })).failed).toEqual([job.id]);
    expect(await getJob(job.id)).toMatchObject({ status: "failed", error: "worker lost: lease expired after 2 attempts" });
    expect(await runOf(runId)).toMatchObject({ status: "failed", error: "worker lost: lease expired after 2 attempts" });
    const log = await tailLog(job.id);
    expect(log.lines.map((l) => l.line)).toEqual([
      expect.stringContaining("[reaper] worker lost: lease of w1 expired (attempt 1/2); re-queued"),
      "[reaper] worker lost: lease expired after 2 attempts",
    ]);
  });

  it("does not touch a lease renewed in time, and cancels an expired job with a cancel pending", async () => {
    const t0 = new Date();
    const a = await enqueue({ kind: "a", payload: 1 }, { now: t0 });
    const b = await enqueue({ kind: "a", payload: 2 }, { now: at(t0, 1) });
    const ja = (await claim("w", null, { now: at(t0, 2), leaseMs: 1000 }))!;
    const jb = (await claim("w", null, { now: at(t0, 2), leaseMs: 1000 }))!;
    expect([ja.id, jb.id]).toEqual([a.id, b.id]);
    await heartbeat(ja.id, ja.leaseToken, { now: at(t0, 900), leaseMs: 1000 });
    await requestCancel(jb.id);
    expect(await reapExpired({ now: at(t0, 1500) })).toEqual({ requeued: [], failed: [], canceled: [b.id] });
    expect((await getJob(a.id)).status).toBe("running");
    expect((await getJob(b.id)).status).toBe("canceled");
  });
});

describe("cancel and retry", () => {
  it("cancels a queued job at once and flags a running one", async () => {
    const runId = await makeRun();
    const q = await enqueue({ kind: "a", payload: {}, runId });
    expect(await requestCancel(q.id)).toMatchObject({ status: "canceled", cancelRequested: true });
    expect(await runOf(runId)).toMatchObject({ status: "canceled" });
    expect((await requestCancel(q.id)).status).toBe("canceled"); // idempotent
    expect(await claim("w")).toBeNull();

    const r = await enqueue({ kind: "a", payload: {} });
    const j = (await claim("w"))!;
    expect(await requestCancel(r.id)).toMatchObject({ status: "running", cancelRequested: true });
    expect(await heartbeat(j.id, j.leaseToken)).toBe(true);
    expect(await finish(j.id, j.leaseToken, { status: "canceled" })).toBe(true);

    await expect(requestCancel("missing")).rejects.toBeInstanceOf(JobNotFoundError);
    const s = await enqueue({ kind: "a", payload: {} });
    const js = (await claim("w"))!;
    await finish(js.id, js.leaseToken, { status: "succeeded" });
    const err = await requestCancel(s.id).catch((e) => e);
    expect(err).toBeInstanceOf(InvalidJobTransitionError);
    expect(statusOf(err)).toBe(409);
    expect(err.message).toMatch(/cannot cancel job .* it is succeeded/);
  });

  it("retries a failed or canceled job with attempts reset, not a succeeded one", async () => {
    const runId = await makeRun();
    const job = await enqueue({ kind: "a", payload: {}, runId, maxAttempts: 1 });
    const j = (await claim("w"))!;
    await finish(j.id, j.leaseToken, { status: "failed", error: "boom", result: { partial: 1 } });
    expect(await runOf(runId)).toMatchObject({ status: "failed", error: "boom" });
    const q = await retry(job.id);
    expect(q).toMatchObject({ status: "queued", attempts: 0, error: null, result: null, progress: 0, finishedAt: null });
    expect(await runOf(runId)).toMatchObject({ status: "queued", error: null, finishedAt: null });
    await expect(retry(job.id)).rejects.toBeInstanceOf(InvalidJobTransitionError); // queued
    const k = (await claim("w"))!;
    expect(k.attempts).toBe(1);
    await finish(k.id, k.leaseToken, { status: "succeeded" });
    await expect(retry(job.id)).rejects.toBeInstanceOf(InvalidJobTransitionError);
    await expect(retry("missing")).rejects.toBeInstanceOf(JobNotFoundError);
  });
});

describe("release", () => {
  it("re-queues without counting the attempt on shutdown; fails when a counted retry has none left", async () => {
    const runId = await makeRun();
    const job = await enqueue({ kind: "a", payload: {}, runId, maxAttempts: 2 });
    let j = (await claim("w"))!;
    expect(await release(j.id, j.leaseToken, { countAttempt: false })).toBe("queued");
    expect(await getJob(job.id)).toMatchObject({ status: "queued", attempts: 0 });
    expect(await runOf(runId)).toMatchObject({ status: "queued" });

    j = (await claim("w"))!;
    expect(await release(j.id, j.leaseToken, { error: "flaky", delayMs: 0 })).toBe("queued");
    expect(await getJob(job.id)).toMatchObject({ status: "queued", attempts: 1, error: "flaky" });
    j = (await claim("w"))!;
    expect(await release(j.id, j.leaseToken, { error: "flaky" })).toBe("failed");
    expect(await getJob(job.id)).toMatchObject({ status: "failed", error: "flaky (no attempts left: 2/2)" });
    expect(await runOf(runId)).toMatchObject({ status: "failed", error: "flaky (no attempts left: 2/2)" });
  });

  it("cancels instead when a cancel is pending", async () => {
    const job = await enqueue({ kind: "a", payload: {} });
    const j = (await claim("w"))!;
    await requestCancel(job.id);
    expect(await release(j.id, j.leaseToken, { countAttempt: false })).toBe("canceled");
    expect((await getJob(job.id)).status).toBe("canceled");
  });
});

describe("logs", () => {
  it("appends in batches with per-job seq, tails after a cursor, hides marker rows", async () => {
    const job = await enqueue({ kind: "a", payload: {} });
    const other = await enqueue({ kind: "a", payload: {} });
    expect(await appendLog(job.id, [])).toBe(0);
    expect(await appendLog(job.id, ["one", { line: "two", level: "warn" }])).toBe(2);
    expect(await appendLog(other.id, ["x"])).toBe(1);
    const many = Array.from({ length: 400 }, (_, i) => `line ${i}`);
    expect(await appendLog(job.id, many)).toBe(402);
    getDbRawMarker(job.id);

    const first = await tailLog(job.id, 0, 3);
    expect(first.lines.map((l) => [l.seq, l.level, l.line])).toEqual([
      [1, "info", "one"],
      [2, "warn", "two"],
      [3, "info", "line 0"],
    ]);
    const rest = await tailLog(job.id, first.lastSeq, 5000);
    expect(rest.lines).toHaveLength(399);
    expect(rest.lastSeq).toBe(402);
    expect(await tailLog(job.id, 402)).toEqual({ lines: [], lastSeq: 402 });
    expect((await tailLog(job.id, -1, 1)).lines[0].seq).toBe(1);
    await expect(appendLog("missing", ["x"])).rejects.toBeInstanceOf(JobNotFoundError);
  });

  it("loses nothing when several connections append to one job at once", async () => {
    const job = await enqueue({ kind: "a", payload: {} });
    const clients = [openRawDb(env.url), openRawDb(env.url), openRawDb(env.url)];
    await Promise.all(
      clients.map(async (db, c) => {
        for (let i = 0; i < 10; i++) await appendLog(job.id, [`c${c} a${i}`, `c${c} b${i}`], { db });
      }),
    );
    for (const c of clients) c.close();
    const { lines } = await tailLog(job.id, 0, 5000);
    expect(lines.map((l) => l.seq)).toEqual(Array.from({ length: 60 }, (_, i) => i + 1));
    expect(new Set(lines.map((l) => l.line)).size).toBe(60);
    // each appender's pair stays adjacent: one batch is one statement
    for (const l of lines.filter((x) => x.line.includes(" a"))) {
      expect(lines.find((x) => x.seq === l.seq + 1)!.line).toBe(l.line.replace(" a", " b"));
    }
  });
});

describe("config and errors", () => {
  it("reads flags over env over defaults and rejects bad values", () => {
    expect(workerConfig({}, [])).toMatchObject({ concurrency: 1, kinds: [], leaseMs: 10_000, heartbeatMs: 1_000, pollMs: 500 });
    expect(workerConfig({ TURNLENS_WORKER_CONCURRENCY: "3", TURNLENS_WORKER_KINDS: "a, b" }, ["--concurrency", "4"])).toMatchObject({
      concurrency: 4,
      kinds: ["a", "b"],
    });
    expect(workerConfig({}, ["--kinds=selftest"]).kinds).toEqual(["selftest"]);
    expect(() => workerConfig({ TURNLENS_WORKER_CONCURRENCY: "0" })).toThrow(/concurrency/);
    expect(() => workerConfig({ TURNLENS_JOB_LEASE_MS: "1000", TURNLENS_WORKER_HEARTBEAT_MS: "800" })).toThrow(/half/);
    expect(() => workerConfig({}, ["--bogus", "1"])).toThrow(/unknown flag/);
  });

  it("recognises retryable errors by class or flag", () => {
    expect(isRetryable(new RetryableJobError("x"))).toBe(true);
    expect(isRetryable(Object.assign(new Error("x"), { retryable: true }))).toBe(true);
    expect(isRetryable(new Error("x"))).toBe(false);
    expect(statusOf(new JobNotFoundError("j"))).toBe(404);
  });
});

/** A selftest-style marker row (negative seq): tailLog must never return it, appendLog must skip it. */
function getDbRawMarker(jobId: string) {
  writeTransaction(null, (db) => writeMark(jobId, -1, "mark", "{}", db));
}
