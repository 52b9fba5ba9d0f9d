// GET /runs/{id}/checkpoints lists the steps a run saved checkpoints at (what the run page's
// "Evaluate checkpoint" picker offers), oldest first, without the server's file paths; an unknown
// run is a 404.
import { afterAll, describe, expect, it } from "vitest";
import { routeCaller } from "../helpers/route-call";
import { useTempDatabase } from "../helpers/temp-db";

const tmp = useTempDatabase("checkpoints-route");
const { createRun } = await import("@/lib/db/runs");
const { addCheckpoint } = await import("@/lib/db/checkpoints");
const route = await import("@/app/api/v1/runs/[id]/checkpoints/route");
const call = routeCaller();
afterAll(() => tmp.cleanup());

describe("GET /runs/{id}/checkpoints", () => {
  it("lists the saved steps oldest first, with whether an ONNX export is beside them, and no paths", async () => {
    const runId = createRun({ project: "p", name: "t", kind: "train", jobKind: "train", config: {}, status: "running" }).runId;
    expect((await call(route.GET, "GET", `/api/v1/runs/${runId}/checkpoints`, { params: { id: runId } })).json).toEqual({ checkpoints: [] });
    addCheckpoint(runId, 9, "/data/ckpt/9.pt", "/data/ckpt/9.onnx", null);
    addCheckpoint(runId, 4, "/data/ckpt/4.pt", null, null);
    const r = await call(route.GET, "GET", `/api/v1/runs/${runId}/checkpoints`, { params: { id: runId } });
    expect(r.status).toBe(200);
    expect(r.json).toEqual({
      checkpoints: [
        { step: 4, onnx: false },
        { step: 9, onnx: true },
      ],
    });
    expect(JSON.stringify(r.json)).not.toContain("/data/");
  });

  it("answers 404 naming an unknown run", async () => {
    const r = await call(route.GET, "GET", "/api/v1/runs/nope/checkpoints", { params: { id: "nope" } });
    expect(r.status).toBe(404);
    expect(r.json.error).toContain("nope");
  });
});
