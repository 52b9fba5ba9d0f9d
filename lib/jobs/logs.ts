// Job logs in the JobLog table, so any API server can tail any worker's job.
// seq is 1, 2, 3, ... per job. Negative seqs are reserved for runner bookkeeping rows (the selftest
// runner's step markers) and are never returned by tailLog.
import { getDb, type Db } from "../db/client";
import { JobNotFoundError } from "./errors";

export type LogLevel = "info" | "warn" | "error";

export interface LogLineInput {
  line: string;
  level?: LogLevel;
  /** epoch seconds (default: now) */
  time?: number;
}

export interface JobLogLine {
  seq: number;
  time: number;
  level: string;
  line: string;
}

const MAX_LINE_CHARS = 8_000;
// Rows per INSERT: 5 parameters a row stays well under SQLite's bound-parameter limit, so each
// chunk is a single atomic statement (a retry after a seq collision never duplicates lines).
const CHUNK = 150;

function prismaCode(e: unknown): string | undefined {
  return typeof e === "object" && e !== null ? ((e as { code?: string }).code ?? undefined) : undefined;
}

/**
 * Appends lines to a job's log in as few INSERTs as possible (one per 150 lines); returns the last
 * seq written (0 if none). Concurrent appenders to one job are serialised by the (jobId, seq) key:
 * the loser of a collision re-reads the tail and tries again.
 */
export async function appendLog(jobId: string, lines: ReadonlyArray<string | LogLineInput>, opts: { db?: Db } = {}): Promise<number> {
  const db = opts.db ?? getDb();
  const now = Date.now() / 1000;
  const rows = lines.map((l) => {
    const o = typeof l === "string" ? { line: l } : l;
    const line = o.line.length > MAX_LINE_CHARS ? o.line.slice(0, MAX_LINE_CHARS - 1) + "…" : o.line;
    return { line, level: o.level ?? "info", time: o.time ?? now };
  });
  let last = 0;
  for (let start = 0; start < rows.length; start += CHUNK) {
    const chunk = rows.slice(start, start + CHUNK);
    for (let attempt = 0; ; attempt++) {
      const agg = await db.jobLog.aggregate({ where: { jobId, seq: { gt: 0 } }, _max: { seq: true } });
      const base = agg._max.seq ?? 0;
      try {
        await db.jobLog.createMany({ data: chunk.map((r, i) => ({ jobId, seq: base + 1 + i, ...r })) });
        last = base + chunk.length;
        break;
      } catch (e) {
        const code = prismaCode(e);
        if (code === "P2003") throw new JobNotFoundError(jobId);
        if (code !== "P2002" || attempt >= 20) throw e;
        await new Promise((r) => setTimeout(r, Math.random() * 20));
      }
    }
  }
  return last;
}

/** Lines after `afterSeq` (exclusive), oldest first; pass the returned lastSeq back to poll for more. */
export async function tailLog(jobId: string, afterSeq = 0, limit = 500, opts: { db?: Db } = {}): Promise<{ lines: JobLogLine[]; lastSeq: number }> {
  const db = opts.db ?? getDb();
  const take = Math.max(1, Math.min(5_000, Math.floor(limit)));
  const lines = await db.jobLog.findMany({
    where: { jobId, seq: { gt: Math.max(0, Math.floor(afterSeq)) } },
    orderBy: { seq: "asc" },
    take,
    select: { seq: true, time: true, level: true, line: true },
  });
  return { lines, lastSeq: lines.length ? lines[lines.length - 1].seq : Math.max(0, afterSeq) };
}

/**
 * A worker's per-job log: lines are buffered and written in batches (every `flushMs` or every
 * `maxBatch` lines), in order, by one writer. A failed write is reported through `echo` and dropped
 * (logs must never fail a job).
 */
export class JobLogBuffer {
  private pending: LogLineInput[] = [];
  private timer: NodeJS.Timeout | undefined;
  private chain: Promise<void> = Promise.resolve();

  constructor(
    readonly jobId: string,
    private readonly opts: { db?: Db; flushMs?: number; maxBatch?: number; echo?: (level: LogLevel, line: string) => void } = {},
  ) {}

  log(text: string, level: LogLevel = "info"): void {
    const time = Date.now() / 1000;
    for (const line of String(text).split("\n")) {
      this.pending.push({ line, level, time });
      this.opts.echo?.(level, line);
    }
    if (this.pending.length >= (this.opts.maxBatch ?? 200)) void this.flush();
    else if (!this.timer) {
      this.timer = setTimeout(() => void this.flush(), this.opts.flushMs ?? 250);
      this.timer.unref?.();
    }
  }

  /** Writes what is buffered; resolves when every line logged so far is stored (or dropped). */
  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.pending.splice(0);
    if (batch.length > 0) {
      this.chain = this.chain.then(async () => {
        try {
          await appendLog(this.jobId, batch, { db: this.opts.db });
        } catch (e) {
          this.opts.echo?.("warn", `(${batch.length} log line(s) not stored: ${(e as Error).message})`);
        }
      });
    }
    return this.chain;
  }
}
