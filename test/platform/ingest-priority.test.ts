// Ingest is background work beside the dashboard's reads: its thread (SQLite) or processes
// (PostgreSQL) run at the nice value TURNLENS_INGEST_NICE (lib/ingest/pool.ts), and the thread
// answering requests keeps its own. A bad value is refused naming the variable, at start too.
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import { describe, expect, it } from "vitest";
import { NextRequest } from "next/server";
import { isIngestProcess, procStat } from "../../scripts/cpu-split";
import { useTempDatabase } from "../helpers/temp-db";

useTempDatabase("ingest-priority");
const importRoute = await import("@/app/api/v1/runs/import/route");
const metricsRoute = await import("@/app/api/v1/runs/[id]/metrics/route");
const { ingestNice } = await import("@/lib/ingest/pool");

/** Nice values of this process's other threads and of its ingest processes (children running the ingest entry). */
function ingestNiceValues(): number[] {
  const threads = fs
    .readdirSync("/proc/self/task")
    .filter((tid) => Number(tid) !== process.pid)
    .map((tid) => procStat(`/proc/self/task/${tid}/stat`)?.nice)
    .filter((n): n is number => n !== undefined);
  const children = fs
    .readdirSync("/proc")
    .filter((p) => /^\d+$/.test(p) && procStat(`/proc/${p}/stat`)?.ppid === process.pid && isIngestProcess(Number(p)))
    .map((p) => procStat(`/proc/${p}/stat`)?.nice)
    .filter((n): n is number => n !== undefined);
  return [...threads, ...children];
}

describe("ingest priority", () => {
  it("reads TURNLENS_INGEST_NICE: 10 by default, 0 to 19, anything else refused naming it", () => {
    expect(ingestNice({})).toBe(10);
    expect(ingestNice({ TURNLENS_INGEST_NICE: "0" })).toBe(0);
    expect(ingestNice({ TURNLENS_INGEST_NICE: "19" })).toBe(19);
    for (const bad of ["20", "-1", "1.5", "ten", "", " 5", "007"])
      expect(() => ingestNice({ TURNLENS_INGEST_NICE: bad }), bad).toThrow(/TURNLENS_INGEST_NICE must be a whole number from 0 to 19/);
  });

  it("is refused by serve.sh's start check, before the server starts", () => {
    const check = (nice: string) =>
      spawnSync(process.execPath, ["--import", "tsx", "scripts/check-serve-config.ts"], {
        env: { ...process.env, TURNLENS_HOST: "127.0.0.1", TURNLENS_INGEST_NICE: nice },
        encoding: "utf8",
      });
    const bad = check("30");
    expect(bad.status).toBe(1);
    expect(bad.stderr).toContain('TURNLENS_INGEST_NICE must be a whole number from 0 to 19 (got "30")');
    expect(check("19").status).toBe(0);
  });

  it.runIf(process.platform === "linux")("runs ingest at nice 10 and leaves the thread answering requests at its own", async () => {
    const post = (url: string, body: unknown, headers = {}) =>
      new NextRequest(new URL(url, "http://127.0.0.1:3000"), {
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        body: JSON.stringify(body),
      });
    const before = os.getPriority();
    const run = await (await importRoute.POST(post("/api/v1/runs/import", { name: "niced" }), { params: Promise.resolve({}) })).json();
    const res = await metricsRoute.POST(
      post("", { batchId: "b0", steps: [0, 1], values: { "train/loss": [1, 0.5] } }, { "x-turnlens-write-key": run.writeKey }),
      {
        params: Promise.resolve({ id: run.id }),
      },
    );
    expect(res.status).toBe(201);
    // the ingest worker that stored the batch is a thread here (SQLite) or a child process (PostgreSQL)
    expect(ingestNiceValues()).toContain(10);
    expect(os.getPriority()).toBe(before);
  });
});
