// The trace spans a trajectory's turn shows (a Trackio trace's spans, kept in the last turn's info).
import { describe, expect, it } from "vitest";
import { spanRows } from "@/components/trajectories/trace-spans";

describe("spanRows", () => {
  it("gives each span its name, kind, duration and status, indented under its parent", () => {
    const rows = spanRows([
      { id: "s1", name: "policy", kind: "generation", model: "qwen-0.5b", duration_ms: 12.5, status: "ok" },
      { id: "s2", name: "look", kind: "tool", parent_id: "s1", duration_ms: 3 },
      { id: "s3", name: "parse", parent_id: "s2", error: "bad json" },
      { name: "orphan", parent_id: "nowhere" },
    ]);
    expect(rows).toEqual([
      { name: "policy", detail: "generation · qwen-0.5b · 12.5 ms · ok", depth: 0 },
      { name: "look", detail: "tool · 3 ms", depth: 1 },
      { name: "parse", detail: "error", depth: 2 },
      { name: "orphan", detail: "", depth: 1 },
    ]);
  });

  it("puts each span right under its parent, whatever the order of the list", () => {
    const rows = spanRows([
      { id: "s1", name: "agent" },
      { id: "s2", name: "chat", parent_id: "s1" },
      { id: "s3", name: "search", parent_id: "s1" },
      { id: "s4", name: "tokenize", parent_id: "s2" },
    ]);
    expect(rows.map((r) => [r.name, r.depth])).toEqual([
      ["agent", 0],
      ["chat", 1],
      ["tokenize", 2],
      ["search", 1],
    ]);
  });

  it("shows nothing for what is not a list of spans, and stops at a parent cycle", () => {
    expect(spanRows(undefined)).toEqual([]);
    expect(spanRows({ name: "x" })).toEqual([]);
    expect(spanRows(["text", null, 3])).toEqual([]);
    const cycle = spanRows([
      { id: "a", name: "a", parent_id: "b" },
      { id: "b", name: "b", parent_id: "a" },
    ]);
    expect(cycle.map((r) => r.depth)).toEqual([2, 2]);
  });
});
