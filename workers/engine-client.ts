// Typed client of the Python training engine (workers/engine, protocol in workers/engine/PROTOCOL.md).
//
//   const engine = new EngineClient({ onLog: (line) => console.error(line) });
//   await engine.init({ model: "tiny", tokenizer: { kind: "word", corpus }, threads: 1 });
//   const { responses } = await engine.generate({ prompts, n: 16, allowed: ["left", "right"] });
//   await engine.update({ samples, epochs: 2 });
//   await engine.close();
//
// It spawns `python3 -m workers.engine` (the interpreter from TURNLENS_PYTHON when set), with the
// repository root as working directory and on PYTHONPATH. One JSON request per line goes to stdin;
// responses are matched by id and their `result` is validated with zod (the protocol's schemas,
// lib/schemas/engine.ts), so malformed engine output becomes an error naming the offending field
// instead of a hang. Every request has a timeout: when
// it fires the request rejects and the process is killed (its state is unknown from then on), and
// every other pending request rejects too. The engine's stderr lines go to `onLog`. When the
// process exits, pending requests reject with the exit code, signal and the last stderr lines.
//
// Field names are the protocol's (snake_case) so that a request here reads like PROTOCOL.md.
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import path from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { z } from "zod";
import {
  resultSchemas,
  type EngineCommand,
  type EngineParams,
  type EngineResult,
  type GenerateParams,
  type InitParams,
  type LogprobsParams,
  type UpdateParams,
} from "../lib/schemas/engine";

// The protocol's schemas and types, for the client's callers.
export * from "../lib/schemas/engine";

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------

/** The engine answered `ok: false` (the process is fine and keeps serving). */
export class EngineRequestError extends Error {
  constructor(
    readonly cmd: string,
    readonly id: number,
    /** The engine's error type: ParseError, InvalidRequest, UnknownCommand, NotInitialized, OutOfMemory, InternalError. */
    readonly type: string,
    readonly engineMessage: string,
  ) {
    super(`engine ${cmd} (id ${id}) failed: ${type}: ${engineMessage}`);
    this.name = "EngineRequestError";
  }
}

/** A request did not complete in time; the engine process has been killed. */
export class EngineTimeoutError extends Error {
  constructor(
    readonly cmd: string,
    readonly id: number,
    readonly timeoutMs: number,
  ) {
    super(`engine ${cmd} (id ${id}) timed out after ${timeoutMs} ms; the engine process was killed`);
    this.name = "EngineTimeoutError";
  }
}

/** The engine printed something that is not a protocol response, or a result of the wrong shape. */
export class EngineProtocolError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "EngineProtocolError";
  }
}

/** The engine process is gone (exited, killed, or never started). */
export class EngineExitedError extends Error {
  constructor(
    message: string,
    readonly code: number | null,
    readonly signal: NodeJS.Signals | null,
    readonly stderrTail: string[],
  ) {
    super(stderrTail.length ? `${message}\n--- engine stderr (last lines) ---\n${stderrTail.join("\n")}` : message);
    this.name = "EngineExitedError";
  }
}

// Every answer's envelope; its `result` is checked against the command's result schema.
const envelopeSchema = z.object({
  id: z.union([z.number().int(), z.string()]).nullable(),
  ok: z.boolean(),
  result: z.unknown().optional(),
  error: z.object({ type: z.string(), message: z.string() }).optional(),
});

// ---------------------------------------------------------------------------------------------
// Client
// ---------------------------------------------------------------------------------------------

export interface EngineClientOptions {
  /** Python interpreter; default: env TURNLENS_PYTHON, else "python3". */
  python?: string;
  /** Arguments after the interpreter; default ["-m", "workers.engine"]. */
  args?: string[];
  /** Working directory; default: the repository root (put on PYTHONPATH too). */
  cwd?: string;
  /** Extra environment for the engine process. */
  env?: Record<string, string | undefined>;
  /** Default per-request timeout in ms (default 600 000: a large update on CPU is slow). */
  timeoutMs?: number;
  /** Receives every stderr line of the engine (its logs). */
  onLog?: (line: string) => void;
  /** How many stderr lines to keep for exit errors (default 40). */
  stderrTailLines?: number;
}

export interface RequestOptions {
  /** Overrides the client's default timeout for this request. */
  timeoutMs?: number;
}

interface Pending {
  id: number;
  cmd: EngineCommand;
  resolve: (value: unknown) => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout;
}

const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/** Formats zod issues as "result.responses.0.logprobs: Invalid input: expected array". */
function describeIssues(error: z.ZodError, prefix: string): string {
  return error.issues
    .slice(0, 5)
    .map((i) => `${[prefix, ...i.path.map(String)].join(".")}: ${i.message}`)
    .join("; ");
}

export class EngineClient {
  readonly child: ChildProcessWithoutNullStreams;
  private readonly pending = new Map<number, Pending>();
  private readonly stderrTail: string[] = [];
  private readonly timeoutMs: number;
  private readonly tailLines: number;
  private nextId = 1;
  private exitError: EngineExitedError | null = null;
  /** Resolves when the engine process has exited (never rejects). */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  constructor(private readonly options: EngineClientOptions = {}) {
    this.timeoutMs = options.timeoutMs ?? 600_000;
    this.tailLines = options.stderrTailLines ?? 40;
    const python = options.python ?? process.env.TURNLENS_PYTHON ?? "python3";
    const args = options.args ?? ["-m", "workers.engine"];
    const pythonPath = [REPO_ROOT, process.env.PYTHONPATH].filter(Boolean).join(path.delimiter);
    this.child = spawn(python, args, {
      cwd: options.cwd ?? REPO_ROOT,
      env: { ...process.env, PYTHONUNBUFFERED: "1", PYTHONPATH: pythonPath, ...options.env },
      stdio: ["pipe", "pipe", "pipe"],
    });

    let resolveExited!: (v: { code: number | null; signal: NodeJS.Signals | null }) => void;
    this.exited = new Promise((r) => (resolveExited = r));

    createInterface({ input: this.child.stdout, crlfDelay: Infinity }).on("line", (line) => this.onLine(line));
    createInterface({ input: this.child.stderr, crlfDelay: Infinity }).on("line", (line) => {
      this.stderrTail.push(line);
      if (this.stderrTail.length > this.tailLines) this.stderrTail.shift();
      options.onLog?.(line);
    });
    this.child.stdin.on("error", () => {
      // EPIPE after the process died: the exit handler rejects what is pending.
    });
    this.child.on("error", (err) => {
      // spawn failure (e.g. ENOENT): no "exit" event follows
      this.fail(new EngineExitedError(`engine process could not start (${python}): ${err.message}`, null, null, []));
      resolveExited({ code: null, signal: null });
    });
    // "close" (not "exit"): stdout and stderr are drained by then, so a last response or log
    // line is delivered before pending requests are failed
    this.child.on("close", (code, signal) => {
      const how = signal ? `killed by ${signal}` : `exited with code ${code}`;
      this.fail(new EngineExitedError(`engine process ${how}`, code, signal, [...this.stderrTail]));
      resolveExited({ code, signal });
    });
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** True once the process has exited or was killed. */
  get closed(): boolean {
    return this.exitError !== null;
  }

  /** Sends one request; resolves with its validated result. */
  request<C extends EngineCommand>(cmd: C, params?: EngineParams[C], opts: RequestOptions = {}): Promise<EngineResult<C>> {
    if (this.exitError) return Promise.reject(this.exitError);
    const id = this.nextId++;
    const timeoutMs = opts.timeoutMs ?? this.timeoutMs;
    return new Promise<EngineResult<C>>((resolve, reject) => {
      const timer = setTimeout(() => {
        if (!this.pending.delete(id)) return;
        reject(new EngineTimeoutError(cmd, id, timeoutMs));
        this.fail(new EngineExitedError(`engine killed after ${cmd} (id ${id}) timed out`, null, "SIGKILL", [...this.stderrTail]));
        this.child.kill("SIGKILL");
      }, timeoutMs);
      this.pending.set(id, { id, cmd, resolve: resolve as (v: unknown) => void, reject, timer });
      const line = JSON.stringify(params === undefined ? { id, cmd } : { id, cmd, params }) + "\n";
      this.child.stdin.write(line);
    });
  }

  ping(opts?: RequestOptions) {
    return this.request("ping", undefined, opts);
  }
  info(opts?: RequestOptions) {
    return this.request("info", undefined, opts);
  }
  init(params: InitParams, opts?: RequestOptions) {
    return this.request("init", params, opts);
  }
  generate(params: GenerateParams, opts?: RequestOptions) {
    return this.request("generate", params, opts);
  }
  logprobs(params: LogprobsParams, opts?: RequestOptions) {
    return this.request("logprobs", params, opts);
  }
  update(params: UpdateParams, opts?: RequestOptions) {
    return this.request("update", params, opts);
  }
  save(params: EngineParams["save"], opts?: RequestOptions) {
    return this.request("save", params, opts);
  }
  load(params: EngineParams["load"], opts?: RequestOptions) {
    return this.request("load", params, opts);
  }
  exportOnnx(params: EngineParams["export_onnx"], opts?: RequestOptions) {
    return this.request("export_onnx", params, opts);
  }

  /** Asks the engine to exit; kills it if it has not exited within `graceMs`. */
  async close(graceMs = 10_000): Promise<void> {
    if (!this.exitError) {
      try {
        await this.request("shutdown", undefined, { timeoutMs: graceMs });
      } catch {
        // already dead, or timed out (and killed)
      }
    }
    const timer = setTimeout(() => this.child.kill("SIGKILL"), graceMs);
    await this.exited;
    clearTimeout(timer);
  }

  /** Kills the process now; pending requests reject with EngineExitedError. */
  kill(signal: NodeJS.Signals = "SIGKILL"): void {
    this.child.kill(signal);
  }

  // --- internals -----------------------------------------------------------------------------

  private onLine(line: string): void {
    if (!line.trim()) return;
    let raw: unknown;
    try {
      raw = JSON.parse(line);
    } catch {
      this.protocolFailure(`engine wrote a stdout line that is not JSON: ${JSON.stringify(line.slice(0, 200))}`);
      return;
    }
    const env = envelopeSchema.safeParse(raw);
    if (!env.success) {
      this.protocolFailure(`engine response envelope is malformed: ${describeIssues(env.error, "response")}`);
      return;
    }
    const { id, ok, result, error } = env.data;
    // id null: the engine could not read a request; responses come in order, so it is the oldest
    const entry = id === null ? this.pending.values().next().value : typeof id === "number" ? this.pending.get(id) : undefined;
    if (!entry) {
      this.options.onLog?.(`[engine-client] ignoring a response for unknown request id ${JSON.stringify(id)}`);
      return;
    }
    this.pending.delete(entry.id);
    clearTimeout(entry.timer);
    if (!ok) {
      const e = error ?? { type: "Unknown", message: "engine reported failure without an error object" };
      entry.reject(new EngineRequestError(entry.cmd, entry.id, e.type, e.message));
      return;
    }
    const parsed = resultSchemas[entry.cmd].safeParse(result);
    if (!parsed.success) {
      entry.reject(new EngineProtocolError(`engine response to ${entry.cmd} (id ${entry.id}) is malformed: ${describeIssues(parsed.error, "result")}`));
      return;
    }
    entry.resolve(parsed.data);
  }

  /** Unparseable output: the channel can no longer be trusted; fail everything and kill. */
  private protocolFailure(message: string): void {
    const err = new EngineProtocolError(message);
    for (const p of this.pending.values()) {
      clearTimeout(p.timer);
      p.reject(err);
    }
    this.pending.clear();
    this.fail(new EngineExitedError(`engine killed after a protocol error: ${message}`, null, "SIGKILL", [...this.stderrTail]));
    this.child.kill("SIGKILL");
  }

  private fail(err: EngineExitedError): void {
    if (!this.exitError) this.exitError = err;
    for (const p of this.pending.values()) {
      clearTimeout(p.timer);
      p.reject(err);
    }
    this.pending.clear();
  }
}
