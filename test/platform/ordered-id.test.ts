// Time-ordered row ids (lib/db/ids.ts): unique, valid UUIDv7, and sorted in the order they were made.
import { describe, expect, it } from "vitest";
import { orderedId } from "@/lib/db/ids";
import { idSchema } from "@/lib/schemas/common";

describe("orderedId", () => {
  it("gives unique UUIDv7 ids that sort in creation order, also beyond 4,096 in one millisecond", () => {
    const ids = Array.from({ length: 20_000 }, () => orderedId());
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual(ids);
    for (const id of ids.slice(0, 50)) {
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(idSchema.safeParse(id).success).toBe(true);
    }
    // the timestamp is the clock's (give or take the milliseconds borrowed above)
    const ms = parseInt(orderedId().replace(/-/g, "").slice(0, 12), 16);
    expect(Math.abs(ms - Date.now())).toBeLessThan(60_000);
  });
});
