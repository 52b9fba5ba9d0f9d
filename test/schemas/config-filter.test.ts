// The run list's config filter: what the documented pattern (OpenAPI) admits, the parser reads.
// Schemathesis found a schema-valid filter the parser refused (a line break in a text value).
import { describe, expect, it } from "vitest";
import { parseConfigFilter, runListQuerySchema } from "../../lib/schemas/runs";

describe("config filter", () => {
  it("reads clauses, numbers, booleans, null and quoted text", () => {
    expect(parseConfigFilter("lr<=1e-4; envConfig.size=6;tag~ab ;done=true;x=null;s='a b'")).toEqual([
      { path: ["lr"], op: "<=", value: 1e-4 },
      { path: ["envConfig", "size"], op: "=", value: 6 },
      { path: ["tag"], op: "~", value: "ab" },
      { path: ["done"], op: "=", value: true },
      { path: ["x"], op: "=", value: null },
      { path: ["s"], op: "=", value: "a b" },
    ]);
  });

  it("a text value may hold line breaks, as the documented pattern allows", () => {
    expect(parseConfigFilter("a=x\ny")).toEqual([{ path: ["a"], op: "=", value: "x\ny" }]);
    expect(runListQuerySchema.safeParse({ config: "a=\n1;b~\r\u2028" }).success).toBe(true);
  });

  it("refuses a comparison with text and a clause without an operator, naming it", () => {
    expect(() => parseConfigFilter("lr>=abc")).toThrow('"lr>=abc": >= needs a number');
    expect(() => parseConfigFilter("lr")).toThrow('"lr" is not a filter clause');
    const r = runListQuerySchema.safeParse({ config: "lr" });
    expect(r.success).toBe(false);
  });
});
