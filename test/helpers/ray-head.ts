// A local Ray head for the Ray tests (ray[default] from node_modules/.turnlens-ray-venv, which
// scripts/test.sh installs, or TURNLENS_RAY_BIN): on loopback, on free ports, in a short temp dir,
// started and stopped by the test; its Jobs API client.
import { execFileSync, spawnSync } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { RayJobsClient } from "../../workers/ray/jobs-api";
import { ROOT } from "./temp-db";
import { waitFor } from "./workers";

export const RAY = process.env.TURNLENS_RAY_BIN ?? path.join(ROOT, "node_modules/.turnlens-ray-venv/bin/ray");
export const haveRay = fs.existsSync(RAY);

const taken = new Set<number>();
/**
 * A free TCP port for the head, drawn from 20000-32767: below the kernel's ephemeral range (where
 * Ray's own port-0 listeners could take it first) and above Ray's worker ports (10002-19999).
 */
async function freePort(): Promise<number> {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 12_768);
    if (taken.has(port)) continue;
    const free = await new Promise<boolean>((resolve) => {
      const s = net.createServer();
      s.once("error", () => resolve(false));
      s.listen(port, "0.0.0.0", () => s.close(() => resolve(true)));
    });
    if (free) {
      taken.add(port);
      return port;
    }
  }
}

/** pids whose command line matches `pattern` (children of `parent` only, when given). */
export function pgrep(pattern: string, parent?: number): number[] {
  try {
    return execFileSync("pgrep", [...(parent ? ["-P", String(parent)] : []), "-f", pattern])
      .toString()
      .trim()
      .split("\n")
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
}

export class RayHead {
  readonly address: string;
  readonly api: RayJobsClient;

  private constructor(
    readonly tempDir: string,
    private readonly ports: { gcs: number; dashboard: number; client: number; agent: number },
  ) {
    this.address = `http://127.0.0.1:${ports.dashboard}`;
    this.api = new RayJobsClient(this.address);
  }

  /** A new head with `cpus` CPUs, its Jobs API answering. */
  static async start(cpus = 2): Promise<RayHead> {
    // A short temp dir: Ray's Unix socket paths must stay under 107 characters.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tlray-"));
    const head = new RayHead(dir, { gcs: await freePort(), dashboard: await freePort(), client: await freePort(), agent: await freePort() });
    head.cpus = cpus;
    await head.startAgain();
    return head;
  }

  private cpus = 2;

  /** Starts the head on its ports (again after a `ray stop`: same addresses) and waits for its Jobs API. */
  async startAgain(): Promise<void> {
    const { ports, tempDir } = this;
    const r = spawnSync(
      RAY,
      [
        "start",
        "--head",
        "--node-ip-address=127.0.0.1",
        `--port=${ports.gcs}`,
        "--dashboard-host=127.0.0.1",
        `--dashboard-port=${ports.dashboard}`,
        `--ray-client-server-port=${ports.client}`,
        `--dashboard-agent-listen-port=${ports.agent}`,
        `--num-cpus=${this.cpus}`,
        "--disable-usage-stats",
        `--temp-dir=${tempDir}`,
      ],
      { encoding: "utf8", timeout: 120_000 },
    );
    if (r.status !== 0) throw new Error(`ray start failed (${r.status}): ${r.stdout}\n${r.stderr}`);
    let last: unknown = null;
    try {
      await waitFor(
        "the Ray Jobs API",
        () =>
          this.api.list().then(
            () => true,
            (e) => {
              last = e;
              return false;
            },
          ),
        120_000,
        500,
      );
    } catch (e) {
      const log = path.join(tempDir, "session_latest/logs/dashboard.log");
      const tail = fs.existsSync(log) ? fs.readFileSync(log, "utf8").split("\n").slice(-15).join("\n") : "(no dashboard.log)";
      throw new Error(`${(e as Error).message}; last error: ${last instanceof Error ? last.message : String(last)}\ndashboard.log:\n${tail}`);
    }
  }

  /** `ray stop --force`, then waits until nothing of this head runs, and removes its temp dir. */
  async stop(): Promise<void> {
    execFileSync(RAY, ["stop", "--force"], { stdio: "pipe", timeout: 60_000 });
    await waitFor("the Ray head's processes to exit", () => pgrep(this.tempDir).length === 0, 20_000, 200);
    fs.rmSync(this.tempDir, { recursive: true, force: true });
  }
}
