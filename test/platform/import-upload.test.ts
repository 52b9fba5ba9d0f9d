// The dashboard's upload: POST /imports stores the file and queues an `import` job; a real worker
// runs the Python importer and stores the rows through the ingest service. Files in every format
// are written here (TensorBoard records with their own CRC-32C, archives with Python's tarfile and
// zipfile): malformed rows are reported, not fatal; the same upload again adds nothing; a
// malicious archive fails the job with a clear error; cancel kills the Python child.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { NextRequest } from "next/server";
import { killAllWorkers, spawnWorker, useTempDatabase, waitFor, type WorkerProcess } from "../helpers/workers";

const env = useTempDatabase("import-upload");
process.env.TURNLENS_UPLOAD_DIR = path.join(env.dir, "uploads");
process.env.TURNLENS_MAX_UPLOAD_MB = "4"; // read when the route declarations load: a 413 is cheap to provoke
const uploadRoute = await import("@/app/api/v1/imports/route");
const importRoute = await import("@/app/api/v1/imports/[id]/route");
const cancelRoute = await import("@/app/api/v1/imports/[id]/cancel/route");
const { metricCount } = await import("../helpers/metric-rows");
const { getRun, listRuns } = await import("@/lib/db/runs");
const { listGroups } = await import("@/lib/db/rollouts");
const { countRows } = await import("../helpers/db-inspect");
const { runListQuerySchema } = await import("@/lib/schemas/runs");
const { requestCancel, tailLog } = await import("@/lib/jobs");
import type { ImportOut } from "@/lib/schemas/imports";

let worker: WorkerProcess;
beforeAll(async () => {
  worker = spawnWorker({}, ["--kinds", "import"]);
  await worker.ready;
});
afterEach(() => {
  if (worker.child.exitCode !== null) throw new Error(`worker died:\n${worker.output()}`);
});
afterAll(async () => {
  await killAllWorkers();
  await env.cleanup();
});

const files = path.join(env.dir, "files");
fs.mkdirSync(files, { recursive: true });

async function post(query: Record<string, string>, body: Uint8Array | string, type = "application/octet-stream") {
  const url = new URL("/api/v1/imports", "http://127.0.0.1:3000");
  for (const [k, v] of Object.entries(query)) url.searchParams.set(k, v);
  const res = await uploadRoute.POST(new NextRequest(url, { method: "POST", headers: { "content-type": type }, body: body as BodyInit }), {
    params: Promise.resolve({}),
  });
  return { status: res.status, json: await res.json() };
}

async function getImport(id: string): Promise<ImportOut> {
  const res = await importRoute.GET(new NextRequest(new URL(`/api/v1/imports/${id}`, "http://127.0.0.1:3000")), { params: Promise.resolve({ id }) });
  expect(res.status).toBe(200);
  return res.json();
}

/** Uploads, then waits for the job to end; returns the finished import. */
async function upload(format: string, filename: string, bytes: Uint8Array | string, extra: Record<string, string> = {}): Promise<ImportOut> {
  const r = await post({ format, filename, project: "uploads", ...extra }, bytes);
  expect(r.status, JSON.stringify(r.json)).toBe(201);
  expect(r.json.job.kind).toBe("import");
  return waitFor(
    `import of ${filename}`,
    async () => {
      const imp = await getImport(r.json.id);
      return ["succeeded", "failed", "canceled"].includes(imp.job.status) ? imp : null;
    },
    90_000,
    200,
  );
}

const turnsOf = (runId: string) => countRows("Turn", runId);
const metricsOf = (runId: string) => metricCount(runId);

function python(code: string, ...args: string[]) {
  execFileSync(process.env.TURNLENS_PYTHON ?? "python3", ["-c", code, ...args], { stdio: "pipe" });
}

// ------------------------------------------------------------------ TensorBoard records, written here
const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let i = 0; i < 256; i++) {
    let c = i;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
    t[i] = c >>> 0;
  }
  return t;
})();
function crc32c(b: Uint8Array): number {
  let c = 0xffffffff;
  for (const x of b) c = CRC_TABLE[(c ^ x) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}
const masked = (b: Uint8Array) => ((((crc32c(b) >>> 15) | (crc32c(b) << 17)) >>> 0) + 0xa282ead8) >>> 0;
function varint(n: number): number[] {
  const out: number[] = [];
  do {
    let b = n & 0x7f;
    n = Math.floor(n / 128);
    if (n) b |= 0x80;
    out.push(b);
  } while (n);
  return out;
}
const field = (num: number, wire: number, payload: Uint8Array) =>
  Buffer.concat([Buffer.from(varint((num << 3) | wire)), wire === 2 ? Buffer.from(varint(payload.length)) : Buffer.alloc(0), payload]);
const f64 = (x: number) => {
  const b = Buffer.alloc(8);
  b.writeDoubleLE(x);
  return b;
};
const f32 = (x: number) => {
  const b = Buffer.alloc(4);
  b.writeFloatLE(x);
  return b;
};
/** An Event {wall_time, step, summary {value {tag, simple_value}}} in a TFRecord frame. */
function tbRecord(step: number, scalars: [string, number][]): Buffer {
  const values = Buffer.concat(scalars.map(([tag, v]) => field(1, 2, Buffer.concat([field(1, 2, Buffer.from(tag)), field(2, 5, f32(v))]))));
  const ev = Buffer.concat([field(1, 1, f64(1.7e9 + step)), field(2, 0, Buffer.from(varint(step))), field(5, 2, values)]);
  const header = Buffer.alloc(8);
  header.writeBigUInt64LE(BigInt(ev.length));
  const u32 = (x: number) => {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(x);
    return b;
  };
  return Buffer.concat([header, u32(masked(header)), ev, u32(masked(ev))]);
}

describe("upload and import, every format", () => {
  it("verl: a <step>.jsonl; a malformed line is reported, the rest stored; the same upload again adds nothing", async () => {
    const rows = [
      { input: "2+2?", output: "4", score: 1, step: 3, acc: 1 },
      { input: "2+2?", output: "5", score: 0, step: 3, acc: 0 },
      { input: "3+3?", output: "6", score: 1, step: 3, acc: 1 },
    ];
    const text = rows.map((r) => JSON.stringify(r)).join("\n") + "\n{not json\n" + JSON.stringify({ output: "no input", score: 1 }) + "\n";
    const first = await upload("verl", "3.jsonl", text, { name: "verl-upload" });
    expect(first.job.status, first.job.error ?? "").toBe("succeeded");
    const rep = first.report!;
    expect(rep.runs).toHaveLength(1);
    expect(rep.runs[0]).toMatchObject({ name: "verl-upload", created: true, imported: 3, alreadyPresent: 0, rejected: 2 });
    expect(rep.rejected).toBe(2);
    expect(rep.rejectedRows.map((r) => r.where)).toEqual(["3.jsonl:4", "3.jsonl:5"]);
    expect(rep.rejectedRows[0].reason).toMatch(/not valid JSON/);
    expect(rep.rejectedRows[1].reason).toMatch(/input: required/);
    const runId = rep.runs[0].runId;
    const run = getRun(runId);
    expect(run).toMatchObject({ kind: "imported", status: "succeeded", name: "verl-upload", project: "uploads" });
    expect(turnsOf(runId)).toBe(3);
    expect(listGroups(runId, 3)).toHaveLength(2); // samples of one input form a group

    const runs = countRows("Run");
    const again = await upload("verl", "3.jsonl", text, { name: "verl-upload" });
    expect(again.sha256).toBe(first.sha256);
    expect(again.report!.runs[0]).toMatchObject({ runId, created: false, imported: 0, alreadyPresent: 3, rejected: 2 });
    expect(turnsOf(runId)).toBe(3);
    expect(countRows("Run")).toBe(runs); // the same source again: its run found, no second one

    // both uploads are listed, newest first; a finished import cannot be canceled
    const list = await uploadRoute.GET(new NextRequest(new URL("/api/v1/imports?pageSize=5", "http://127.0.0.1:3000")), { params: Promise.resolve({}) });
    expect((await list.json()).imports.slice(0, 2).map((i: ImportOut) => i.id)).toEqual([again.id, first.id]);
    const cancel = await cancelRoute.POST(
      new NextRequest(new URL(`/api/v1/imports/${first.id}/cancel`, "http://127.0.0.1:3000"), {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: "{}",
      }),
      { params: Promise.resolve({ id: first.id }) },
    );
    expect(cancel.status).toBe(409);
  });

  it("generic JSONL: run, metrics, rollouts and finish lines", async () => {
    const lines = [
      JSON.stringify({ type: "run", name: "jsonl-upload", config: { lr: 3e-4 }, envId: "sokoban", estimator: "grpo" }),
      ...Array.from({ length: 10 }, (_, s) => JSON.stringify({ type: "metrics", step: s, values: { "train/reward": s / 10 } })),
      JSON.stringify({
        type: "rollouts",
        step: 0,
        groups: { g0: [[{ observation: "o", action: "a", reward: 1, anchor: "A" }], [{ observation: "o", action: "b", reward: 0, anchor: "A" }]] },
      }),
      JSON.stringify({ type: "metrics", step: 1, values: { "bad key": 1 } }),
      JSON.stringify({ type: "finish", status: "failed" }),
    ];
    const imp = await upload("jsonl", "my-run.jsonl", lines.join("\n") + "\n");
    expect(imp.job.status, imp.job.error ?? "").toBe("succeeded");
    const r = imp.report!.runs[0];
    expect(r).toMatchObject({ name: "jsonl-upload", imported: 11, rejected: 1 }); // rows are lines: 10 metrics lines and 1 rollouts line
    expect(imp.report!.rejectedRows[0]).toMatchObject({ where: "my-run.jsonl:13" });
    expect(getRun(r.runId)).toMatchObject({ status: "failed", envId: "sokoban", estimator: "grpo" });
    expect(metricsOf(r.runId)).toBe(10);
    expect(turnsOf(r.runId)).toBe(2);
  });

  it("TensorBoard: a tar.gz of a log dir with two runs, one event file with a corrupt tail", async () => {
    const root = path.join(files, "tb");
    for (const run of ["run_a", "run_b"]) {
      fs.mkdirSync(path.join(root, "logs", run), { recursive: true });
      const recs = Array.from({ length: 20 }, (_, s) =>
        tbRecord(s, [
          ["train/loss", 1 / (s + 1)],
          ["train/reward", s / 20],
        ]),
      );
      if (run === "run_b") {
        const bad = tbRecord(20, [["train/loss", 9]]);
        bad[bad.length - 1] ^= 0xff; // flipped checksum byte
        recs.push(bad);
      }
      fs.writeFileSync(path.join(root, "logs", run, "events.out.tfevents.1700000000.host.1.0"), Buffer.concat(recs));
    }
    execFileSync("tar", ["-czf", path.join(files, "logs.tar.gz"), "-C", root, "logs"]);
    const imp = await upload("tensorboard", "logs.tar.gz", fs.readFileSync(path.join(files, "logs.tar.gz")));
    expect(imp.job.status, imp.job.error ?? "").toBe("succeeded");
    const runs = imp.report!.runs;
    expect(runs.map((r) => r.name).sort()).toEqual(["logs/run_a", "logs/run_b"]);
    for (const r of runs) {
      expect(r.imported).toBe(40);
      expect(metricsOf(r.runId)).toBe(40);
      expect(r.source).toMatch(/^logs\.tar\.gz!run_[ab]$/);
    }
    expect(imp.report!.rejectedRows.some((r) => /checksum/.test(r.reason))).toBe(true);
  });

  it("MLflow: a zip of an mlruns store (params as config, metric histories, status)", async () => {
    const store = path.join(files, "mlflow", "mlruns");
    const run = path.join(store, "1", "abc123");
    fs.mkdirSync(path.join(run, "metrics", "train"), { recursive: true });
    fs.mkdirSync(path.join(run, "params"));
    fs.mkdirSync(path.join(run, "tags"));
    fs.writeFileSync(path.join(store, "1", "meta.yaml"), "experiment_id: '1'\nname: sokoban\n");
    fs.writeFileSync(path.join(run, "meta.yaml"), "experiment_id: '1'\nrun_id: abc123\nrun_name: gentle-fox\nstatus: 3\n");
    fs.writeFileSync(path.join(run, "params", "lr"), "1e-06");
    fs.writeFileSync(
      path.join(run, "metrics", "train", "reward"),
      Array.from({ length: 30 }, (_, s) => `${1700000000000 + s} ${s / 10} ${s}\n`).join("") + "garbage line\n",
    );
    python("import shutil,sys; shutil.make_archive(sys.argv[1], 'zip', sys.argv[2], 'mlruns')", path.join(files, "mlruns"), path.dirname(store));
    const imp = await upload("mlflow", "mlruns.zip", fs.readFileSync(path.join(files, "mlruns.zip")));
    expect(imp.job.status, imp.job.error ?? "").toBe("succeeded");
    const r = imp.report!.runs[0];
    expect(r).toMatchObject({ name: "gentle-fox", imported: 30, rejected: 1 });
    expect(getRun(r.runId).config).toMatchObject({ lr: 1e-6, mlflow: { experiment: "sokoban" } });
    expect(metricsOf(r.runId)).toBe(30);
  });
});

describe("upload and import, the formats added later", () => {
  it("MLflow 3's SQLite store (mlflow.db): a replaced same-step value is counted, not imported; the run keeps MLflow's times", async () => {
    const db = path.join(files, "mlflow.db");
    // MLflow's own tables (SqlAlchemyStore), only the columns the importer reads; the Python client tests write real ones with mlflow
    python(
      `import sqlite3,sys
c=sqlite3.connect(sys.argv[1])
c.executescript("""CREATE TABLE experiments (experiment_id INTEGER, name TEXT);
CREATE TABLE runs (run_uuid TEXT, name TEXT, status TEXT, start_time INTEGER, end_time INTEGER, experiment_id INTEGER, lifecycle_stage TEXT);
CREATE TABLE params (key TEXT, value TEXT, run_uuid TEXT); CREATE TABLE tags (key TEXT, value TEXT, run_uuid TEXT);
CREATE TABLE metrics (key TEXT, value REAL, timestamp INTEGER, run_uuid TEXT, step INTEGER, is_nan INTEGER);
INSERT INTO experiments VALUES (1, 'sokoban');
INSERT INTO runs VALUES ('r1', 'gentle-fox', 'FINISHED', 1763000000000, 1763000060000, 1, 'active');
INSERT INTO params VALUES ('lr', '1e-06', 'r1');
INSERT INTO metrics VALUES ('train/reward', 0.1, 1763000001000, 'r1', 0, 0), ('train/reward', 0.2, 1763000002000, 'r1', 1, 0), ('train/reward', 0.25, 1763000003000, 'r1', 1, 0);""")
c.commit()`,
      db,
    );
    const imp = await upload("mlflow", "mlflow.db", fs.readFileSync(db));
    expect(imp.job.status, imp.job.error ?? "").toBe("succeeded");
    const r = imp.report!.runs[0];
    expect(r).toMatchObject({ name: "gentle-fox", imported: 2, replaced: 1, rejected: 0 });
    expect(imp.report!.replaced).toBe(1);
    expect(metricsOf(r.runId)).toBe(2);
    const run = getRun(r.runId);
    expect(run.config).toMatchObject({ lr: 1e-6, mlflow: { experiment: "sokoban", runId: "r1" } });
    expect(run.status).toBe("succeeded");
    expect(run.finishedAt).toBe(new Date(1763000060000).toISOString());
    expect(run.startedAt).toBe(new Date(1763000000000).toISOString());
  });

  it("chat JSONL: a trajectory per line, a turn per assistant message, grouped by prompt", async () => {
    const chat = (prompt: string, answers: string[], reward: number) =>
      JSON.stringify({
        messages: [
          { role: "user", content: prompt },
          ...answers
            .flatMap((a) => [
              { role: "assistant", content: a },
              { role: "user", content: `after ${a}` },
            ])
            .slice(0, -1),
        ],
        reward,
      });
    const text =
      [chat("level 1", ["left", "up"], 1), chat("level 1", ["down"], 0), chat("level 2", ["right"], 0.5), JSON.stringify({ messages: [] })].join("\n") + "\n";
    const imp = await upload("chat", "rollouts.jsonl", text);
    expect(imp.job.status, imp.job.error ?? "").toBe("succeeded");
    const r = imp.report!.runs[0];
    expect(r).toMatchObject({ imported: 3, rejected: 1 });
    expect(imp.report!.rejectedRows[0]).toMatchObject({ where: "rollouts.jsonl:4", reason: "reward: required" });
    expect(turnsOf(r.runId)).toBe(4);
    expect(countRows("RolloutGroup", r.runId)).toBe(2);
  });
});

describe("refusals", () => {
  it("a file the format does not read fails the job saying what it is: no server path, no stack trace, no run", async () => {
    const runsBefore = countRows("Run");
    const imp = await upload("mlflow", "notes.txt", "hello from a text file\n");
    expect(imp.job.status).toBe("failed");
    expect(imp.job.error).toMatch(/^notes\.txt is a text file starting 'hello from a text file'; the mlflow importer reads an MLflow store/);
    expect(imp.job.error).toMatch(/Other formats: .*trackio/);
    const log = (await tailLog(imp.id, -1, 1000)).lines.map((l) => l.line).join("\n");
    for (const text of [imp.job.error!, log]) {
      expect(text).not.toContain(process.env.TURNLENS_UPLOAD_DIR!);
      expect(text).not.toMatch(/\n\s+at /); // a Node stack frame
      expect(text).not.toContain("Traceback");
    }
    // every row rejected: the job says so, and no run is made
    const bad = await upload("chat", "bad.jsonl", "{oops\n" + JSON.stringify({ messages: [{ role: "user", content: "hi" }], reward: 1 }) + "\n");
    expect(bad.job.status).toBe("failed");
    expect(bad.job.error).toMatch(
      /^nothing importable \(every row was rejected or the source is empty\): no run created; 2 row\(s\) rejected, e\.g\. bad\.jsonl:1: not valid JSON/,
    );
    expect(countRows("Run")).toBe(runsBefore);
  });

  it("a path-traversal archive and a symlink archive fail the job with a clear error and store nothing", async () => {
    const runsBefore = countRows("Run");
    const evil = path.join(files, "evil.tar.gz");
    python(
      'import io,sys,tarfile\nwith tarfile.open(sys.argv[1],\'w:gz\') as t:\n d=b\'{"input":"x","output":"y","score":1}\\n\'\n i=tarfile.TarInfo(\'dump/../../escaped.jsonl\'); i.size=len(d); t.addfile(i,io.BytesIO(d))',
      evil,
    );
    const imp = await upload("verl", "evil.tar.gz", fs.readFileSync(evil));
    expect(imp.job.status).toBe("failed");
    expect(imp.job.error).toMatch(/'\.\.' in the path refused \(path traversal\)/);
    const link = path.join(files, "link.tar");
    python(
      "import sys,tarfile\nwith tarfile.open(sys.argv[1],'w') as t:\n i=tarfile.TarInfo('dump/1.jsonl'); i.type=tarfile.SYMTYPE; i.linkname='/etc/passwd'; t.addfile(i)",
      link,
    );
    const imp2 = await upload("verl", "link.tar", fs.readFileSync(link));
    expect(imp2.job.status).toBe("failed");
    expect(imp2.job.error).toMatch(/links are refused/);
    expect(countRows("Run")).toBe(runsBefore);
    expect(fs.existsSync(path.join(env.dir, "escaped.jsonl"))).toBe(false);
  });

  it("answers 413 over the size limit, 415 for another content type, 400 for an empty body or a bad query, storing nothing", async () => {
    const big = await post({ format: "jsonl", filename: "big.jsonl" }, new Uint8Array(5 * 1024 * 1024));
    expect(big.status).toBe(413);
    expect(big.json.error).toMatch(/TURNLENS_MAX_UPLOAD_MB/);
    const form = await post({ format: "jsonl", filename: "a.jsonl" }, "x", "multipart/form-data; boundary=x");
    expect(form.status).toBe(415);
    const empty = await post({ format: "jsonl", filename: "a.jsonl" }, "");
    expect(empty.status).toBe(400);
    expect(empty.json.issues[0].path).toBe("body");
    const badFormat = await post({ format: "csv", filename: "a.jsonl" }, "x");
    expect(badFormat.status).toBe(400);
    expect(badFormat.json.issues.map((i: { path: string }) => i.path)).toContain("query.format");
    const badName = await post({ format: "jsonl", filename: "../../etc/passwd" }, "x");
    expect(badName.status).toBe(400);
    expect(badName.json.issues.map((i: { path: string }) => i.path)).toContain("query.filename");
    const left = fs.readdirSync(path.join(env.dir, "uploads", "tmp"));
    expect(left).toEqual([]);
  });

  it("cancel stops a long import and kills its Python child", async () => {
    // TensorBoard records: the pure-Python CRC-32C reads a few MB/s, so reading takes seconds
    const recs: Buffer[] = [];
    let size = 0;
    for (let s = 0; size < 3_900_000; s++) {
      const rec = tbRecord(
        s,
        Array.from({ length: 20 }, (_, k): [string, number] => [`m/key${k}`, s + k]),
      );
      recs.push(rec);
      size += rec.length;
    }
    const r = await post({ format: "tensorboard", filename: "events.out.tfevents.1700000000.long", project: "uploads" }, Buffer.concat(recs));
    expect(r.status, JSON.stringify(r.json)).toBe(201);
    const pyPid = await waitFor(
      "the Python importer running",
      () => {
        try {
          const out = execFileSync("pgrep", ["-f", `turnlens.cli import tensorboard ${process.env.TURNLENS_UPLOAD_DIR}`])
            .toString()
            .trim();
          return out ? Number(out.split("\n")[0]) : null;
        } catch {
          return null;
        }
      },
      30_000,
      50,
    );
    await requestCancel(r.json.id);
    const done = await waitFor(
      "import canceled",
      async () => {
        const imp = await getImport(r.json.id);
        return imp.job.status === "canceled" ? imp : null;
      },
      10_000,
      100,
    );
    expect(done.report).toBeNull();
    const log = (await tailLog(r.json.id, -1, 1000)).lines.map((l) => l.line);
    expect(
      log.some((l) => l.startsWith("import: read ")),
      `stopped while Python was reading:\n${log.join("\n")}`,
    ).toBe(false);
    expect(listRuns(runListQuerySchema.parse({ q: "long" })).total).toBe(0);
    await waitFor(
      "the Python child gone",
      () => {
        try {
          process.kill(pyPid, 0);
          return false;
        } catch {
          return true;
        }
      },
      5_000,
      50,
    );
  });
});
