// The API's limits, web security, run ownership and idempotent writes, through the real route
// handlers on a real SQLite file. Each refusal must name the problem and write nothing.
import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { NextRequest } from "next/server";
import { ROOT, useTempDatabase } from "../helpers/temp-db";

useTempDatabase("api-hardening");
const runsRoute = await import("@/app/api/v1/runs/route");
const importRoute = await import("@/app/api/v1/runs/import/route");
const runRoute = await import("@/app/api/v1/runs/[id]/route");
const metricsRoute = await import("@/app/api/v1/runs/[id]/metrics/route");
const stepsRoute = await import("@/app/api/v1/runs/[id]/steps/route");
const turnsRoute = await import("@/app/api/v1/runs/[id]/turns/route");
const finishRoute = await import("@/app/api/v1/runs/[id]/finish/route");
const resumeRoute = await import("@/app/api/v1/runs/[id]/resume/route");
const cancelRoute = await import("@/app/api/v1/runs/[id]/cancel/route");
const retryRoute = await import("@/app/api/v1/runs/[id]/retry/route");
const batchRoute = await import("@/app/api/v1/runs/[id]/steps/batch/route");
const filtersRoute = await import("@/app/api/v1/runs/filters/route");
const groupsRoute = await import("@/app/api/v1/runs/[id]/steps/[step]/groups/route");
const { ROUTES, routes } = await import("@/lib/api/routes");
const { openApiDocument } = await import("@/lib/api/openapi");
const { countRows } = await import("../helpers/db-inspect");
const { metricRows } = await import("../helpers/metric-rows");
const { createRun } = await import("@/lib/db/runs");

type Handler = (req: NextRequest, ctx: { params: Promise<Record<string, string>> }) => Promise<Response>;
interface CallOpts {
  body?: unknown;
  raw?: string | Uint8Array | ReadableStream<Uint8Array>;
  params?: Record<string, string>;
  headers?: Record<string, string>;
}
async function call(h: Handler, method: string, url: string, o: CallOpts = {}) {
  const headers = { "content-type": "application/json", ...o.headers };
  const body = o.raw !== undefined ? o.raw : o.body !== undefined ? JSON.stringify(o.body) : undefined;
  const init = { method, headers, body, ...(body instanceof ReadableStream ? { duplex: "half" } : {}) } as ConstructorParameters<typeof NextRequest>[1];
  const res = await h(new NextRequest(new URL(url, "http://127.0.0.1:3000"), init), { params: Promise.resolve(o.params ?? {}) });
  const text = await res.text();
  // biome-ignore lint/suspicious/noExplicitAny: responses of every route, read field by field
  let json: any = null;
  try {
    json = JSON.parse(text);
  } catch {
    /* not JSON */
  }
  return { status: res.status, json, headers: res.headers };
}

/** Rows of a table; "Turn": the turns stored (packed in their trajectories' rows). */
const count = (table: string) => countRows(table);
const tables = ["Run", "Job", "Metric", "RolloutStep", "Turn", "IngestBatch"];
const counts = () => tables.map(count);
/** `{"a":{"a":…1…}}` as text: JSON.stringify itself recurses and cannot write it */
const nestedText = (depth: number) => '{"a":'.repeat(depth) + "1" + "}".repeat(depth);
const step = (n: number, uids = ["t0", "t1"]) => ({
  step: n,
  groups: uids.map((uid) => ({ uid, envId: "sokoban", trajectories: [{ success: true, turns: [{ observation: "o", action: "left", reward: 1 }] }] })),
});

let run = { id: "", key: "" };
beforeAll(async () => {
  const r = await call(importRoute.POST, "POST", "/api/v1/runs/import", { body: { name: "ext" } });
  expect(r.status).toBe(201);
  run = { id: r.json.id, key: r.json.writeKey };
});
const withKey = (o: CallOpts = {}): CallOpts => ({ ...o, params: { id: run.id, ...o.params }, headers: { "x-turnlens-write-key": run.key, ...o.headers } });

afterEach(() => {
  for (const k of ["TURNLENS_API_TOKEN", "TURNLENS_READ_TOKEN", "TURNLENS_ALLOWED_HOSTS", "TURNLENS_MAX_BODY_MB", "TURNLENS_BODY_TIMEOUT_MS"])
    delete process.env[k];
});

describe("limits", () => {
  it("refuses JSON nested deeper than 64 levels, naming the field, in config and in a turn's info", async () => {
    const before = counts();
    const a = await call(importRoute.POST, "POST", "/api/v1/runs/import", { raw: `{"name":"deep","config":${nestedText(1500)}}` });
    expect(a.status).toBe(400);
    expect(a.json.issues[0].path).toMatch(/^body\.config(\.a)+$/);
    expect(a.json.error).toMatch(/deeper than 64/);
    const deepStep = JSON.stringify(step(0)).replace('"reward":1}', `"reward":1,"info":${nestedText(5000)}}`);
    const b = await call(stepsRoute.POST, "POST", "", withKey({ raw: deepStep }));
    expect(b.status).toBe(400);
    expect(b.json.issues[0].path).toMatch(/^body\.groups\.0\.trajectories\.0\.turns\.0\.info(\.a)+$/);
    expect(counts()).toEqual(before);
    // and the run filters keep working for everyone
    expect((await call(filtersRoute.GET, "GET", "/api/v1/runs/filters")).status).toBe(200);
    expect((await call(runsRoute.GET, "GET", "/api/v1/runs?config=lr%3C%3D1")).status).toBe(200);
  });

  it("answers 413 before buffering a body over the limit, by Content-Length and while streaming", async () => {
    process.env.TURNLENS_MAX_BODY_MB = "1";
    const before = counts();
    const declared = await call(metricsRoute.POST, "POST", "", withKey({ raw: "x".repeat(1024), headers: { "content-length": String(5 << 20) } }));
    expect(declared.status).toBe(413);
    let pulled = 0;
    const endless = new ReadableStream<Uint8Array>({
      pull(c) {
        pulled += 64 * 1024;
        if (pulled > 64 << 20)
          c.close(); // 64 MB would be sent if nobody stopped reading
        else c.enqueue(new Uint8Array(64 * 1024).fill(32));
      },
    });
    const streamed = await call(stepsRoute.POST, "POST", "", withKey({ raw: endless }));
    expect(streamed.status).toBe(413);
    expect(streamed.json.issues[0].path).toBe("body");
    expect(pulled).toBeLessThan(3 << 20); // stopped soon after the 1 MB limit
    expect(counts()).toEqual(before);
  });

  it("answers 408 to a body that stops arriving, and 403 to a writer without the key before reading its body", async () => {
    process.env.TURNLENS_BODY_TIMEOUT_MS = "300";
    const before = counts();
    let pulled = 0;
    // one byte, then nothing more; pulled only when read (highWaterMark 0)
    const stalled = () =>
      new ReadableStream<Uint8Array>(
        {
          pull(c) {
            if (pulled++ === 0) c.enqueue(new TextEncoder().encode("{"));
            else return new Promise(() => {});
          },
        },
        { highWaterMark: 0 },
      );
    const started = Date.now();
    const slow = await call(stepsRoute.POST, "POST", "", withKey({ raw: stalled() }));
    expect(slow.status).toBe(408);
    expect(slow.json.issues[0].path).toBe("body");
    expect(Date.now() - started).toBeLessThan(3_000);
    pulled = 0;
    const keyless = await call(stepsRoute.POST, "POST", "", { raw: stalled(), params: { id: run.id } });
    expect(keyless.status).toBe(403);
    expect(keyless.json.issues[0].path).toBe("headers.x-turnlens-write-key");
    expect(pulled).toBe(0);
    expect(counts()).toEqual(before);
  }, 15_000);

  it("names a duplicate group uid instead of failing on the unique constraint", async () => {
    const before = counts();
    const r = await call(stepsRoute.POST, "POST", "", withKey({ body: step(3, ["a", "b", "a"]) }));
    expect(r.status).toBe(400);
    expect(r.json.issues.map((i: { path: string }) => i.path)).toContain("body.groups.2.uid");
    expect(counts()).toEqual(before);
  });

  it("refuses empty, hexadecimal and exponent query integers instead of reading them as numbers", async () => {
    for (const q of ["after=", "after=0x10", "after=1e3", "limit=1.5"]) {
      const r = await call(turnsRoute.GET, "GET", `/api/v1/runs/${run.id}/turns?${q}`, { params: { id: run.id } });
      expect(r.status, q).toBe(400);
      expect(r.json.issues[0].path, q).toBe(`query.${q.split("=")[0]}`);
    }
    expect((await call(turnsRoute.GET, "GET", `/api/v1/runs/${run.id}/turns?after=-1&limit=5`, { params: { id: run.id } })).status).toBe(200);
  });

  it("validates path segments: a malformed id or step is a 400 naming the parameter", async () => {
    const bad = await call(runRoute.GET, "GET", "/api/v1/runs/x", { params: { id: "a b\u00ff" } });
    expect(bad.status).toBe(400);
    expect(bad.json.issues[0].path).toBe("params.id");
    for (const s of ["0x1", "-1", "", "1.5", "99999999999"]) {
      const g = await call(groupsRoute.GET, "GET", "/api/v1/runs/x/steps/s/groups", { params: { id: run.id, step: s } });
      expect(g.status, s).toBe(400);
      expect(g.json.issues[0].path).toBe("params.step");
    }
  });
});

describe("edges found by probing", () => {
  /** A body that would go on for 64 MB, counting what was read of it. */
  const endless = () => {
    const read = { bytes: 0 };
    const body = new ReadableStream<Uint8Array>({
      pull(c) {
        read.bytes += 64 * 1024;
        if (read.bytes > 64 << 20) c.close();
        else c.enqueue(new Uint8Array(64 * 1024).fill(32));
      },
    });
    return { body, read };
  };

  it("reads at most 1 MB of a body outside ingest (cancel, retry, finish, resume): 413 before parsing, by Content-Length and while streaming", async () => {
    const before = counts();
    for (const [name, h] of [
      ["cancel", cancelRoute.POST],
      ["retry", retryRoute.POST],
      ["finish", finishRoute.POST],
      ["resume", resumeRoute.POST],
    ] as const) {
      const declared = await call(h, "POST", "", withKey({ raw: "{}", headers: { "content-length": String(2 << 20) } }));
      expect(declared.status, name).toBe(413);
      expect(declared.json.error, name).toMatch(/limit of 1048576 bytes/);
      const { body, read } = endless();
      const streamed = await call(h, "POST", "", withKey({ raw: body }));
      expect(streamed.status, name).toBe(413);
      expect(streamed.json.issues[0].path, name).toBe("body");
      expect(read.bytes, name).toBeLessThan(3 << 20); // stopped soon after 1 MB, not at 64 MB
    }
    expect(counts()).toEqual(before);
    // ingest bodies keep the ingest limit (TURNLENS_MAX_BODY_MB, 64 MB)
    const points = Array.from({ length: 40_000 }, (_, i) => ({ step: 100_000 + i, values: { "train/big": i } }));
    const big = JSON.stringify({ points });
    expect(big.length).toBeGreaterThan(1 << 20);
    expect((await call(metricsRoute.POST, "POST", "", withKey({ raw: big }))).status).toBe(201);
  });

  it("refuses a number that overflows to Infinity and invalid UTF-8, naming the field, in free-form JSON and in ingest bodies", async () => {
    const before = counts();
    const inf = await call(importRoute.POST, "POST", "/api/v1/runs/import", { raw: '{"name":"inf","config":{"opt":{"lr":1e309}}}' });
    expect(inf.status).toBe(400);
    expect(inf.json.issues[0].path).toBe("body.config.opt.lr");
    expect(inf.json.error).toMatch(/overflows to Infinity/);
    const inInfo = JSON.stringify(step(50)).replace('"reward":1}', '"reward":1,"info":{"scores":[1,-1e400]}}');
    const s = await call(stepsRoute.POST, "POST", "", withKey({ raw: inInfo }));
    expect(s.status).toBe(400);
    expect(s.json.issues[0].path).toBe("body.groups.0.trajectories.0.turns.0.info.scores.1");
    /** `text` with the bytes `bad` after the first `at` */
    const bytes = (text: string, at: string, bad: number[]) => {
      const i = text.indexOf(at) + at.length;
      return Buffer.concat([Buffer.from(text.slice(0, i)), Buffer.from(bad), Buffer.from(text.slice(i))]);
    };
    const name = await call(importRoute.POST, "POST", "/api/v1/runs/import", { raw: bytes('{"name":"caf","config":{}}', '"caf', [0xe9]) });
    expect(name.status).toBe(400);
    expect(name.json.issues).toEqual([{ path: "body.name", message: "not valid UTF-8" }]);
    const obs = await call(stepsRoute.POST, "POST", "", withKey({ raw: bytes(JSON.stringify(step(51)), '"observation":"o', [0xf0, 0x9f, 0x98]) }));
    expect(obs.status).toBe(400);
    expect(obs.json.issues[0].path).toBe("body.groups.0.trajectories.0.turns.0.observation");
    const key = await call(metricsRoute.POST, "POST", "", withKey({ raw: bytes('{"points":[{"step":1,"values":{"loss":1}}]}', '"lo', [0xff]) }));
    expect(key.status).toBe(400);
    expect(key.json.issues[0].path).toBe("body.points.0.values.lo\ufffdss"); // a key is named as it reads
    expect(counts()).toEqual(before);
  });

  it("refuses a steps batch out of order or with a step twice, naming the index; increasing steps with gaps are stored", async () => {
    const before = counts();
    const unordered = await call(batchRoute.POST, "POST", "", withKey({ body: { steps: [step(60), step(62), step(61)] } }));
    expect(unordered.status).toBe(400);
    expect(unordered.json.issues).toEqual([{ path: "body.steps.2.step", message: expect.stringMatching(/step 61 comes after step 62/) }]);
    const twice = await call(batchRoute.POST, "POST", "", withKey({ body: { steps: [step(63), step(63)] } }));
    expect(twice.status).toBe(400);
    expect(twice.json.issues[0].path).toBe("body.steps.1.step");
    expect(counts()).toEqual(before);
    const gaps = await call(batchRoute.POST, "POST", "", withKey({ body: { steps: [step(64), step(70)] } }));
    expect(gaps.status).toBe(201);
    expect(gaps.json.steps).toHaveLength(2);
  });
});

describe("web security", () => {
  it("refuses cross-site writes: a foreign Origin, a text/plain or form body, Sec-Fetch-Site cross-site", async () => {
    const before = counts();
    const body = { name: "csrf" };
    const foreign = await call(importRoute.POST, "POST", "/api/v1/runs/import", { body, headers: { origin: "http://evil.example" } });
    expect(foreign.status).toBe(403);
    expect(foreign.json.issues[0].path).toBe("headers.origin");
    for (const type of ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"]) {
      const r = await call(importRoute.POST, "POST", "/api/v1/runs/import", { body, headers: { "content-type": type } });
      expect(r.status, type).toBe(415);
      expect(r.json.issues[0].path).toBe("headers.content-type");
    }
    const site = await call(importRoute.POST, "POST", "/api/v1/runs/import", { body, headers: { "sec-fetch-site": "cross-site" } });
    expect(site.status).toBe(403);
    const nullOrigin = await call(runRoute.DELETE, "DELETE", "", { params: { id: run.id }, headers: { origin: "null" } });
    expect(nullOrigin.status).toBe(403);
    expect(counts()).toEqual(before);
    const same = await call(importRoute.POST, "POST", "/api/v1/runs/import", { body, headers: { origin: "http://127.0.0.1:3000", host: "127.0.0.1:3000" } });
    expect(same.status, JSON.stringify(same.json)).toBe(201);
  });

  it("refuses foreign Host headers (DNS rebinding) on reads and writes unless allowed", async () => {
    for (const host of ["evil.example", "127.0.0.1.nip.io:3000", "localhost.evil.example", "[::2]:3000"]) {
      const r = await call(runsRoute.GET, "GET", "/api/v1/runs", { headers: { host } });
      expect(r.status, host).toBe(403);
      expect(r.json.issues[0].path).toBe("headers.host");
    }
    for (const host of ["127.0.0.1:3000", "localhost:3000", "[::1]:3000", "127.0.0.2"])
      expect((await call(runsRoute.GET, "GET", "/api/v1/runs", { headers: { host } })).status, host).toBe(200);
    process.env.TURNLENS_ALLOWED_HOSTS = "turnlens.lab.example";
    expect((await call(runsRoute.GET, "GET", "/api/v1/runs", { headers: { host: "turnlens.lab.example:3000" } })).status).toBe(200);
  });

  it("with a read token, reads need it (or the API token, or the dashboard's cookie)", async () => {
    process.env.TURNLENS_READ_TOKEN = "r".repeat(32);
    process.env.TURNLENS_API_TOKEN = "w".repeat(40);
    expect((await call(runsRoute.GET, "GET", "/api/v1/runs")).status).toBe(401);
    expect((await call(runsRoute.GET, "GET", "/api/v1/runs", { headers: { authorization: `Bearer ${"r".repeat(32)}` } })).status).toBe(200);
    expect((await call(runsRoute.GET, "GET", "/api/v1/runs", { headers: { authorization: `Bearer ${"w".repeat(40)}` } })).status).toBe(200);
    expect((await call(runsRoute.GET, "GET", "/api/v1/runs", { headers: { cookie: `turnlens_token=${"r".repeat(32)}` } })).status).toBe(200);
    // the read token opens no writes
    const w = await call(importRoute.POST, "POST", "/api/v1/runs/import", { body: { name: "x" }, headers: { authorization: `Bearer ${"r".repeat(32)}` } });
    expect(w.status).toBe(401);
  });

  it("refuses a short or padded token instead of running with it", async () => {
    const { securityConfig } = await import("@/lib/api/security");
    expect(() => securityConfig({ TURNLENS_API_TOKEN: "   " })).toThrow(/TURNLENS_API_TOKEN must be at least 32/);
    expect(() => securityConfig({ TURNLENS_API_TOKEN: "short" })).toThrow(/at least 32/);
    expect(() => securityConfig({ TURNLENS_READ_TOKEN: ` ${"x".repeat(40)} ` })).toThrow(/TURNLENS_READ_TOKEN/);
    expect(securityConfig({ TURNLENS_API_TOKEN: "x".repeat(32) }).apiToken).toHaveLength(32);
  });
});

describe("run ownership", () => {
  it("refuses external writes into a worker's run, naming the owner", async () => {
    const { runId } = createRun({
      project: "p",
      name: "worker-run",
      kind: "eval",
      jobKind: "baseline",
      config: {},
      envId: "frozenlake",
      estimator: null,
      seed: 0,
      tags: [],
      notes: "",
      status: "running",
    });
    const before = counts();
    const m = await call(metricsRoute.POST, "POST", "", { params: { id: runId }, body: { points: [{ step: 29, values: { "eval/success_rate": 123 } }] } });
    expect(m.status).toBe(409);
    expect(m.json.error).toMatch(/produced by a TurnLens worker \(job kind "baseline"\)/);
    const s = await call(stepsRoute.POST, "POST", "", { params: { id: runId }, body: step(29) });
    expect(s.status).toBe(409);
    expect(counts()).toEqual(before);
  });

  it("needs the imported run's write key", async () => {
    const before = counts();
    const none = await call(metricsRoute.POST, "POST", "", { params: { id: run.id }, body: { points: [{ step: 1, values: { x: 1 } }] } });
    expect(none.status).toBe(403);
    expect(none.json.issues[0].path).toBe("headers.x-turnlens-write-key");
    const wrong = await call(metricsRoute.POST, "POST", "", {
      params: { id: run.id },
      headers: { "x-turnlens-write-key": "tlw_wrong" },
      body: { points: [{ step: 1, values: { x: 1 } }] },
    });
    expect(wrong.status).toBe(403);
    expect(counts()).toEqual(before);
  });

  it("refuses writes to a finished run until it is resumed", async () => {
    const r = await call(importRoute.POST, "POST", "/api/v1/runs/import", { body: { name: "finishes" } });
    const own = (o: CallOpts = {}): CallOpts => ({ ...o, params: { id: r.json.id }, headers: { "x-turnlens-write-key": r.json.writeKey } });
    expect((await call(finishRoute.POST, "POST", "", own({ body: { status: "succeeded" } }))).status).toBe(200);
    const late = await call(metricsRoute.POST, "POST", "", own({ body: { points: [{ step: 1, values: { x: 1 } }] } }));
    expect(late.status).toBe(409);
    expect(late.json.error).toMatch(/resume/);
    expect((await call(resumeRoute.POST, "POST", "", { body: {}, params: { id: r.json.id } })).status).toBe(403); // key needed
    const resumed = await call(resumeRoute.POST, "POST", "", own({ body: {} }));
    expect(resumed.status).toBe(200);
    expect(resumed.json.status).toBe("running");
    expect((await call(metricsRoute.POST, "POST", "", own({ body: { points: [{ step: 1, values: { x: 1 } }] } }))).status).toBe(201);
  });
});

describe("idempotent writes", () => {
  it("stores a retried metric batch once; other content under the same batch id is a 409", async () => {
    const batch = { batchId: "client-1:000001", points: [{ step: 5, values: { "train/reward": 0.5, "train/kl": 0.01 } }] };
    const first = await call(metricsRoute.POST, "POST", "", withKey({ body: batch }));
    expect(first.status).toBe(201);
    const metrics = count("Metric");
    const again = await call(metricsRoute.POST, "POST", "", withKey({ body: batch }));
    expect(again.status).toBe(200);
    expect(again.json).toEqual(first.json);
    expect(count("Metric")).toBe(metrics);
    const other = await call(metricsRoute.POST, "POST", "", withKey({ body: { ...batch, points: [{ step: 5, values: { "train/reward": 0.9 } }] } }));
    expect(other.status).toBe(409);
    expect(other.json.issues[0].path).toBe("body.batchId");
    const stored = metricRows(run.id).find((r) => r.key === "train/reward" && r.step === 5)?.value;
    expect(stored).toBe(0.5);
  });

  it("answers a retried step with the stored id, and names the step when the content differs", async () => {
    const s = step(10);
    const first = await call(stepsRoute.POST, "POST", "", withKey({ body: { ...s, batchId: "b-10" } }));
    expect(first.status).toBe(201);
    const turns = count("Turn");
    const again = await call(stepsRoute.POST, "POST", "", withKey({ body: { ...s, batchId: "b-10-retry" } }));
    expect(again.status).toBe(200);
    expect(again.json.stepId).toBe(first.json.stepId);
    const changed = step(10, ["t0", "t9"]);
    const clash = await call(stepsRoute.POST, "POST", "", withKey({ body: changed }));
    expect(clash.status).toBe(409);
    expect(clash.json.error).toMatch(/step 10/);
    expect(count("Turn")).toBe(turns);
  });
});

describe("one contract per route", () => {
  // app/api/v1/runs/[id]/route.ts -> /runs/{id}
  const routeFiles = (dir: string): string[] =>
    fs
      .readdirSync(dir, { withFileTypes: true })
      .flatMap((d) => (d.isDirectory() ? routeFiles(path.join(dir, d.name)) : d.name === "route.ts" ? [path.join(dir, d.name)] : []));
  const apiDir = path.join(ROOT, "app/api/v1");

  it("every exported handler is declared in lib/api/routes.ts with its method and path, and every declaration has a handler", () => {
    const declared = new Set(ROUTES.map((r) => `${r.method} ${r.path}`));
    const served = new Set<string>();
    for (const file of routeFiles(apiDir)) {
      const p =
        "/" +
        path
          .relative(apiDir, path.dirname(file))
          .split(path.sep)
          .join("/")
          .replace(/\[(\w+)\]/g, "{$1}");
      const src = fs.readFileSync(file, "utf8");
      for (const m of src.matchAll(/export const (GET|POST|DELETE|PUT|PATCH) = route\(\s*routes\.(\w+)/g)) {
        const c = (routes as Record<string, (typeof ROUTES)[number]>)[m[2]];
        expect(c, `${file}: routes.${m[2]}`).toBeDefined();
        expect(`${c!.method} ${c!.path}`, file).toBe(`${m[1]} ${p}`);
        served.add(`${m[1]} ${p}`);
      }
      expect(src, file).not.toMatch(/export const (GET|POST|DELETE) = (?!route\()/);
    }
    expect([...served].sort()).toEqual([...declared].sort());
  });

  it("generates an OpenAPI 3.1 document whose references all resolve and which lists every status", () => {
    const doc = openApiDocument();
    const text = JSON.stringify(doc);
    const refs = [...text.matchAll(/"\$ref":"([^"]+)"/g)].map((m) => m[1]);
    expect(refs.length).toBeGreaterThan(20);
    for (const ref of refs) {
      expect(ref.startsWith("#/components/schemas/"), ref).toBe(true);
      expect(doc.components.schemas, ref).toHaveProperty(ref.slice("#/components/schemas/".length));
    }
    expect(text).not.toContain("#/$defs/");
    const exp = doc.paths["/runs/{id}/metrics/export"].get as {
      parameters: { name: string }[];
      responses: Record<string, { content?: Record<string, unknown> }>;
    };
    expect(exp.parameters.map((p) => p.name)).toEqual(expect.arrayContaining(["id", "format", "key"]));
    expect(Object.keys(exp.responses["200"].content!)).toEqual(["text/csv", "application/json"]);
    const steps = doc.paths["/runs/{id}/steps"].post as { responses: Record<string, unknown> };
    expect(Object.keys(steps.responses).sort()).toEqual(["200", "201", "400", "401", "403", "404", "408", "409", "413", "415", "429", "507"]);
  });
});
