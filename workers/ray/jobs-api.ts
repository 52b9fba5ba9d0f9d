// A small client of Ray's Jobs REST API (served by the Ray dashboard on the head node), plain HTTP:
// no Ray Python API in the worker. Endpoints (Ray 2.60): POST /api/jobs/, GET /api/jobs/{id},
// GET /api/jobs/{id}/logs, POST /api/jobs/{id}/stop, GET /api/jobs/.
import http from "node:http";
import https from "node:https";
import { z } from "zod";

export const RAY_TERMINAL = ["SUCCEEDED", "FAILED", "STOPPED"] as const;
export type RayJobStatus = "PENDING" | "RUNNING" | (typeof RAY_TERMINAL)[number];

const JobDetailsSchema = z
  .object({
    submission_id: z.string().nullable().optional(),
    status: z.enum(["PENDING", "RUNNING", "SUCCEEDED", "FAILED", "STOPPED"]),
    message: z.string().nullable().optional(),
    driver_exit_code: z.number().int().nullable().optional(),
    metadata: z.record(z.string(), z.string()).nullable().optional(),
  })
  .loose();
export type RayJobDetails = z.infer<typeof JobDetailsSchema>;

export interface RaySubmitRequest {
  entrypoint: string;
  submission_id: string;
  runtime_env?: { env_vars?: Record<string, string> };
  metadata?: Record<string, string>;
  entrypoint_num_cpus?: number;
  entrypoint_num_gpus?: number;
}

/** The Jobs API answered with an error status, or could not be reached. */
export class RayApiError extends Error {
  constructor(
    message: string,
    /** HTTP status; null when the server could not be reached */
    readonly status: number | null,
  ) {
    super(message);
    this.name = "RayApiError";
  }
}

export const isTerminal = (s: RayJobStatus) => (RAY_TERMINAL as readonly string[]).includes(s);

export class RayJobsClient {
  /** `address`: the dashboard's base URL, e.g. http://127.0.0.1:8265 */
  constructor(
    readonly address: string,
    /** per request; generous: a loaded head can take seconds to accept a job */
    private readonly timeoutMs = 30_000,
  ) {}

  // node:http, not fetch: fetch sends Sec-Fetch-Mode, and Ray's dashboard refuses POSTs it takes for a browser's.
  private call(method: "GET" | "POST", path: string, body?: unknown): Promise<{ status: number; text: string }> {
    const url = new URL(path, this.address);
    const data = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    return new Promise((resolve, reject) => {
      const req = (url.protocol === "https:" ? https : http).request(
        url,
        {
          method,
          headers: { accept: "application/json", ...(data ? { "content-type": "application/json", "content-length": data.length } : {}) },
          timeout: this.timeoutMs,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.on("end", () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString("utf8") }));
          res.on("error", (e) => reject(this.unreachable(method, path, e)));
        },
      );
      req.on("timeout", () => req.destroy(new Error(`no answer within ${this.timeoutMs} ms`)));
      req.on("error", (e) => reject(this.unreachable(method, path, e)));
      req.end(data);
    });
  }

  private unreachable(method: string, path: string, e: Error): RayApiError {
    return new RayApiError(`Ray Jobs API at ${this.address} unreachable (${method} ${path}): ${e.message}`, null);
  }

  private fail(what: string, r: { status: number; text: string }): never {
    throw new RayApiError(`Ray Jobs API ${what}: HTTP ${r.status}: ${r.text.trim().split("\n").slice(-3).join(" | ").slice(0, 600)}`, r.status);
  }

  /** Submits a job; returns its submission id. */
  async submit(req: RaySubmitRequest): Promise<string> {
    const r = await this.call("POST", "/api/jobs/", req);
    if (r.status !== 200) this.fail(`submit ${req.submission_id}`, r);
    return z.object({ submission_id: z.string() }).loose().parse(JSON.parse(r.text)).submission_id;
  }

  /** The job's details, or null when the cluster does not know it (e.g. a restarted head). */
  async details(id: string): Promise<RayJobDetails | null> {
    const r = await this.call("GET", `/api/jobs/${encodeURIComponent(id)}`);
    if (r.status === 404) return null;
    if (r.status !== 200) this.fail(`status of ${id}`, r);
    return JobDetailsSchema.parse(JSON.parse(r.text));
  }

  /** The job's whole log so far (driver stdout and stderr). */
  async logs(id: string): Promise<string> {
    const r = await this.call("GET", `/api/jobs/${encodeURIComponent(id)}/logs`);
    if (r.status === 404) return "";
    if (r.status !== 200) this.fail(`logs of ${id}`, r);
    return z.object({ logs: z.string() }).loose().parse(JSON.parse(r.text)).logs;
  }

  /** Asks Ray to stop the job (SIGTERM to its processes, SIGKILL after RAY_JOB_STOP_WAIT_TIME_S); false if it had already ended. */
  async stop(id: string): Promise<boolean> {
    const r = await this.call("POST", `/api/jobs/${encodeURIComponent(id)}/stop`);
    if (r.status === 404) return false;
    if (r.status !== 200) this.fail(`stop ${id}`, r);
    return z.object({ stopped: z.boolean() }).loose().parse(JSON.parse(r.text)).stopped;
  }

  /** Every submission the cluster knows. */
  async list(): Promise<RayJobDetails[]> {
    const r = await this.call("GET", "/api/jobs/");
    if (r.status !== 200) this.fail("list", r);
    return z.array(JobDetailsSchema).parse(JSON.parse(r.text));
  }
}
