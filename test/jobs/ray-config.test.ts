// The worker's Ray settings and what a train config asks of Ray (workers/ray): pure, no cluster.
import { describe, expect, it } from "vitest";
import { rayConfig } from "../../workers/ray/config";
import { parseLine, formatLine, RESULT_MARK } from "../../workers/ray/protocol";
import { rayResources } from "../../workers/ray/supervise";

const defaults = { root: "/srv/turnlens", node: "/usr/bin/node" };

describe("Ray worker settings", () => {
  it("is off without TURNLENS_RAY_ADDRESS, and takes a bare host:port as http", () => {
    expect(rayConfig({}, defaults)).toBeNull();
    expect(rayConfig({ TURNLENS_RAY_ADDRESS: "  " }, defaults)).toBeNull();
    const c = rayConfig({ TURNLENS_RAY_ADDRESS: "127.0.0.1:8265" }, defaults)!;
    expect(c).toEqual({
      address: "http://127.0.0.1:8265",
      resubmits: 3,
      pollMs: 1000,
      unreachableMs: 60_000,
      root: "/srv/turnlens",
      node: "/usr/bin/node",
      autoGpus: 0,
    });
    expect(rayConfig({ TURNLENS_RAY_ADDRESS: "https://ray.lab:8265/", TURNLENS_RAY_RESUBMITS: "0", TURNLENS_RAY_ROOT: "/nfs/tl" }, defaults)).toMatchObject({
      address: "https://ray.lab:8265",
      resubmits: 0,
      root: "/nfs/tl",
    });
  });

  it("names the variable of a bad value", () => {
    expect(() => rayConfig({ TURNLENS_RAY_ADDRESS: "ray://head:10001" }, defaults)).toThrow(/TURNLENS_RAY_ADDRESS/);
    expect(() => rayConfig({ TURNLENS_RAY_ADDRESS: "127.0.0.1:8265", TURNLENS_RAY_POLL_MS: "fast" }, defaults)).toThrow(/TURNLENS_RAY_POLL_MS/);
    expect(() => rayConfig({ TURNLENS_RAY_ADDRESS: "127.0.0.1:8265", TURNLENS_RAY_RESUBMITS: "-1" }, defaults)).toThrow(/TURNLENS_RAY_RESUBMITS/);
  });
});

describe("Ray entrypoint resources", () => {
  it("asks for the config's torch threads as CPUs and a GPU as its device says", () => {
    expect(rayResources({ device: "cpu", threads: 4 }, { autoGpus: 1 })).toEqual({ entrypoint_num_cpus: 4, entrypoint_num_gpus: 0 });
    expect(rayResources({ device: "cuda" }, { autoGpus: 0 })).toEqual({ entrypoint_num_cpus: 1, entrypoint_num_gpus: 1 });
    expect(rayResources({ threads: null }, { autoGpus: 0.5 })).toEqual({ entrypoint_num_cpus: 1, entrypoint_num_gpus: 0.5 });
    expect(() => rayResources({ device: "tpu" }, { autoGpus: 0 })).toThrow(/device/);
  });
});

describe("Ray log lines", () => {
  it("round-trips levels and reads the result line", () => {
    for (const level of ["info", "warn", "error"] as const) expect(parseLine(formatLine(level, "step 1/6: ok"))).toEqual({ level, line: "step 1/6: ok" });
    expect(parseLine(`${RESULT_MARK}{"ok":true,"value":{"steps":6}}`)).toEqual({ result: { ok: true, value: { steps: 6 } } });
    expect(() => parseLine(`${RESULT_MARK}{not json`)).toThrow();
  });
});
