// `npm run bench:train -- --max-minutes M`: at the time limit the run is canceled (a cancel
// request, which the worker turns into a stop at its next heartbeat), so it ends `canceled`, not
// `queued` (what a bare SIGTERM to the worker gives: a graceful shutdown re-queues the job).
// A small config, a 12-second limit: about 20-30 s of CPU on the 2-core machine.
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { FAST_ENV, ROOT, useTempDatabase } from "../helpers/workers";

const db = useTempDatabase("bench-train");
const { getRun } = await import("../../lib/db/runs");
const { getJob } = await import("../../lib/jobs/queue");

afterAll(() => db.cleanup());

describe("bench:train --max-minutes", () => {
  it("cancels the run at the time limit: it ends canceled, not queued", async () => {
    const config = path.join(db.dir, "small.json");
    // far more steps than 12 s allow, so the limit always stops it; few held-out maps, one thread
    fs.writeFileSync(
      config,
      JSON.stringify({ steps: 5000, groupsPerStep: 2, groupSize: 4, evalInterval: 1000, evalEpisodes: 8, threads: 1, exportOnnx: false }),
    );
    const child = spawn(process.execPath, ["--import", "tsx", "scripts/bench-train.ts", "--max-minutes", "0.2", "--config", config], {
      cwd: ROOT,
      env: { ...process.env, ...FAST_ENV },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    child.stdout.on("data", (b: Buffer) => (out += b.toString()));
    child.stderr.on("data", (b: Buffer) => (out += b.toString()));
    const code = await new Promise<number | null>((r) => child.on("exit", r));
    expect(code, out).toBe(0);
    const runId = /training run (\S+):/.exec(out)?.[1];
    expect(runId, out).toBeTruthy();
    const run = getRun(runId!);
    expect(run.status, out).toBe("canceled");
    const job = await getJob(run.jobId!);
    expect(job.status).toBe("canceled");
    expect(job.startedAt, "the limit should hit a running job (the case a SIGTERM re-queued)").not.toBeNull();
    expect(out).toMatch(/--max-minutes 0\.2 reached: canceling run/);
    expect(out).toMatch(new RegExp(`run ${runId}: canceled \\(stopped by --max-minutes 0\\.2\\)`));
  }, 180_000);
});
