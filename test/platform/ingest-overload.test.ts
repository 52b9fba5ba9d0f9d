// Under more concurrent ingest requests than TURNLENS_INGEST_QUEUE, the extra ones are told to come
// back later (429 with Retry-After) instead of piling their bodies up in memory; nothing is lost
// for the ones accepted, and a retry after the delay succeeds.
import os from "node:os";
import { describe, expect, it, vi } from "vitest";
import { NextRequest } from "next/server";
import { useTempDatabase } from "../helpers/temp-db";

process.env.TURNLENS_INGEST_QUEUE = "2"; // read when lib/ingest/pool loads
useTempDatabase("ingest-overload");
const importRoute = await import("@/app/api/v1/runs/import/route");
const metricsRoute = await import("@/app/api/v1/runs/[id]/metrics/route");
const runsRoute = await import("@/app/api/v1/runs/route");
const { ingestLanesNow, noteRead } = await import("@/lib/ingest/pool");
const { metricCount } = await import("../helpers/metric-rows");

async function post(
  h: (req: NextRequest, ctx: { params: Promise<Record<string, string>> }) => Promise<Response>,
  url: string,
  body: unknown,
  params = {},
  headers = {},
) {
  const req = new NextRequest(new URL(url, "http://127.0.0.1:3000"), {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
  return h(req, { params: Promise.resolve(params) });
}

// The 429 comes from the ingest queue (lib/ingest/pool.ts), in front of the thread (SQLite) or the processes (PostgreSQL).
describe("ingest overload", () => {
  it("answers 429 with Retry-After beyond the queue limit, and the retried batch is stored once", async () => {
    const run = await (await post(importRoute.POST, "/api/v1/runs/import", { name: "flood" })).json();
    const key = { "x-turnlens-write-key": run.writeKey };
    const batch = (i: number) => ({ batchId: `b${i}`, points: Array.from({ length: 5000 }, (_, s) => ({ step: i * 5000 + s, values: { "train/loss": s } })) });
    const answers = await Promise.all(Array.from({ length: 6 }, (_, i) => post(metricsRoute.POST, "", batch(i), { id: run.id }, key)));
    const statuses = answers.map((r) => r.status);
    expect(statuses.filter((s) => s === 201).length).toBeGreaterThanOrEqual(2);
    const busy = answers.filter((r) => r.status === 429);
    expect(busy.length).toBeGreaterThan(0);
    expect(busy[0].headers.get("retry-after")).toBe("1");
    // the client retries the refused batches after the delay
    for (const i of statuses.map((s, i) => (s === 429 ? i : -1)).filter((i) => i >= 0))
      expect((await post(metricsRoute.POST, "", batch(i), { id: run.id }, key)).status).toBe(201);
    const stored = metricCount(run.id);
    expect(stored).toBe(6 * 5000);
  });

  it("answers 429 before reading the body: a flood of large bodies is never buffered", async () => {
    const run = await (await post(importRoute.POST, "/api/v1/runs/import", { name: "flood-unread" })).json();
    const key = { "x-turnlens-write-key": run.writeKey };
    /** A metrics body sent in two halves, the second only once `go` resolves; counts what the server read. */
    const slow = (i: number, go: Promise<void>) => {
      const text = new TextEncoder().encode(JSON.stringify({ batchId: `slow${i}`, points: [{ step: i, values: { "train/loss": i } }] }));
      const read = { bytes: 0 };
      let half = 0;
      const body = new ReadableStream<Uint8Array>(
        {
          async pull(c) {
            if (half === 0) {
              half = 1;
              read.bytes += text.length >> 1;
              return c.enqueue(text.slice(0, text.length >> 1));
            }
            await go;
            read.bytes += text.length - (text.length >> 1);
            c.enqueue(text.slice(text.length >> 1));
            c.close();
          },
        },
        { highWaterMark: 0 }, // nothing is pulled until the server reads
      );
      const req = new NextRequest(new URL("/api/v1/runs/x/metrics", "http://127.0.0.1:3000"), {
        method: "POST",
        headers: { "content-type": "application/json", ...key },
        body,
        duplex: "half",
      } as ConstructorParameters<typeof NextRequest>[1]);
      return { res: metricsRoute.POST(req, { params: Promise.resolve({ id: run.id }) }), read };
    };
    let open!: () => void;
    const go = new Promise<void>((r) => (open = r));
    // two requests take the two slots (TURNLENS_INGEST_QUEUE=2) and stall halfway through their bodies
    const admitted = [slow(0, go), slow(1, go)];
    for (const a of admitted) await vi.waitFor(() => expect(a.read.bytes).toBeGreaterThan(0));
    const flood = Array.from({ length: 8 }, (_, i) => slow(10 + i, go));
    const answers = await Promise.all(flood.map((f) => f.res));
    expect(answers.map((r) => r.status)).toEqual(Array(8).fill(429));
    expect(flood.map((f) => f.read.bytes)).toEqual(Array(8).fill(0)); // refused unread
    open();
    expect((await Promise.all(admitted.map((a) => a.res))).map((r) => r.status)).toEqual([201, 201]);
    // the slots are given back: the next request is admitted
    expect((await post(metricsRoute.POST, "", { points: [{ step: 99, values: { "train/loss": 1 } }] }, { id: run.id }, key)).status).toBe(201);
  });
});

// PostgreSQL's ingest runs in TURNLENS_INGEST_PROCESSES processes (default 2); while reads are being
// answered it leaves this server process a core: on 2 cores one ingest process, on 8 still both.
describe("readers first", () => {
  it("uses fewer ingest processes within 250 ms of a read, as many as the cores leave", () => {
    const cores = vi.spyOn(os, "availableParallelism").mockReturnValue(2);
    try {
      const t = 1e9;
      expect(ingestLanesNow(t)).toBe(2);
      noteRead(t);
      expect(ingestLanesNow(t + 100)).toBe(1);
      cores.mockReturnValue(8);
      expect(ingestLanesNow(t + 100)).toBe(2);
      cores.mockReturnValue(1);
      expect(ingestLanesNow(t + 100)).toBe(1);
      cores.mockReturnValue(2);
      expect(ingestLanesNow(t + 251)).toBe(2);
    } finally {
      cores.mockRestore();
    }
  });

  it("counts a GET through any API route as a read, and not an ingest POST", async () => {
    const cores = vi.spyOn(os, "availableParallelism").mockReturnValue(2);
    try {
      noteRead(performance.now() - 10_000);
      const run = await (await post(importRoute.POST, "/api/v1/runs/import", { name: "readers-first" })).json();
      await post(
        metricsRoute.POST,
        `/api/v1/runs/${run.id}/metrics`,
        { batchId: "b", steps: [0], values: { x: [1] } },
        { id: run.id },
        { "x-turnlens-write-key": run.writeKey },
      );
      expect(ingestLanesNow()).toBe(2);
      const list = await runsRoute.GET(new NextRequest(new URL("/api/v1/runs", "http://127.0.0.1:3000")), { params: Promise.resolve({}) });
      expect(list.status).toBe(200);
      expect(ingestLanesNow()).toBe(1);
    } finally {
      cores.mockRestore();
    }
  });
});
