// The `trainer` job kind with real parts: an operator's TURNLENS_TRAINERS file, a real worker, a
// real Python process whose plain `turnlens.init()` (the Python client, no arguments) writes over
// HTTP into the launched run through the real route handlers (test/helpers/api-server.ts), a real
// SQLite file. A launch runs and succeeds with its data and output; a canceled launch leaves no
// process behind; a request that carries a command is refused and runs nothing.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { alive, killAllWorkers, spawnWorker, useTempDatabase, waitFor, ROOT } from "../helpers/workers";

const db = useTempDatabase("trainer-job");
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "tl-trainer-"));
const TRAINERS = path.join(tmp, "trainers.json");
const MARKER = path.join(tmp, "ran");
// the client needs only the standard library: the system python with the client on PYTHONPATH
fs.writeFileSync(
  path.join(tmp, "train.py"),
  `import json, os, subprocess, sys, time
import turnlens
steps, pause, tag, pids = int(sys.argv[2]), float(sys.argv[4]), sys.argv[6], sys.argv[8]
print("argv " + json.dumps(sys.argv[1:]), flush=True)
run = turnlens.init()  # no arguments: the worker's TURNLENS_* environment names the run
if pids != "none":  # a grandchild too: a cancel must leave neither behind
    sleeper = subprocess.Popen(["sleep", "300"])
    open(pids, "w").write(f"{os.getpid()} {sleeper.pid}")
for step in range(1, steps + 1):
    run.log({"train/reward": step / 10}, step=step)
    run.log_rollouts(step, {"task-0": [[{"observation": "o", "action": "a", "reward": step / 10}], [{"observation": "o", "action": "b", "reward": 0.0}]]})
    print(f"step {step} logged", flush=True)
    time.sleep(pause)
run.finish()
print("done " + tag, flush=True)
`,
);
fs.writeFileSync(
  TRAINERS,
  JSON.stringify({
    tiny: {
      title: "Tiny script",
      command: ["python3", "train.py", "--steps", "{steps}", "--sleep", "{sleep}", "--tag", "{tag}", "--pids", "{pids}"],
      params: {
        steps: { type: "integer", default: 5, min: 1, max: 10_000 },
        sleep: { type: "number", default: 0, min: 0, max: 5 },
        tag: { type: "string", default: "plain", maxLength: 100 },
        pids: { type: "string", default: "none" },
      },
      env: { PYTHONPATH: path.join(ROOT, "clients/python") },
    },
  }),
);
process.env.TURNLENS_TRAINERS = TRAINERS;

const { startApiServer } = await import("../helpers/api-server");
const { launchRun } = await import("../../lib/runs/launch");
const { launchRunSchema } = await import("../../lib/schemas/runs");
const { getRun } = await import("../../lib/db/runs");
const { runSteps } = await import("../../lib/db/credit");
const { metricSteps } = await import("../helpers/metric-rows");
const { countRows } = await import("../helpers/db-inspect");
const { requestCancel, getJob, retry } = await import("../../lib/jobs/queue");
const { tailLog } = await import("../../lib/jobs/logs");
const { loadTrainers } = await import("../../lib/jobs/trainers");
const { launchCatalog } = await import("../../lib/runs/catalog");

let api: Awaited<ReturnType<typeof startApiServer>>;
beforeAll(async () => {
  api = await startApiServer();
});
afterAll(async () => {
  await killAllWorkers();
  await api.close();
  fs.rmSync(tmp, { recursive: true, force: true });
  await db.cleanup();
});

const launch = async (params: Record<string, unknown>) => {
  const r = await launchRun(launchRunSchema.parse({ jobKind: "trainer", name: `tiny-${Date.now()}`, config: { template: "tiny", params } }));
  return { runId: r.runId, jobId: r.jobId! };
};
const jobLog = async (jobId: string) => (await tailLog(jobId, 0, 5_000)).lines.map((l) => l.line);
const finished = (runId: string) => ["succeeded", "failed", "canceled"].includes(getRun(runId).status);
const post = (p: string, body: unknown) =>
  fetch(`${api.url}/api/v1${p}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });

describe("trainer jobs", () => {
  it("runs the template on a worker: the script's plain turnlens.init() logs into the launched run, its output is in the job log", async () => {
    const w = spawnWorker({ TURNLENS_TRAINERS: TRAINERS, TURNLENS_URL: api.url });
    // a string param with spaces and quotes stays one argv element
    const { runId, jobId } = await launch({ tag: `a b "c" 'd' $(touch ${MARKER})` });
    const run = getRun(runId);
    expect(run.config).toMatchObject({ template: "tiny", params: { steps: 5, sleep: 0 } });
    await waitFor("the run to finish", () => finished(runId), 60_000, 100);
    const log = await jobLog(jobId);
    expect(getRun(runId).status, `${w.output()}\n${log.join("\n")}`).toBe("succeeded");
    expect(metricSteps(runId, "train/reward")).toEqual([1, 2, 3, 4, 5]);
    expect(runSteps(runId).map((s) => s.step)).toEqual([1, 2, 3, 4, 5]);
    expect(countRows("Trajectory", runId)).toBe(10);
    expect(log).toContain("step 3 logged");
    const argv = JSON.parse(log.find((l) => l.startsWith("argv "))!.slice(5)) as string[];
    expect(argv).toEqual(["--steps", "5", "--sleep", "0", "--tag", `a b "c" 'd' $(touch ${MARKER})`, "--pids", "none"]);
    expect(fs.existsSync(MARKER)).toBe(false);
    expect(log.some((l) => l.startsWith("trainer exited with code 0"))).toBe(true);
    // no other run was created by the client: init() attached to the launched one
    expect(countRows("Run")).toBe(1);
  });

  it("a canceled launch leaves no process within 10 s", async () => {
    spawnWorker({ TURNLENS_TRAINERS: TRAINERS, TURNLENS_URL: api.url });
    const pidFile = path.join(tmp, "pids");
    const { runId, jobId } = await launch({ steps: 10_000, sleep: 0.1, pids: pidFile });
    await waitFor("the trainer's first points", () => metricSteps(runId, "train/reward").length >= 2, 60_000, 100);
    const pids = fs.readFileSync(pidFile, "utf8").split(" ").map(Number);
    expect(pids.every(alive)).toBe(true);
    const t0 = Date.now();
    await requestCancel(jobId);
    await waitFor("no trainer process left", () => !pids.some(alive), 10_000, 50);
    await waitFor("the run canceled", () => getRun(runId).status === "canceled", 10_000, 50);
    expect(Date.now() - t0).toBeLessThan(10_000);
    expect((await getJob(jobId)).status).toBe("canceled");

    // Retry relaunches the same template and params: a new process, writing with the new attempt's key
    fs.rmSync(pidFile);
    await retry(jobId);
    await waitFor("the relaunched trainer", () => fs.existsSync(pidFile) && fs.readFileSync(pidFile, "utf8").includes(" "), 30_000, 100);
    const again = fs.readFileSync(pidFile, "utf8").split(" ").map(Number);
    expect(again).not.toEqual(pids);
    await waitFor("the run running again", () => getRun(runId).status === "running", 10_000, 50);
    const before = (await tailLog(jobId, 0, 5_000)).lines.filter((l) => l.line.startsWith("step ")).length;
    await waitFor(
      "more steps logged by the relaunch",
      async () => (await tailLog(jobId, 0, 5_000)).lines.filter((l) => l.line.startsWith("step ")).length > before + 2,
      30_000,
      100,
    );
    expect((await tailLog(jobId, 0, 5_000)).lines.filter((l) => l.line.startsWith("trainer tiny ")).length).toBe(2);
    await requestCancel(jobId);
    await waitFor("no relaunched process left", () => !again.some(alive), 10_000, 50);
  });

  it("refuses a request that carries a command, and bad params, naming the field; nothing is created or run", async () => {
    const runs = countRows("Run");
    const jobs = countRows("Job");
    const cmd = await post("/runs", { jobKind: "trainer", config: { template: "tiny", params: {}, command: ["touch", MARKER] } });
    expect(cmd.status).toBe(400);
    expect(JSON.stringify(await cmd.json())).toContain("command");
    const top = await post("/runs", { jobKind: "trainer", command: ["touch", MARKER], config: { template: "tiny" } });
    expect(top.status).toBe(400);
    const cases: [Record<string, unknown>, string][] = [
      [{ template: "nope" }, "body.config.template"],
      [{ template: "tiny", params: { steps: 0 } }, "body.config.params.steps"],
      [{ template: "tiny", params: { steps: "5" } }, "body.config.params.steps"],
      [{ template: "tiny", params: { tag: "--evil" } }, "body.config.params.tag"],
      [{ template: "tiny", params: { extra: 1 } }, "body.config.params"],
    ];
    for (const [config, field] of cases) {
      const r = await post("/runs", { jobKind: "trainer", config });
      const body = (await r.json()) as { issues: { path: string }[] };
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(body.issues.map((i) => i.path).join(" "), JSON.stringify(body)).toContain(field);
    }
    // with an API token set, a valid launch needs it
    process.env.TURNLENS_API_TOKEN = "t".repeat(40);
    try {
      expect((await post("/runs", { jobKind: "trainer", config: { template: "tiny" } })).status).toBe(401);
    } finally {
      delete process.env.TURNLENS_API_TOKEN;
    }
    expect(countRows("Run")).toBe(runs);
    expect(countRows("Job")).toBe(jobs);
    expect(fs.existsSync(MARKER)).toBe(false);
  });

  it("offers the file's templates to the form, and names the file and the field of a bad declaration", async () => {
    const cat = launchCatalog();
    expect(cat.jobKinds.map((k) => k.id)).toContain("trainer");
    expect(cat.trainers.map((t) => t.id)).toEqual(["tiny"]);
    expect(cat.trainers[0].paramsSchema.properties?.steps).toMatchObject({ type: "integer", minimum: 1, maximum: 10_000, default: 5 });
    const bad = path.join(tmp, "bad.json");
    fs.writeFileSync(bad, JSON.stringify({ x: { title: "X", command: ["python", "{rate}"], params: { lr: { type: "number", min: 1, max: 0 } } } }));
    expect(() => loadTrainers(bad)).toThrow(`${bad}: x.command.1: {rate} names no parameter (declared: lr); x.params.lr.max: is below min`);
    fs.writeFileSync(bad, JSON.stringify({ x: { title: "X", command: ["python"], params: { lr: { type: "float" } } } }));
    expect(() => loadTrainers(bad)).toThrow(/bad\.json: x\.params\.lr\.type: /);
    // the server's own file broken: a launch gets 409 naming it, and the form offers no template
    process.env.TURNLENS_TRAINERS = bad;
    try {
      expect(launchCatalog()).toMatchObject({ trainers: [], trainersError: expect.stringContaining("bad.json: x.params.lr.type") });
      expect(launchCatalog().jobKinds.map((k) => k.id)).not.toContain("trainer");
      const r = await post("/runs", { jobKind: "trainer", config: { template: "x" } });
      expect(r.status).toBe(409);
      expect(((await r.json()) as { error: string }).error).toContain("bad.json: x.params.lr.type");
    } finally {
      process.env.TURNLENS_TRAINERS = TRAINERS;
    }
  });
});
