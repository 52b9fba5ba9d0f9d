// Concurrent ingest. Requests for one run sent together are stored exactly as if sent one by one
// (its turns numbered without gaps or overlaps, a batch repeated at once stored once), on both
// stores. On PostgreSQL several ingest processes write at once: a write scoped to one run locks
// that run's row only, so writes to other runs go on beside it, while a second write to the same
// run, or a write with no scope (the one-writer lock), waits for it.
import { describe, expect, it } from "vitest";
import { TEST_STORE, useTempDatabase } from "../helpers/temp-db";
import { stepBody, TURNS_PER_STEP } from "../../scripts/bench-store";

const { url } = useTempDatabase("concurrent-ingest");
const { runIngest } = await import("@/lib/ingest/pool");
const { createRun, setWriteKeyHash } = await import("@/lib/db/runs");
const { listSteps, turnsPage } = await import("@/lib/db/rollouts");
const { openRawDb, writeTransaction } = await import("@/lib/db/raw");
const { PgError, PgSyncDb } = await import("@/lib/db/pg-sync");

const newRun = (name: string) => createRun({ project: "test", name, kind: "imported", jobKind: null, config: {}, status: "running" }).runId;
const bytes = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));

/** Every stored turn of a run, in sequence order, through the turns page. */
function allSeqs(runId: string): number[] {
  const seqs: number[] = [];
  for (let after = -1; ; ) {
    const page = turnsPage(runId, after, 1000);
    for (const t of page.turns) seqs.push(t.seq);
    if (page.next === null) return seqs;
    after = page.next;
  }
}

describe("concurrent ingest", () => {
  it("stores steps sent together to one run and to several runs with every turn numbered once", async () => {
    const runs = [newRun("a"), newRun("b"), newRun("c")];
    const sends = runs.flatMap((runId) => Array.from({ length: 6 }, (_, step) => runIngest("steps", runId, bytes(stepBody(step, `s${step}`)))));
    const answers = await Promise.all(sends);
    expect(answers.map((a) => a.status)).toEqual(sends.map(() => 201));
    for (const runId of runs) {
      expect(listSteps(runId).total).toBe(6);
      const seqs = allSeqs(runId);
      expect(seqs.length).toBe(6 * TURNS_PER_STEP);
      expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => i)); // 0, 1, 2, ...
    }
  }, 120_000);

  it("stores a batch sent several times at once exactly once: one 201, the others 200 with the same answer", async () => {
    const runId = newRun("repeat");
    const body = bytes(stepBody(0, "same-batch"));
    const answers = await Promise.all(Array.from({ length: 4 }, () => runIngest("steps", runId, body.slice())));
    expect(answers.map((a) => a.status).sort()).toEqual([200, 200, 200, 201]);
    for (const a of answers) expect(a.body).toEqual(answers[0].body);
    expect(listSteps(runId).total).toBe(1);
    expect(allSeqs(runId).length).toBe(TURNS_PER_STEP);
  }, 60_000);
});

describe.runIf(TEST_STORE === "postgresql")("PostgreSQL write locks", () => {
  /** A second connection that gives up on a lock after 300 ms (SQLSTATE 55P03) instead of waiting. */
  function impatient() {
    const db = openRawDb(url);
    (db as InstanceType<typeof PgSyncDb>).exec("SET lock_timeout = '300ms'");
    return db;
  }
  /** Whether fn gave up on a lock (false: it went through; any other error is rethrown). */
  const lockTimeout = (fn: () => unknown) => {
    try {
      fn();
      return false;
    } catch (e) {
      if (e instanceof PgError && e.code === "55P03") return true;
      throw e;
    }
  };
  /** A write to the run's row (its write key's hash). */
  const touch = (db: ReturnType<typeof openRawDb>, runId: string) => setWriteKeyHash(runId, "0".repeat(64), db);

  it("lets a write to another run through while one run's write is open, and holds back the same run's and unscoped ones", () => {
    const [x, y] = [newRun("x"), newRun("y")];
    const first = openRawDb(url);
    const second = impatient();
    try {
      // Inside the first connection's open transaction on run x, the second connection writes.
      writeTransaction(
        null,
        () => {
          expect(lockTimeout(() => writeTransaction(null, (db) => touch(db, y), second, { runId: y }))).toBe(false);
          expect(lockTimeout(() => writeTransaction(null, (db) => touch(db, x), second, { runId: x }))).toBe(true);
          expect(lockTimeout(() => writeTransaction(null, (db) => touch(db, y), second))).toBe(true);
        },
        first,
        { runId: x },
      );
      // Once it committed, the same run's write goes through.
      expect(lockTimeout(() => writeTransaction(null, (db) => touch(db, x), second, { runId: x }))).toBe(false);
    } finally {
      first.close();
      second.close();
    }
  });
});
