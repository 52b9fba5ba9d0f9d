// What a Ray job's entrypoint (workers/ray/entry.ts) prints and the worker (workers/ray/supervise.ts)
// reads back from the Ray job's log: plain lines (warn and error lines marked), then one result line.
import type { LogLevel } from "../../lib/jobs/logs";

/** Prefix of the entrypoint's last line: the runner's outcome as JSON. */
export const RESULT_MARK = "@@turnlens-result ";

export type EntryResult = { ok: true; value: unknown } | { ok: false; message: string; stack: string | null; retryable: boolean };

const LEVEL_MARK = /^\[(warn|error)\] /;

/** One log line as the entrypoint prints it. */
export function formatLine(level: LogLevel, line: string): string {
  return level === "info" ? line : `[${level}] ${line}`;
}

/** A Ray log line back to a job log line: its level, or the runner's result. */
export function parseLine(raw: string): { result: EntryResult } | { level: LogLevel; line: string } {
  if (raw.startsWith(RESULT_MARK)) return { result: JSON.parse(raw.slice(RESULT_MARK.length)) as EntryResult };
  const m = LEVEL_MARK.exec(raw);
  return m ? { level: m[1] as LogLevel, line: raw.slice(m[0].length) } : { level: "info", line: raw };
}
