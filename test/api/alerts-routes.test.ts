// The alert and failure-cluster routes through their handlers: answers match their declared
// schemas, a bad rule or webhook URL is a 400 naming the field and changes nothing, and a
// cross-site request cannot set the webhook.
import { NextRequest } from "next/server";
import { afterAll, describe, expect, it } from "vitest";
import { useTempDatabase } from "../helpers/temp-db";
import { routeCaller } from "../helpers/route-call";

const tmp = useTempDatabase("alerts-routes");
const { routes } = await import("@/lib/api/routes");
const importRoute = await import("@/app/api/v1/runs/import/route");
const metricsRoute = await import("@/app/api/v1/runs/[id]/metrics/route");
const rulesRoute = await import("@/app/api/v1/projects/[id]/alert-rules/route");
const alertsRoute = await import("@/app/api/v1/alerts/route");
const clustersRoute = await import("@/app/api/v1/runs/[id]/failure-clusters/route");
const { evaluateRunAlerts } = await import("@/lib/db/alerts");
const { getRun } = await import("@/lib/db/runs");
afterAll(() => tmp.cleanup());

const call = routeCaller();
const matches = (route: { response?: { safeParse: (x: unknown) => { success: boolean } } }, json: unknown) =>
  expect(route.response!.safeParse(json).success).toBe(true);

describe("alert routes", () => {
  it("rules: defaults, set, refused when bad or cross-site; alerts and clusters answer their schemas", async () => {
    const r = await call(importRoute.POST, "POST", "/api/v1/runs/import", { body: { name: "a", project: "alerts-routes" } });
    const runId = r.json.id as string;
    const steps = Array.from({ length: 20 }, (_, i) => i);
    const body = { steps, values: { "actor/entropy": steps.map((s) => (s >= 12 ? 0.1 : 1)) } };
    expect((await call(metricsRoute.POST, "POST", `/api/v1/runs/${runId}/metrics`, { body, params: { id: runId } })).status).toBe(201);
    evaluateRunAlerts(runId); // the server does it after the answer (lib/ingest/deferred.ts)
    const projectId = getRun(runId).projectId;
    const params = { id: projectId };
    const path = `/api/v1/projects/${projectId}/alert-rules`;

    const defaults = await call(rulesRoute.GET, "GET", path, { params });
    expect(defaults.json.defaults).toBe(true);
    matches(routes.alertRules, defaults.json);

    const bad = await call(rulesRoute.POST, "POST", path, {
      params,
      body: { rules: [{ id: "x", metric: "m", kind: "growth", value: "2" }], webhookUrl: "ftp://x" },
    });
    expect(bad.status).toBe(400);
    expect(bad.json.issues.map((i: { path: string }) => i.path).sort()).toEqual(["body.rules.0.value", "body.webhookUrl"]);

    // a cross-site POST (a page elsewhere submitting to the dashboard) is refused before its body is read
    const res = await rulesRoute.POST(
      new NextRequest(new URL(path, "http://127.0.0.1:3000"), {
        method: "POST",
        headers: { "content-type": "application/json", origin: "http://evil.example", host: "127.0.0.1:3000" },
        body: JSON.stringify({ rules: [], webhookUrl: "http://evil.example/hook" }),
      }),
      { params: Promise.resolve(params) },
    );
    expect(res.status).toBe(403);
    expect((await call(rulesRoute.GET, "GET", path, { params })).json).toEqual(defaults.json); // nothing changed

    const set = await call(rulesRoute.POST, "POST", path, { params, body: { rules: [], webhookUrl: "https://hooks.example/turnlens" } });
    expect(set.status).toBe(200);
    expect(set.json).toMatchObject({ defaults: false, rules: [], webhookUrl: "https://hooks.example/turnlens" });
    matches(routes.alertRulesSet, set.json);

    const alerts = await call(alertsRoute.GET, "GET", `/api/v1/alerts?runId=${runId}`);
    expect(alerts.json.alerts.map((a: { ruleId: string; step: number }) => [a.ruleId, a.step])).toEqual([["entropy-falling", 14]]);
    matches(routes.alertsList, alerts.json);
    expect((await call(alertsRoute.GET, "GET", "/api/v1/alerts?limit=0")).status).toBe(400);

    const clusters = await call(clustersRoute.GET, "GET", `/api/v1/runs/${runId}/failure-clusters`, { params: { id: runId } });
    expect(clusters.json).toEqual({ runId, steps: [], perStepLimit: 20, trajectories: 0, clusters: [] });
    matches(routes.failureClusters, clusters.json);
    const backwards = await call(clustersRoute.GET, "GET", `/api/v1/runs/${runId}/failure-clusters?from=9&to=3`, { params: { id: runId } });
    expect(backwards.status).toBe(400);
    expect(backwards.json.issues[0].path).toBe("query.from");
  });
});
