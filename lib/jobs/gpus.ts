// GPUs of this machine and which running job holds which. The worker gives each job a free GPU
// (CUDA_VISIBLE_DEVICES for its engine process) and the CPU when none is free or none exists.
import { execFileSync } from "node:child_process";

/**
 * GPU ids to hand out: TURNLENS_GPUS ("0,1", or "none"), else what `nvidia-smi -L` lists, else none.
 * Never throws: a machine without the NVIDIA driver simply has no GPUs.
 */
export function detectGpus(env: Record<string, string | undefined> = process.env, smi: () => string = nvidiaSmiList): string[] {
  const set = env.TURNLENS_GPUS?.trim();
  if (set)
    return set === "none"
      ? []
      : set
          .split(",")
          .map((s) => s.trim())
          .filter(Boolean);
  try {
    return parseNvidiaSmiList(smi());
  } catch {
    return [];
  }
}

function nvidiaSmiList(): string {
  return execFileSync("nvidia-smi", ["-L"], { encoding: "utf8", timeout: 5_000, stdio: ["ignore", "pipe", "ignore"] });
}

/** `GPU 0: NVIDIA A100 (UUID: GPU-…)` lines -> ["0", ...] */
export function parseNvidiaSmiList(text: string): string[] {
  return [...text.matchAll(/^GPU (\d+):/gm)].map((m) => m[1]);
}

/** Free/held bookkeeping: one GPU per job, or as many as a trainer template asks for. */
export class GpuPool {
  private readonly free: string[];
  private readonly held = new Map<string, string[]>();

  constructor(gpus: string[]) {
    this.free = [...gpus];
  }

  get size(): number {
    return this.free.length + [...this.held.values()].reduce((n, g) => n + g.length, 0);
  }

  /** Up to `count` free GPUs for the job, comma-separated as CUDA_VISIBLE_DEVICES takes them, or null (run on CPU). */
  acquire(jobId: string, count = 1): string | null {
    const gpus = this.free.splice(0, Math.max(0, count));
    if (!gpus.length) return null;
    this.held.set(jobId, gpus);
    return gpus.join(",");
  }

  release(jobId: string): void {
    const gpus = this.held.get(jobId);
    if (gpus === undefined) return;
    this.held.delete(jobId);
    this.free.push(...gpus);
    this.free.sort((a, b) => Number(a) - Number(b));
  }
}
