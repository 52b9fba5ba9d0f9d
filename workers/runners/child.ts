// A runner's child program (the Python importer, a trainer's command): argv without a shell, its
// stdout and stderr into the job log line by line as they come, stopped when the job is.
// Not detached: the child stays in the job process's group, which the worker SIGKILLs as a whole
// when the runner does not return within the stop grace, and again after every job process exit,
// so nothing the child started outlives the job.
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import type { JobContext } from "./types";

export interface ChildRun {
  command: string;
  args: string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** sent to the child when the job is stopped (the worker's group SIGKILL follows after the grace) */
  stopSignal: NodeJS.Signals;
  /** each output line; default: into the job log as is */
  onLine?: (line: string) => void;
}

export interface ChildExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** the job was stopped while the child ran */
  stopped: boolean;
}

/** Runs the child to its end; rejects only when it cannot be started (ENOENT, EACCES). */
export function runChild(ctx: JobContext, c: ChildRun): Promise<ChildExit> {
  const child = spawn(c.command, c.args, { cwd: c.cwd, env: c.env, stdio: ["ignore", "pipe", "pipe"] });
  const stop = () => child.kill(c.stopSignal);
  ctx.signal.addEventListener("abort", stop, { once: true });
  const onLine = c.onLine ?? ((line: string) => ctx.log(line));
  createInterface({ input: child.stdout }).on("line", onLine);
  createInterface({ input: child.stderr }).on("line", onLine);
  return new Promise((resolve, reject) => {
    child.on("error", (e) => {
      ctx.signal.removeEventListener("abort", stop);
      reject(e);
    });
    // 'close': the process exited and its output is read to the end
    child.on("close", (code, signal) => {
      ctx.signal.removeEventListener("abort", stop);
      resolve({ code, signal, stopped: ctx.signal.aborted });
    });
  });
}
