// How fast an upload on the import page becomes stored rows: uploads a generated verl dump (a tar.gz
// of <step>.jsonl files) and a generic JSONL of metric points to a running server with a worker, waits
// for each import job, and prints rows/s end to end with the time spent reading (the Python importer)
// and storing (the ingest functions), from the job log's timestamps. No goal is set for it.
//   npx tsx scripts/bench-import.ts [baseUrl] [scale]   (default http://127.0.0.1:3000, scale 1)
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { TERMINAL_STATUSES } from "../lib/schemas/common";

const base = (process.argv[2] ?? "http://127.0.0.1:3000").replace(/\/$/, "") + "/api/v1";
const scale = Number(process.argv[3] ?? 1);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "turnlens-bench-import-"));

interface Case {
  format: string;
  file: string;
  rows: number;
}

function verlDump(steps: number, samples: number): Case {
  const d = path.join(dir, "rollouts");
  fs.mkdirSync(d);
  for (let s = 1; s <= steps; s++) {
    const lines = Array.from({ length: samples }, (_, i) =>
      JSON.stringify({
        input: `Question ${Math.floor(i / 8)}: what is ${i % 97} + ${s}?`,
        output: `The answer is ${(i % 97) + s + (i % 3)}.`,
        gts: String((i % 97) + s),
        score: i % 3 === 0 ? 1 : 0,
        step: s,
        acc: i % 3 === 0 ? 1 : 0,
      }),
    );
    fs.writeFileSync(path.join(d, `${s}.jsonl`), lines.join("\n") + "\n");
  }
  const file = path.join(dir, "rollouts.tar.gz");
  execFileSync("tar", ["-czf", file, "-C", dir, "rollouts"]);
  return { format: "verl", file, rows: steps * samples };
}

function metricsJsonl(lines: number, keys: number): Case {
  const file = path.join(dir, "metrics.jsonl");
  const out = [JSON.stringify({ type: "run", name: "bench-import-metrics" })];
  for (let s = 0; s < lines; s++)
    out.push(
      JSON.stringify({ type: "metrics", step: s, values: Object.fromEntries(Array.from({ length: keys }, (_, k) => [`train/k${k}`, Math.sin(s + k)])) }),
    );
  fs.writeFileSync(file, out.join("\n") + "\n");
  return { format: "jsonl", file, rows: lines * keys };
}

async function importOnce(c: Case) {
  const bytes = fs.readFileSync(c.file);
  const q = new URLSearchParams({ format: c.format, project: "bench-import", filename: path.basename(c.file) });
  const t0 = performance.now();
  const res = await fetch(`${base}/imports?${q}`, { method: "POST", headers: { "content-type": "application/octet-stream" }, body: bytes });
  if (res.status !== 201) throw new Error(`upload: HTTP ${res.status} ${await res.text()}`);
  const { id } = (await res.json()) as { id: string };
  const tUploaded = performance.now();
  for (;;) {
    const imp = (await (await fetch(`${base}/imports/${id}`)).json()) as {
      job: { status: string; error: string | null };
      report: { imported: number; alreadyPresent: number; rejected: number } | null;
    };
    if ((TERMINAL_STATUSES as readonly string[]).includes(imp.job.status)) {
      if (imp.job.status !== "succeeded") throw new Error(`import ${imp.job.status}: ${imp.job.error}`);
      const total = (performance.now() - t0) / 1000;
      const log = ((await (await fetch(`${base}/jobs/${id}/log?limit=5000`)).json()) as { lines: { time: number; line: string }[] }).lines;
      const at = (prefix: string) => log.find((l) => l.line.startsWith(prefix))?.time ?? NaN;
      const start = at("import ");
      const read = at("import: read ");
      const done = at("done: ");
      return { id, mb: bytes.length / 1e6, upload: (tUploaded - t0) / 1000, total, readS: read - start, storeS: done - read, report: imp.report! };
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

const cases = [verlDump(Math.round(20 * scale), 1024), metricsJsonl(Math.round(5000 * scale), 100)];
console.log(`import bench against ${base} (scale ${scale})`);
console.log("| upload | MB | rows | upload s | upload -> done s | read s (Python) | store s (ingest) | rows/s end to end |");
console.log("| --- | --- | --- | --- | --- | --- | --- | --- |");
for (const c of cases) {
  for (const round of ["first", "again"]) {
    const r = await importOnce(c);
    const rows = round === "first" ? r.report.imported : r.report.alreadyPresent;
    if (rows !== c.rows) throw new Error(`${c.format} ${round}: expected ${c.rows} rows, report says ${JSON.stringify(r.report)}`);
    console.log(
      `| ${c.format} ${path.basename(c.file)} (${round === "first" ? "new" : "same upload again"}) | ${r.mb.toFixed(1)} | ${rows} | ${r.upload.toFixed(2)} | ${r.total.toFixed(2)} | ${r.readS.toFixed(2)} | ${r.storeS.toFixed(2)} | ${Math.round(rows / r.total)} |`,
    );
  }
}
fs.rmSync(dir, { recursive: true, force: true });
