// A trainer template with "ray": true on a local Ray head (test/helpers/ray-head.ts): the shipped TRL
// GRPO template (examples/trainers, a tiny model on CPU) submitted by a real worker through the Ray
// Jobs API, its turnlens client writing over HTTP into the launched run through the real route
// handlers. It ends succeeded with its curves and rollouts; a launch canceled through the run's
// cancel route (the page's Cancel) stops its Ray job and leaves no trainer process.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { haveRay, pgrep, RAY, RayHead } from "../helpers/ray-head";
import { killAllWorkers, spawnWorker, useTempDatabase, waitFor, ROOT } from "../helpers/workers";

const VENV_BIN = path.join(ROOT, "node_modules/.turnlens-client-venv/bin");
const ready = haveRay && fs.existsSync(path.join(VENV_BIN, "python3"));
if (!ready) console.warn(`ray-trainer: SKIPPED, no Ray at ${RAY} or no client venv at ${VENV_BIN} (scripts/test.sh installs both)`);

const db = useTempDatabase("ray-trainer");
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "tl-ray-trainer-"));
const TRAINERS = path.join(tmp, "trainers.json");
// the shipped template as it is, but on Ray, its relative paths made absolute for the cluster's shell
const shipped = JSON.parse(fs.readFileSync(path.join(ROOT, "examples/trainers/trainers.json"), "utf8"))["trl-grpo-tiny"];
fs.writeFileSync(
  TRAINERS,
  JSON.stringify({
    "trl-grpo-tiny-ray": {
      ...shipped,
      ray: true,
      cwd: path.join(ROOT, "examples/trainers"),
      env: { ...shipped.env, PYTHONPATH: path.join(ROOT, "clients/python"), PATH: `${VENV_BIN}:${process.env.PATH}` },
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
const { tailLog } = await import("../../lib/jobs/logs");

let api: Awaited<ReturnType<typeof startApiServer>>;
let head: RayHead;
beforeAll(async () => {
  if (!ready) return;
  api = await startApiServer();
  head = await RayHead.start(2);
}, 180_000);
afterAll(async () => {
  await killAllWorkers();
  await head?.stop();
  await api?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
  await db.cleanup();
}, 120_000);

const launch = async (steps: number) => {
  const r = await launchRun(launchRunSchema.parse({ jobKind: "trainer", config: { template: "trl-grpo-tiny-ray", params: { steps } } }));
  return { runId: r.runId, jobId: r.jobId! };
};
const submissionsOf = async (jobId: string) => (await head.api.list()).filter((d) => d.metadata?.turnlens_job === jobId);
const worker = () => spawnWorker({ TURNLENS_TRAINERS: TRAINERS, TURNLENS_URL: api.url, TURNLENS_RAY_ADDRESS: head.address, TURNLENS_RAY_POLL_MS: "250" });

describe.skipIf(!ready)("trainer templates on a Ray cluster (local head)", () => {
  it("runs as a Ray job and ends succeeded with its curves and rollouts in the launched run", async () => {
    const w = worker();
    const { runId, jobId } = await launch(3);
    await waitFor("the run to finish", () => ["succeeded", "failed", "canceled"].includes(getRun(runId).status), 240_000, 250);
    const log = (await tailLog(jobId, 0, 5_000)).lines.map((l) => l.line);
    expect(getRun(runId).status, `${w.output()}\n${log.join("\n")}`).toBe("succeeded");
    expect(metricSteps(runId, "train/reward")).toEqual([1, 2, 3]);
    expect(runSteps(runId).map((s) => s.step)).toEqual([1, 2, 3]);
    expect(log.some((l) => l.startsWith("submitted Ray job "))).toBe(true);
    expect(log).toContain("trained 3 GRPO steps");
    expect((await submissionsOf(jobId)).map((s) => s.status)).toEqual(["SUCCEEDED"]);
  }, 300_000);

  it("a launch canceled from its page stops its Ray job", async () => {
    worker();
    const { runId, jobId } = await launch(10_000);
    // as soon as Ray runs it (the trainer is still importing TRL): a stop must not wait for the script
    const sub = await waitFor("the Ray job running", async () => (await submissionsOf(jobId)).find((d) => d.status === "RUNNING"), 120_000, 250);
    await waitFor("the trainer process", () => pgrep("trl_grpo_tiny.py").length > 0, 30_000, 100);
    const r = await fetch(`${api.url}/api/v1/runs/${runId}/cancel`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    expect(r.status).toBe(200);
    await waitFor("the run canceled", () => getRun(runId).status === "canceled", 20_000, 100);
    await waitFor("Ray to report STOPPED", async () => (await head.api.details(sub.submission_id!))?.status === "STOPPED", 30_000, 250);
    await waitFor("no trainer process", () => pgrep("trl_grpo_tiny.py").length === 0, 15_000, 200);
  }, 300_000);
});
