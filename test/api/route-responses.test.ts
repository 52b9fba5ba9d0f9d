// Every route declares its answer, and the answers of the routes that had none (projects,
// environments, compare, the two credit views, the OpenAPI document) are what their schemas say:
// real route handlers on a seeded SQLite file, each answer parsed against its route's schema
// both before serialisation (TURNLENS_CHECK_RESPONSES, the contract test's server check) and as
// the client receives it (JSON), with nothing the schema does not know.
import { routeCaller } from "../helpers/route-call";
import { beforeAll, describe, expect, it } from "vitest";
import type { z } from "zod";
import { useTempDatabase } from "../helpers/temp-db";
import { curve, gigpoStep, GIGPO_PARAMS } from "../dashboard/fixtures";

useTempDatabase("route-responses");
// read when a route handler is made: the wrapper then checks each answer against its schema (500 if not)
process.env.TURNLENS_CHECK_RESPONSES = "1";
const { ROUTES, routes } = await import("@/lib/api/routes");
const importRoute = await import("@/app/api/v1/runs/import/route");
const stepsRoute = await import("@/app/api/v1/runs/[id]/steps/route");
const groupsRoute = await import("@/app/api/v1/runs/[id]/steps/[step]/groups/route");
const metricsRoute = await import("@/app/api/v1/runs/[id]/metrics/route");
const projectsRoute = await import("@/app/api/v1/projects/route");
const envsRoute = await import("@/app/api/v1/envs/route");
const compareRoute = await import("@/app/api/v1/compare/route");
const overviewRoute = await import("@/app/api/v1/runs/[id]/credit/route");
const groupCreditRoute = await import("@/app/api/v1/runs/[id]/steps/[step]/groups/[groupId]/credit/route");
const openapiRoute = await import("@/app/api/v1/openapi.json/route");

const call = routeCaller();

/** The answer parses against the route's schema and the schema keeps all of it (no unknown key dropped, no value changed). */
function expectMatches(route: { id: string; response?: z.ZodType }, json: unknown) {
  expect(route.response, `${route.id} declares no response schema`).toBeDefined();
  const r = route.response!.safeParse(json);
  expect(r.success ? "" : `${route.id}: ${r.error.message}`).toBe("");
  expect(r.data).toEqual(json);
}

let runId = "";
let otherRun = "";

beforeAll(async () => {
  const r = await call(importRoute.POST, "POST", "/api/v1/runs/import", {
    body: { name: "schema-gigpo", project: "schemas", envId: "frozenlake", estimator: "gigpo", config: { estimator: "gigpo", estimatorParams: GIGPO_PARAMS } },
  });
  expect(r.status).toBe(201);
  runId = r.json.id;
  for (const s of [0, 1, 2]) {
    const step = { ...gigpoStep(s, { groups: 3, G: 4, maxTurns: 6 }), diagnostics: { kl: 0.01 * s } };
    // the last step carries the policy's token entropy, so credit over training has its entropy table
    if (s === 2)
      for (const g of step.groups)
        for (const t of g.trajectories)
          t.turns.forEach((u, i) => {
            Object.assign(u, { entropy: 0.5 + 0.01 * i });
          });
    expect((await call(stepsRoute.POST, "POST", `/api/v1/runs/${runId}/steps`, { body: step, params: { id: runId } })).status).toBe(201);
  }
  await call(metricsRoute.POST, "POST", `/api/v1/runs/${runId}/metrics`, { body: { points: curve(20, 0, 0.8) }, params: { id: runId } });
  const o = await call(importRoute.POST, "POST", "/api/v1/runs/import", { body: { name: "schema-other", project: "schemas", envId: "frozenlake" } });
  otherRun = o.json.id;
  await call(metricsRoute.POST, "POST", `/api/v1/runs/${otherRun}/metrics`, { body: { points: curve(10, 1, 0.5) }, params: { id: otherRun } });
});

describe("route declarations", () => {
  it("every JSON route declares a response schema (exports declare their content types)", () => {
    const missing = ROUTES.filter((r) => !r.response && !r.produces).map((r) => r.id);
    expect(missing).toEqual([]);
    expect(ROUTES.length).toBeGreaterThanOrEqual(34);
  });
});

describe("answers of the routes that gained a schema", () => {
  it("projects and environments", async () => {
    const p = await call(projectsRoute.GET, "GET", "/api/v1/projects");
    expect(p.status).toBe(200);
    expect(p.json.projects).toEqual(expect.arrayContaining([expect.objectContaining({ name: "schemas", runs: 2 })]));
    expectMatches(routes.projects, p.json);
    const e = await call(envsRoute.GET, "GET", "/api/v1/envs");
    expect(e.status).toBe(200);
    expect(e.json.envs.map((x: { id: string }) => x.id)).toContain("frozenlake");
    expectMatches(routes.envs, e.json);
  });

  it("compare", async () => {
    const r = await call(compareRoute.GET, "GET", `/api/v1/compare?runs=${runId},${otherRun}`);
    expect(r.status).toBe(200);
    expect(r.json.runs).toHaveLength(2);
    expect(r.json.keys.length).toBeGreaterThan(0);
    expectMatches(routes.compare, r.json);
  });

  it("credit over training, stored and recomputed", async () => {
    const stored = await call(overviewRoute.GET, "GET", `/api/v1/runs/${runId}/credit`, { params: { id: runId } });
    expect(stored.status).toBe(200);
    expect(stored.json.source).toBe("stored");
    expect(stored.json.steps).toEqual([0, 1, 2]);
    expect(stored.json.entropy).not.toBeNull();
    expectMatches(routes.creditOverview, stored.json);
    const recomputed = await call(overviewRoute.GET, "GET", `/api/v1/runs/${runId}/credit?estimator=grpo&maxSteps=2`, { params: { id: runId } });
    expect(recomputed.status).toBe(200);
    expect(recomputed.json.source).toBe("recomputed");
    expectMatches(routes.creditOverview, recomputed.json);
  });

  it("a group's credit, stored and recomputed by an estimator with components and anchor groups", async () => {
    const groups = await call(groupsRoute.GET, "GET", `/api/v1/runs/${runId}/steps/1/groups`, { params: { id: runId, step: "1" } });
    const g = groups.json.groups[0] as { id: string };
    const ctx = { params: { id: runId, step: "1", groupId: g.id } };
    const stored = await call(groupCreditRoute.GET, "GET", `/api/v1/runs/${runId}/steps/1/groups/${g.id}/credit`, ctx);
    expect(stored.status).toBe(200);
    expect(stored.json.diagnostics).toBeNull();
    expect(stored.json.trainedDiagnostics).toEqual({ kl: 0.01 });
    expectMatches(routes.groupCredit, stored.json);
    const params = encodeURIComponent(JSON.stringify({ gamma: 0.9, omega: 1 }));
    const gigpo = await call(groupCreditRoute.GET, "GET", `/api/v1/runs/${runId}/steps/1/groups/${g.id}/credit?estimator=gigpo&params=${params}`, ctx);
    expect(gigpo.status).toBe(200);
    expect(gigpo.json.source).toBe("recomputed");
    expect(gigpo.json.diagnostics.anchorGroups).toBeDefined();
    expect(Object.keys(gigpo.json.components).length).toBeGreaterThan(0);
    expectMatches(routes.groupCredit, gigpo.json);
  });

  it("the OpenAPI document", async () => {
    const r = await call(openapiRoute.GET, "GET", "/api/v1/openapi.json");
    expect(r.status).toBe(200);
    expectMatches(routes.openapi, r.json);
    // the new answers are documented as named schemas
    expect(r.json.paths["/runs/{id}/credit"].get.responses["200"].content["application/json"].schema.$ref).toBe("#/components/schemas/CreditOverview");
    expect(Object.keys(r.json.components.schemas)).toEqual(
      expect.arrayContaining(["GroupCredit", "CreditDiagnostics", "StepCreditDiagnostics", "RunComparison", "ProjectList", "EnvCatalog"]),
    );
  });
});
