// Job logs in the JobLog table, so any API server can tail any worker's job.
// seq is 1, 2, 3, ... per job. Negative seqs are reserved for runner bookkeeping rows (the selftest
// runner's step markers) and are never returned by tailLog.
import { insertJobLogLines, jobLogLinesAfter } from "../db/job-logs";
import type { RawDb } from "../db/raw";
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

/**
 * Appends lines to a job's log in one write transaction; returns the last seq written (0 if none).
 * Concurrent appenders to one job (any process) are serialised by the store's write lock, so a
 * call's lines get consecutive seqs. JobNotFoundError when the job does not exist.
 */
export async function appendLog(jobId: string, lines: ReadonlyArray<string | LogLineInput>, opts: { db?: RawDb } = {}): Promise<number> {
  if (lines.length === 0) return 0;
  const now = Date.now() / 1000;
  const rows = lines.map((l) => {
    const o = typeof l === "string" ? { line: l } : l;
    const line = o.line.length > MAX_LINE_CHARS ? o.line.slice(0, MAX_LINE_CHARS - 1) + "…" : o.line;
    return { line, level: o.level ?? "info", time: o.time ?? now };
  });
  const last = insertJobLogLines(jobId, rows, opts.db);
  if (last === null) throw new JobNotFoundError(jobId);
  return last;
}

/** Lines after `afterSeq` (exclusive), oldest first; pass the returned lastSeq back to poll for more. */
export async function tailLog(jobId: string, afterSeq = 0, limit = 500, opts: { db?: RawDb } = {}): Promise<{ lines: JobLogLine[]; lastSeq: number }> {
  const take = Math.max(1, Math.min(5_000, Math.floor(limit)));
  const lines = jobLogLinesAfter(jobId, Math.floor(afterSeq), take, opts.db);
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
    private readonly opts: { db?: RawDb; flushMs?: number; maxBatch?: number; echo?: (level: LogLevel, line: string) => void } = {},
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
