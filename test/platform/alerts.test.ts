// Monitors and alerts on constructed runs, through the ingest entry (lib/ingest/thread.ts) and its
// deferred work: the default entropy rule fires at the step its definition gives and only there, a
// run without collapse raises nothing, a step diagnostic (zero-variance share) fires from the step
// summaries, and a real HTTP receiver on loopback gets one POST per alert, a failed one retried.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, describe, expect, it } from "vitest";
import { useTempDatabase } from "../helpers/temp-db";

const tmp = useTempDatabase("alerts");
const { handleIngest } = await import("@/lib/ingest/thread");
const { checkOneRunAlerts, finishOneDeferred } = await import("@/lib/ingest/deferred");
const { getRawDb } = await import("@/lib/db/raw");
const { createRun, getRun } = await import("@/lib/db/runs");
const { listAlerts, readAlertConfig, writeAlertConfig } = await import("@/lib/db/alerts");
const { deliverDueWebhooks, WEBHOOK_ATTEMPTS } = await import("@/lib/runs/alert-webhooks");
const { alertConfigBodySchema, DEFAULT_ALERT_RULES } = await import("@/lib/schemas/alerts");
afterAll(() => tmp.cleanup());

const newRun = (project: string, name: string) =>
  createRun({ project, name, kind: "imported", jobKind: null, config: {}, envId: "alfworld", estimator: "grpo", status: "running" }).runId;

let reqId = 0;
/** One ingest request as the server sends it, then its deferred work and alert checks done. */
function ingest(runId: string, kind: "metrics" | "steps", body: unknown) {
  const reply = handleIngest({ id: ++reqId, kind, runId, bytes: new TextEncoder().encode(JSON.stringify(body)), databaseUrl: tmp.url }, getRawDb());
  expect(reply.ok, JSON.stringify(reply)).toBe(true);
  while (finishOneDeferred(getRawDb()) || checkOneRunAlerts(getRawDb()));
}

/** 60 steps of actor/entropy (and healthy clip ratio and KL) in batches of 10; `collapseAt`: entropy 0.1 from there. */
function logEntropy(runId: string, collapseAt: number | null) {
  for (let from = 0; from < 60; from += 10) {
    const steps = Array.from({ length: 10 }, (_, i) => from + i);
    const entropy = steps.map((s) => (collapseAt !== null && s >= collapseAt ? 0.1 : 1 + 0.05 * Math.sin(s)));
    ingest(runId, "metrics", {
      steps,
      values: { "actor/entropy": entropy, "actor/pg_clipfrac": steps.map(() => 0.05), "actor/kl_loss": steps.map(() => 0.002) },
    });
  }
}

describe("default rules", () => {
  it("entropy falling: one alert at step 42 when entropy drops from 1.0 to 0.1 at step 40; none without the drop", () => {
    const collapsed = newRun("alerts-a", "collapse");
    const healthy = newRun("alerts-a", "healthy");
    logEntropy(collapsed, 40);
    logEntropy(healthy, null);
    // the window mean of steps 38-42 is (2 x 1.0 + 3 x 0.1) / 5 = 0.46 < 0.5 x 1.0; steps 37-41 give 0.64
    const alerts = listAlerts({ runId: collapsed, limit: 50 });
    expect(alerts.map((a) => [a.ruleId, a.step, a.lastStep, a.open])).toEqual([["entropy-falling", 42, 59, true]]);
    expect(alerts[0].value).toBeCloseTo(0.46 / 1.0, 1);
    expect(alerts[0].message).toMatch(/actor\/entropy: mean over the last 5 steps is .* % of its mean over the first 5 steps/);
    expect(listAlerts({ runId: healthy, limit: 50 })).toEqual([]);
    // evaluated once a step: more batches with nothing new change nothing
    ingest(collapsed, "metrics", { steps: [60], values: { "actor/entropy": [0.1] } });
    expect(listAlerts({ runId: collapsed, limit: 50 }).map((a) => [a.step, a.lastStep])).toEqual([[42, 60]]);
  });

  it("zero-variance share rising: from the step summaries, at the first step whose window follows the baseline", () => {
    const runId = newRun("alerts-b", "echo-trap");
    const project = getRun(runId).projectId;
    writeAlertConfig(project, alertConfigBodySchema.parse({ rules: DEFAULT_ALERT_RULES.filter((r) => r.id === "zero-variance-rising") }));
    // 2 tasks x 3 trajectories: outcomes mixed until step 5, all failing from step 6
    for (let s = 0; s < 12; s++)
      ingest(runId, "steps", {
        step: s,
        estimator: "grpo",
        groups: [0, 1].map((g) => ({
          uid: `t${g}`,
          envId: "alfworld",
          taskSeed: g,
          trajectories: [0, 1, 2].map((t) => {
            const win = s < 6 && t === 0;
            return { success: win, turns: [{ observation: `task ${g}`, action: `go ${t}`, reward: win ? 1 : 0, advantage: win ? 1 : -0.5 }] };
          }),
        })),
      });
    // baseline steps 0-4 share 0; the window 5-9 is the first after it: (0 + 4 x 1) / 5 = 0.8 > 0 + 0.3
    expect(listAlerts({ runId, limit: 10 }).map((a) => [a.ruleId, a.step, a.lastStep])).toEqual([["zero-variance-rising", 9, 11]]);
  });
});

describe("rules per project", () => {
  it("defaults apply to a project without rules; a bad rule or a non-http URL is refused naming the field", () => {
    const runId = newRun("alerts-c", "cfg");
    const project = getRun(runId).projectId;
    expect(readAlertConfig(project)).toMatchObject({ defaults: true, webhookUrl: null });
    const bad = alertConfigBodySchema.safeParse({ rules: [], webhookUrl: "file:///etc/passwd" });
    expect(bad.success ? [] : bad.error.issues.map((i) => i.path.join("."))).toEqual(["webhookUrl"]);
    const trend = alertConfigBodySchema.safeParse({ rules: [{ id: "x", metric: "m", kind: "trend", value: 1 }] });
    expect(trend.success ? [] : trend.error.issues.map((i) => i.path.join("."))).toEqual(["rules.0.change"]);
  });
});

describe("webhook", () => {
  it("gets one JSON POST per alert, a failed delivery retried, bounded attempts", async () => {
    const received: { id: number; ruleId: string }[] = [];
    let failNext = 1; // the first POST is answered 500
    const server = http.createServer((req, res) => {
      let body = "";
      req.on("data", (c) => (body += c));
      req.on("end", () => {
        if (failNext-- > 0) {
          res.writeHead(500).end();
          return;
        }
        const json = JSON.parse(body);
        expect(req.headers["content-type"]).toBe("application/json");
        expect(json.event).toBe("turnlens.alert");
        received.push({ id: json.alert.id, ruleId: json.alert.ruleId });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
    try {
      const runId = newRun("alerts-d", "hooked");
      const project = getRun(runId).projectId;
      writeAlertConfig(project, alertConfigBodySchema.parse({ rules: DEFAULT_ALERT_RULES, webhookUrl: url }));
      logEntropy(runId, 40);
      // and the clip ratio at 0.5 from step 60: a second alert (the window of steps 57-61 averages 0.23 > 0.2)
      ingest(runId, "metrics", { steps: [60, 61, 62, 63, 64], values: { "actor/pg_clipfrac": [0.5, 0.5, 0.5, 0.5, 0.5] } });
      const alerts = listAlerts({ runId, limit: 10 });
      expect(alerts.map((a) => a.ruleId).sort()).toEqual(["clip-ratio-high", "entropy-falling"]);
      let t = Date.now() / 1000;
      const now = () => t;
      expect(await deliverDueWebhooks(getRawDb(), now)).toBe(1); // one got the 500
      expect(await deliverDueWebhooks(getRawDb(), now)).toBe(0); // its retry waits 1 s
      t += 1.5;
      expect(await deliverDueWebhooks(getRawDb(), now)).toBe(1);
      t += 100;
      expect(await deliverDueWebhooks(getRawDb(), now)).toBe(0); // nothing left to send
      expect(received.map((r) => r.id).sort()).toEqual(alerts.map((a) => a.id).sort());
      expect(listAlerts({ runId, limit: 10 }).map((a) => a.webhookState)).toEqual(["sent", "sent"]);

      // a receiver that never accepts: WEBHOOK_ATTEMPTS tries, then failed
      failNext = 1000;
      const other = newRun("alerts-d", "hooked-2");
      logEntropy(other, 40);
      for (let i = 0; i < WEBHOOK_ATTEMPTS + 2; i++) {
        await deliverDueWebhooks(getRawDb(), now);
        t += 60;
      }
      expect(listAlerts({ runId: other, limit: 10 }).map((a) => a.webhookState)).toEqual(["failed"]);
      expect(1000 - failNext).toBe(WEBHOOK_ATTEMPTS);
    } finally {
      server.close();
    }
  });
});
