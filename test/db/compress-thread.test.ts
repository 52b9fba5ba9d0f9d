// A step packed with its text streams compressed on the compression thread (what ingest does) is
// byte for byte the step packed on one thread, hash included.
import { describe, expect, it } from "vitest";
import { packStep, packStepWith } from "@/lib/db/rollouts";
import { compressOnThread } from "@/lib/ingest/compress-thread";
import { rolloutStepInputSchema } from "@/lib/schemas/rollouts";
import { realisticStep } from "../../scripts/realistic-workload";

describe("the compression thread", () => {
  it("packs a step to the same bytes as packing it on one thread", async () => {
    for (const [step, tokens] of [
      [3, 0],
      [4, 16],
    ]) {
      const input = rolloutStepInputSchema.parse(await realisticStep(step, 10, tokens));
      let n = 0;
      const ids = () => `id-${n++}`;
      const here = packStep(input, ids);
      n = 0;
      const there = await packStepWith(input, compressOnThread, ids);
      expect(there.hash).toBe(here.hash);
      expect(there.groups.length).toBe(input.groups.length);
      for (const [g, group] of here.groups.entries()) {
        for (const col of ["turnData", "turnTexts", "turnTokens"] as const)
          expect(there.groups[g][col].map((b) => b && Buffer.from(b).toString("base64"))).toEqual(
            group[col].map((b) => b && Buffer.from(b).toString("base64")),
          );
      }
    }
  }, 60_000);
});
