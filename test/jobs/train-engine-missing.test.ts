// A view-only install (`bash scripts/start.sh --view-only`) has no PyTorch engine packages: a train
// job claimed by its worker must fail at once, not after three engine restarts and five attempts,
// with one readable message that names what is missing and the command that installs it (no stack
// trace on the run page or in the job log), and store nothing. Real worker, real job process; the
// interpreter is python3 without site-packages (-S), which is exactly a Python with none installed.
import fs from "node:fs";
import path from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { killAllWorkers, spawnWorker, useTempDatabase, waitFor } from "../helpers/workers";

const db = useTempDatabase("train-engine-missing");
const { launchRun } = await import("../../lib/runs/launch");
const { launchRunSchema } = await import("../../lib/schemas/runs");
const { getJob, tailLog } = await import("../../lib/jobs");
const { listSteps } = await import("../../lib/db/rollouts");
const { getRun } = await import("../../lib/db/runs");
const { listSeries } = await import("../../lib/db/metric-series");
const { assertEngineInstalled, engineRequirements, EngineNotInstalledError } = await import("../../workers/runners/train");

afterEach(killAllWorkers);
afterAll(() => db.cleanup());

/** python3 that sees no installed package (no site-packages, PYTHON* variables ignored). */
function barePython(): string {
  const p = path.join(db.dir, "bare-python.sh");
  fs.writeFileSync(p, `#!/bin/sh\nexec python3 -S -E "$@"\n`, { mode: 0o755 });
  return p;
}

describe("a train job on a worker without the engine's Python packages", () => {
  it("fails within seconds on its first attempt, naming the missing packages and the install command, without a stack trace", async () => {
    const { runId, jobId } = await launchRun(
      launchRunSchema.parse({
        jobKind: "train",
        name: "no-engine",
        config: { steps: 2, groupsPerStep: 1, groupSize: 2, evalEpisodes: 2, threads: 1, exportOnnx: false },
      }),
    );
    const w = spawnWorker({ TURNLENS_PYTHON: barePython() });
    await w.ready;
    const t0 = Date.now();
    await waitFor("run finished", () => ["succeeded", "failed", "canceled"].includes(getRun(runId).status), 20_000, 50);
    const took = Date.now() - t0;
    const run = getRun(runId);
    expect(run.status, w.output()).toBe("failed");
    expect(took).toBeLessThan(10_000);
    expect(run.error).toMatch(/^train jobs need the PyTorch engine's Python packages/);
    expect(run.error).toMatch(/missing torch, numpy/);
    expect(run.error).toContain("`bash scripts/setup.sh`");
    expect(run.error).toContain("pip install -r workers/engine/requirements.txt");
    expect(run.error).not.toMatch(/\n\s+at /);
    // not retried (a retry on this machine would fail the same way), nothing started or stored
    expect(await getJob(jobId!)).toMatchObject({ attempts: 1, status: "failed" });
    const log = (await tailLog(jobId!, 0, 5000)).lines.map((l) => l.line).join("\n");
    expect(log).toContain("EngineNotInstalledError: train jobs need the PyTorch engine's Python packages");
    expect(log).not.toMatch(/\n\s+at |Traceback|\[engine\]|restarting/);
    expect(w.output()).not.toMatch(/\n\s+at .*train\.ts/);
    expect(listSeries(runId)).toEqual([]);
    expect(listSteps(runId, 1, 1).total).toBe(0);
  }, 60_000);

  it("says so when the interpreter itself is missing, and passes where the packages are installed", async () => {
    await expect(assertEngineInstalled({ python: path.join(db.dir, "no-such-python") })).rejects.toThrow(
      /interpreter ".*no-such-python" was not found .*`bash scripts\/setup\.sh`/,
    );
    await expect(assertEngineInstalled({ python: barePython() })).rejects.toBeInstanceOf(EngineNotInstalledError);
    // this machine has the engine installed (scripts/setup.sh without --view-only)
    await expect(assertEngineInstalled()).resolves.toBeUndefined();
    expect(engineRequirements("# c\ntorch==2.15.0\nnumpy>=2 # x\n\npytest==9.2.0\nfoo[bar]~=1.0\n")).toEqual(["torch", "numpy", "foo"]);
  });
});
