// serve.sh's start check (scripts/check-serve-config.ts) refuses a bad value of a setting that is
// otherwise read per request, naming it, before the server starts: a bad one would fail every
// request it governs with a 500.
import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";

const check = (env: Record<string, string>) =>
  spawnSync(process.execPath, ["--import", "tsx", "scripts/check-serve-config.ts"], {
    env: { ...process.env, TURNLENS_HOST: "127.0.0.1", ...env },
    encoding: "utf8",
  });

describe("serve.sh's start check", () => {
  it.each([
    ["TURNLENS_MAX_STEP_PARTS_MB", "500", "TURNLENS_MAX_STEP_PARTS_MB must be a number of MB above 0 and at most 400"],
    ["TURNLENS_MAX_STEP_PARTS_MB", "lots", "TURNLENS_MAX_STEP_PARTS_MB must be a number of MB above 0 and at most 400"],
    ["TURNLENS_STEP_PARTS_TTL_HOURS", "0", "TURNLENS_STEP_PARTS_TTL_HOURS must be a number of hours above 0"],
    ["TURNLENS_BODY_TIMEOUT_MS", "1.5s", "TURNLENS_BODY_TIMEOUT_MS must be a whole number of milliseconds above 0"],
  ])("refuses %s=%s naming it", (name, value, message) => {
    const r = check({ [name]: value });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(message);
  });

  it("passes good values", () => {
    expect(check({ TURNLENS_MAX_STEP_PARTS_MB: "100", TURNLENS_STEP_PARTS_TTL_HOURS: "2", TURNLENS_BODY_TIMEOUT_MS: "2000" }).status).toBe(0);
  });
});
