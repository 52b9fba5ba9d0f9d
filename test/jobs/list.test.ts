// The jobs list (order, filters, pages), its query schema, and the job-kind registry's defaults as
// enqueue and launch apply them.
import { afterAll, beforeEach, describe, expect, it } from "vitest";
import { useTempDatabase } from "../helpers/workers";

const env = useTempDatabase("jobs-list");
const { deleteAllJobs } = await import("../helpers/db-inspect");
const { claim, enqueue, finish, getJob, listJobs, JOB_KINDS, launchableKinds } = await import("../../lib/jobs");
const { jobListQuerySchema, jobListSchema } = await import("../../lib/schemas/jobs");
const { launchRunSchema } = await import("../../lib/schemas/runs");
const { launchCatalog } = await import("../../lib/runs/catalog");
const { launchRun } = await import("../../lib/runs/launch");
const { jobView } = await import("../../lib/runs/jobs-view");

afterAll(() => env.cleanup());
beforeEach(() => {
  deleteAllJobs();
});

const at = (ms: number) => new Date(Date.UTC(2026, 0, 1) + ms);

describe("listJobs", () => {
  it("lists queued jobs in claim order, then the others most recent first, with filters and pages", async () => {
    const low = await enqueue({ kind: "a", payload: 1 }, { now: at(0) });
    const high = await enqueue({ kind: "a", payload: 2, priority: 5 }, { now: at(1) });
    const highLater = await enqueue({ kind: "b", payload: 3, priority: 5, availableAt: at(60_000) }, { now: at(2) });
    const low2 = await enqueue({ kind: "b", payload: 4 }, { now: at(3) });
    const doneOld = await enqueue({ kind: "a", payload: 5, priority: 99 }, { now: at(4) });
    const doneNew = await enqueue({ kind: "b", payload: 6, priority: 99 }, { now: at(5) });
    // run the two priority-99 jobs to the end: the older one fails, the newer one succeeds
    for (const [id, status] of [
      [doneOld.id, "failed"],
      [doneNew.id, "succeeded"],
    ] as const) {
      const c = (await claim("w", null, { jobId: id, now: at(10) }))!;
      expect(c.id).toBe(id);
      expect(await finish(id, c.leaseToken, { status, ...(status === "failed" ? { error: "x" } : {}) })).toBe(true);
    }
    const running = await enqueue({ kind: "a", payload: 7 }, { now: at(6) });
    expect((await claim("w", ["a"], { jobId: running.id, now: at(11) }))?.id).toBe(running.id);

    const ids = async (q: Parameters<typeof listJobs>[0]) => (await listJobs(q)).jobs.map((j) => j.id);
    // queued: priority desc, then availableAt (the back-off one waits), then createdAt
    expect(await ids({ status: ["queued"] })).toEqual([high.id, highLater.id, low.id, low2.id]);
    // everything: the queue first, then most recent first (by creation)
    const all = await listJobs({});
    expect(all.total).toBe(7);
    expect(all.jobs.map((j) => j.id)).toEqual([high.id, highLater.id, low.id, low2.id, running.id, doneNew.id, doneOld.id]);
    // pages are windows over that one order, including the seam between the two parts
    expect(await ids({ page: 2, pageSize: 3 })).toEqual([low2.id, running.id, doneNew.id]);
    expect(await ids({ page: 3, pageSize: 3 })).toEqual([doneOld.id]);
    expect(await ids({ page: 4, pageSize: 3 })).toEqual([]);
    expect((await listJobs({ page: 4, pageSize: 3 })).total).toBe(7);
    // filters
    expect(await ids({ status: ["succeeded", "failed"] })).toEqual([doneNew.id, doneOld.id]);
    expect(await ids({ status: ["running", "queued"], kind: "a" })).toEqual([high.id, low.id, running.id]);
    expect(await ids({ kind: "b", status: ["failed"] })).toEqual([]);
    const out = await listJobs({ status: ["failed"] });
    expect(out.jobs[0]).toMatchObject({ status: "failed", error: "x", priority: 99, timeoutMs: null, kind: "a" });
    expect(jobListSchema.parse(out)).toEqual(out);
  });

  it("filters by run", async () => {
    const { runId } = await launchRun(launchRunSchema.parse({ jobKind: "baseline", config: { envId: "frozenlake", episodes: 8 } }));
    await enqueue({ kind: "selftest", payload: { steps: 1, stepMs: 0 } });
    const page = await listJobs({ runId });
    expect(page.total).toBe(1);
    expect(page.jobs[0]).toMatchObject({ runId, kind: "baseline", status: "queued" });
  });

  it("parses the query: comma-separated statuses, pages as query strings, and names a bad status", () => {
    expect(jobListQuerySchema.parse({ status: "queued, running,queued", page: "2", pageSize: "10", kind: "train" })).toEqual({
      status: ["queued", "running"],
      page: 2,
      pageSize: 10,
      kind: "train",
    });
    expect(jobListQuerySchema.parse({})).toEqual({ page: 1, pageSize: 50 });
    const bad = jobListQuerySchema.safeParse({ status: "queued,done" });
    expect(bad.success).toBe(false);
    // the message names the field and the statuses it accepts
    expect(bad.error!.issues[0]).toMatchObject({ path: ["status"], message: expect.stringContaining("queued, running, succeeded, failed, canceled") });
    expect(jobListQuerySchema.safeParse({ pageSize: "501" }).success).toBe(false);
    expect(jobListQuerySchema.safeParse({ order: "x" }).success).toBe(false);
  });
});

describe("job-kind registry", () => {
  it("is what launch validates, the catalog offers, and the worker runs", () => {
    const launchable = launchableKinds().map((k) => k.id);
    expect(launchable).toEqual(["baseline", "train", "onnx-eval", "checkpoint-eval", "trainer"]);
    // the launch schema has one option per launchable kind, with the registry's payload schema as its config
    const options = launchRunSchema.options.map((o) => [o.shape.jobKind.value, o.shape.config] as const);
    expect(options.map(([k]) => k)).toEqual(launchable);
    for (const [kind, config] of options) expect(config).toBe(JOB_KINDS[kind].payload);
    // `trainer` is offered only where the operator declared templates (TURNLENS_TRAINERS; test/jobs/trainer-job.test.ts)
    const offered = launchableKinds().filter((k) => k.id !== "trainer");
    expect(launchCatalog().jobKinds.map((k) => k.id)).toEqual(offered.map((k) => k.id));
    expect(launchCatalog().jobKinds.map((k) => k.title)).toEqual(offered.map((k) => k.title));
    for (const k of Object.values(JOB_KINDS)) {
      expect(k.concurrency).toBeGreaterThanOrEqual(1);
      expect(k.runner.module).toMatch(/^workers\/runners\/[a-z-]+\.ts$/);
    }
  });

  it("gives enqueue the kind's timeout and attempts unless the caller gives its own", async () => {
    expect(await enqueue({ kind: "baseline", payload: {} })).toMatchObject({ timeoutMs: JOB_KINDS.baseline.timeoutMs, maxAttempts: 3 });
    expect(await enqueue({ kind: "train", payload: {} })).toMatchObject({ timeoutMs: null, maxAttempts: 5 });
    expect(await enqueue({ kind: "baseline", payload: {}, timeoutMs: 5_000, maxAttempts: 1 })).toMatchObject({ timeoutMs: 5_000, maxAttempts: 1 });
    expect(await enqueue({ kind: "baseline", payload: {}, timeoutMs: null })).toMatchObject({ timeoutMs: null });
    expect(await enqueue({ kind: "not-registered", payload: {} })).toMatchObject({ timeoutMs: null, maxAttempts: 3 });
    await expect(enqueue({ kind: "baseline", payload: {}, timeoutMs: 0 })).rejects.toThrow(/timeoutMs/);
  });

  it("launch passes priority and timeout through to the job (one enqueue implementation)", async () => {
    const a = await launchRun(launchRunSchema.parse({ jobKind: "baseline", priority: 7, timeoutMs: 60_000, config: { envId: "frozenlake", episodes: 8 } }));
    expect(await jobView(a.jobId!)).toMatchObject({ priority: 7, timeoutMs: 60_000, maxAttempts: 3, status: "queued", runId: a.runId });
    const b = await launchRun(launchRunSchema.parse({ jobKind: "baseline", config: { envId: "frozenlake", episodes: 8 } }));
    expect(await getJob(b.jobId!)).toMatchObject({ priority: 0, timeoutMs: JOB_KINDS.baseline.timeoutMs });
    expect(launchRunSchema.safeParse({ jobKind: "baseline", priority: 101, config: { envId: "frozenlake" } }).error?.issues[0].path).toEqual(["priority"]);
    expect(launchRunSchema.safeParse({ jobKind: "selftest", config: {} }).success).toBe(false);
    // the higher-priority launch is claimed first
    expect((await claim("w", ["baseline"]))?.id).toBe(a.jobId);
  });
});
