import { describe, expect, it } from "vitest";
import { detectGpus, GpuPool, parseNvidiaSmiList } from "../../lib/jobs/gpus";

describe("GPU assignment", () => {
  it("reads nvidia-smi -L, TURNLENS_GPUS, and treats a missing driver as no GPU", () => {
    const smi = "GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-1)\nGPU 1: NVIDIA A100-SXM4-80GB (UUID: GPU-2)\n";
    expect(parseNvidiaSmiList(smi)).toEqual(["0", "1"]);
    expect(detectGpus({}, () => smi)).toEqual(["0", "1"]);
    expect(detectGpus({ TURNLENS_GPUS: "2,3" }, () => smi)).toEqual(["2", "3"]);
    expect(detectGpus({ TURNLENS_GPUS: "none" }, () => smi)).toEqual([]);
    expect(
      detectGpus({}, () => {
        throw new Error("spawn nvidia-smi ENOENT");
      }),
    ).toEqual([]);
  });

  it("gives each job its own GPU and the CPU when none is free", () => {
    const pool = new GpuPool(["0", "1"]);
    expect(pool.acquire("a")).toBe("0");
    expect(pool.acquire("b")).toBe("1");
    expect(pool.acquire("c")).toBeNull();
    pool.release("a");
    pool.release("c"); // held nothing: no-op
    expect(pool.acquire("d")).toBe("0");
    expect(pool.size).toBe(2);
  });

  it("gives a trainer job as many GPUs as its template asks for, as far as they are free, and none for 0", () => {
    const pool = new GpuPool(["0", "1", "2"]);
    expect(pool.acquire("none", 0)).toBeNull();
    expect(pool.acquire("a", 2)).toBe("0,1");
    expect(pool.acquire("b", 2)).toBe("2");
    expect(pool.acquire("c")).toBeNull();
    pool.release("a");
    expect(pool.acquire("d", 8)).toBe("0,1");
    expect(pool.size).toBe(3);
  });
});
