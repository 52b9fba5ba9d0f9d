// Alerts: a project's rules (AlertConfig), how far each rule has read each run (AlertCursor), the
// alerts themselves and their webhook delivery queue (Alert). Rules are evaluated by
// lib/schemas/alerts.ts; this file reads the points a rule needs (its series' first k, the 2k - 1
// before the cursor, the new ones) and writes what it decided, so a step is evaluated once and an
// episode (consecutive steps where the condition holds) is one alert whose lastStep follows it.
// Called after ingest has answered (lib/ingest/deferred.ts), never inside an ingest request.
import {
  DEFAULT_ALERT_RULES,
  DIAGNOSTIC_PREFIX,
  alertConfigBodySchema,
  alertMessage,
  evaluateRule,
  type Alert,
  type AlertConfig,
  type AlertConfigBody,
  type AlertRule,
  type SeriesPoint,
} from "../schemas/alerts";
import { NotFoundError } from "../schemas/errors";
import type { StepSummary } from "../schemas/step-summary";
import { SUMMARY_VERSION } from "./credit-summary";
import { getRawDb, writeTransaction, type RawDb } from "./raw";

// ---------------------------------------------------------------- rules

function configRow(projectId: string, db: RawDb): { rules: string; webhookUrl: string | null } | undefined {
  return db.prepare(`SELECT "rules", "webhookUrl" FROM "AlertConfig" WHERE "projectId" = ?`).get(projectId) as
    | { rules: string; webhookUrl: string | null }
    | undefined;
}

/** A project's rules and webhook; the default rules when it has none of its own. */
export function readAlertConfig(projectId: string, db: RawDb = getRawDb()): AlertConfig {
  if (db.prepare(`SELECT 1 FROM "Project" WHERE "id" = ?`).get(projectId) === undefined) throw new NotFoundError("project", projectId);
  const row = configRow(projectId, db);
  if (!row) return { projectId, rules: [...DEFAULT_ALERT_RULES], webhookUrl: null, defaults: true };
  return { projectId, rules: alertConfigBodySchema.shape.rules.parse(JSON.parse(row.rules)), webhookUrl: row.webhookUrl, defaults: false };
}

/** Sets a project's rules and webhook (validated by the caller). */
export function writeAlertConfig(projectId: string, body: AlertConfigBody, db: RawDb = getRawDb()): AlertConfig {
  writeTransaction(
    null,
    (db) => {
      if (db.prepare(`SELECT 1 FROM "Project" WHERE "id" = ?`).get(projectId) === undefined) throw new NotFoundError("project", projectId);
      db.prepare(
        `INSERT INTO "AlertConfig" ("projectId","rules","webhookUrl","updatedAt") VALUES (?,?,?,?) ON CONFLICT ("projectId") DO
         UPDATE SET "rules" = EXCLUDED."rules", "webhookUrl" = EXCLUDED."webhookUrl", "updatedAt" = EXCLUDED."updatedAt"`,
      ).run(projectId, JSON.stringify(body.rules), body.webhookUrl, Date.now() / 1000);
    },
    db,
  );
  return readAlertConfig(projectId, db);
}

function runConfig(runId: string, db: RawDb): { rules: AlertRule[]; webhookUrl: string | null } | null {
  const projectId = db.prepare(`SELECT "projectId" FROM "Run" WHERE "id" = ?`).pluck().get(runId) as string | undefined;
  if (projectId === undefined) return null;
  const c = readAlertConfig(projectId, db);
  return { rules: c.rules.filter((r) => r.enabled), webhookUrl: c.webhookUrl };
}

// ---------------------------------------------------------------- a rule's points

/** Points read past the cursor in one evaluation; the rest wait for the next one. */
const NEW_POINTS = 10_000;

interface RulePoints {
  baseline: SeriesPoint[];
  /** context (the 2k - 1 points at or before the cursor) then the new points */
  points: SeriesPoint[];
  from: number;
}

function metricPoints(runId: string, rule: AlertRule, after: number, db: RawDb): RulePoints | null {
  const s = db.prepare(`SELECT "id","lastStep" FROM "MetricSeries" WHERE "runId" = ? AND "key" = ?`).get(runId, rule.metric) as
    | { id: number; lastStep: number }
    | undefined;
  if (!s || s.lastStep <= after) return null; // the cheap check: nothing new in the series
  const read = (where: string, order: string, ...args: number[]) =>
    (
      db
        .prepare(`SELECT "step","value" FROM "Metric" WHERE "seriesId" = ? ${where} ORDER BY "step" ${order} LIMIT ?`)
        .raw()
        .all(s.id, ...args) as [number, number][]
    ).map(([step, value]) => ({ step, value }));
  const baseline = read("", "", rule.k);
  const context = read(`AND "step" <= ?`, "DESC", after, 2 * rule.k).reverse();
  const fresh = read(`AND "step" > ?`, "", after, NEW_POINTS);
  return { baseline, points: [...context, ...fresh], from: context.length };
}

function diagnosticPoints(runId: string, rule: AlertRule, after: number, db: RawDb): RulePoints | null {
  const field = rule.metric.slice(DIAGNOSTIC_PREFIX.length);
  const sql = (where: string, order: string) =>
    `SELECT s."step", c."body" FROM "RolloutStep" s JOIN "StepCreditSummary" c ON c."stepId" = s."id"
     WHERE s."runId" = ? AND c."version" = ? ${where} ORDER BY s."step" ${order} LIMIT ?`;
  const toPoint = ([step, body]: [number, string]): SeriesPoint | null => {
    const sum = JSON.parse(body) as StepSummary;
    if (rule.kind === "drift") return sum.advQuantiles && sum.diag.advStd ? { step, value: sum.diag.advStd, q: sum.advQuantiles } : null;
    const v = (sum.diag as Record<string, unknown>)[field];
    return typeof v === "number" && Number.isFinite(v) ? { step, value: v } : null;
  };
  const read = (where: string, order: string, ...args: number[]) =>
    (
      db
        .prepare(sql(where, order))
        .raw()
        .all(runId, SUMMARY_VERSION, ...args) as [number, string][]
    )
      .map(toPoint)
      .filter((p) => p !== null);
  const fresh = read(`AND s."step" > ?`, "", after, NEW_POINTS);
  if (!fresh.length) return null;
  const baseline = read("", "", rule.k);
  const context = read(`AND s."step" <= ?`, "DESC", after, 2 * rule.k).reverse();
  return { baseline, points: [...context, ...fresh], from: context.length };
}

// ---------------------------------------------------------------- evaluation

/** Below every step a series can hold: a rule that has read nothing. */
const NOTHING_READ = -(2 ** 31);

/**
 * Evaluates every enabled rule of the run's project over the points stored since it last read them;
 * returns the alerts it opened. Idempotent: a second call with nothing new reads one cursor and one
 * series row per rule.
 */
export function evaluateRunAlerts(runId: string, db: RawDb = getRawDb(), now = Date.now() / 1000): number[] {
  const cfg = runConfig(runId, db);
  if (!cfg) return [];
  const opened: number[] = [];
  for (const rule of cfg.rules) {
    const cursor = db.prepare(`SELECT "lastStep","openAlertId" FROM "AlertCursor" WHERE "runId" = ? AND "ruleId" = ?`).get(runId, rule.id) as
      | { lastStep: number; openAlertId: number | null }
      | undefined;
    const after = cursor?.lastStep ?? NOTHING_READ;
    const got = rule.metric.startsWith(DIAGNOSTIC_PREFIX) ? diagnosticPoints(runId, rule, after, db) : metricPoints(runId, rule, after, db);
    if (!got || got.from >= got.points.length) continue;
    const verdicts = evaluateRule(rule, got.baseline, got.points, got.from);
    writeTransaction(
      null,
      (db) => {
        // under the run's write lock: another process (an ingest process of the same run) that
        // evaluated these points first moved the cursor, and this evaluation is dropped
        const current = db.prepare(`SELECT "lastStep" FROM "AlertCursor" WHERE "runId" = ? AND "ruleId" = ?`).pluck().get(runId, rule.id) as number | undefined;
        if ((current ?? NOTHING_READ) !== after) return;
        let open = cursor?.openAlertId ?? null;
        let openLast: number | null = null;
        for (const v of verdicts) {
          if (!v.holds) {
            if (open !== null && openLast !== null) db.prepare(`UPDATE "Alert" SET "lastStep" = ? WHERE "id" = ?`).run(openLast, open);
            open = null;
            openLast = null;
          } else if (open === null) {
            const id = db
              .prepare(
                `INSERT INTO "Alert" ("runId","ruleId","metric","step","lastStep","value","message","createdAt","webhookUrl","webhookState","attempts","nextAttemptAt")
                 VALUES (?,?,?,?,?,?,?,?,?,?,0,?) RETURNING "id"`,
              )
              .pluck()
              .get(
                runId,
                rule.id,
                rule.metric,
                v.step,
                v.step,
                v.value!,
                alertMessage(rule, v.value!),
                now,
                cfg.webhookUrl,
                cfg.webhookUrl ? "pending" : "none",
                now,
              ) as number;
            opened.push(id);
            open = id;
          } else openLast = v.step;
        }
        if (open !== null && openLast !== null) db.prepare(`UPDATE "Alert" SET "lastStep" = ? WHERE "id" = ?`).run(openLast, open);
        const last = verdicts[verdicts.length - 1].step;
        db.prepare(
          `INSERT INTO "AlertCursor" ("runId","ruleId","lastStep","openAlertId") VALUES (?,?,?,?) ON CONFLICT ("runId","ruleId") DO
           UPDATE SET "lastStep" = EXCLUDED."lastStep", "openAlertId" = EXCLUDED."openAlertId"`,
        ).run(runId, rule.id, last, open);
      },
      db,
      { runId },
    );
  }
  return opened;
}

/** Drops a run's alerts and how far its rules read: they read it again from its first step at their next evaluation. */
export function forgetRunAlerts(runId: string, db: RawDb = getRawDb()): void {
  writeTransaction(
    null,
    (db) => {
      db.prepare(`DELETE FROM "AlertCursor" WHERE "runId" = ?`).run(runId);
      db.prepare(`DELETE FROM "Alert" WHERE "runId" = ?`).run(runId);
    },
    db,
    { runId },
  );
}

// ---------------------------------------------------------------- reads

interface AlertRow {
  id: number;
  runId: string;
  runName: string;
  projectId: string;
  ruleId: string;
  metric: string;
  step: number;
  lastStep: number;
  open: number | boolean | null;
  value: number;
  message: string;
  createdAt: number;
  webhookState: Alert["webhookState"];
}

/** Alerts, newest first: of one run, or of every run. */
export function listAlerts(q: { runId?: string; limit: number }, db: RawDb = getRawDb()): Alert[] {
  const sql = `SELECT a."id", a."runId", r."name" AS "runName", r."projectId", a."ruleId", a."metric", a."step", a."lastStep",
      (SELECT 1 FROM "AlertCursor" c WHERE c."runId" = a."runId" AND c."ruleId" = a."ruleId" AND c."openAlertId" = a."id") AS "open",
      a."value", a."message", a."createdAt", a."webhookState"
    FROM "Alert" a JOIN "Run" r ON r."id" = a."runId"`;
  const rows = (
    q.runId
      ? db.prepare(`${sql} WHERE a."runId" = ? ORDER BY a."step" DESC, a."id" DESC LIMIT ?`).all(q.runId, q.limit)
      : db.prepare(`${sql} ORDER BY a."createdAt" DESC, a."id" DESC LIMIT ?`).all(q.limit)
  ) as AlertRow[];
  const names = new Map<string, Map<string, string>>();
  const nameOf = (projectId: string, ruleId: string): string | null => {
    if (!names.has(projectId)) {
      const row = configRow(projectId, db);
      const rules = row ? (JSON.parse(row.rules) as AlertRule[]) : DEFAULT_ALERT_RULES;
      names.set(projectId, new Map(rules.map((r) => [r.id, r.name ?? r.id])));
    }
    return names.get(projectId)!.get(ruleId) ?? null;
  };
  return rows.map(({ projectId, open, ...r }) => ({ ...r, open: Boolean(open), ruleName: nameOf(projectId, r.ruleId) }));
}

// ---------------------------------------------------------------- webhook queue

export interface WebhookDelivery {
  alert: Alert;
  url: string;
  attempts: number;
}

/**
 * Claims the alerts whose webhook is due at `now`, oldest first: each claimed one's next attempt
 * moves `leaseSeconds` ahead in a compare-and-swap, so two server processes never post one twice.
 */
export function claimDueWebhooks(now: number, leaseSeconds: number, limit = 20, db: RawDb = getRawDb()): WebhookDelivery[] {
  const due = db
    .prepare(
      `SELECT "id","webhookUrl","attempts" FROM "Alert" WHERE "webhookState" = 'pending' AND "nextAttemptAt" <= ? ORDER BY "nextAttemptAt", "id" LIMIT ?`,
    )
    .all(now, limit) as { id: number; webhookUrl: string; attempts: number }[];
  const claimed = due.filter((d) =>
    writeTransaction(
      null,
      (db) =>
        db
          .prepare(`UPDATE "Alert" SET "nextAttemptAt" = ? WHERE "id" = ? AND "webhookState" = 'pending' AND "nextAttemptAt" <= ?`)
          .run(now + leaseSeconds, d.id, now).changes === 1,
      db,
    ),
  );
  if (!claimed.length) return [];
  const byId = new Map(
    listAlertsById(
      claimed.map((d) => d.id),
      db,
    ).map((a) => [a.id, a]),
  );
  return claimed.filter((d) => byId.has(d.id)).map((d) => ({ alert: byId.get(d.id)!, url: d.webhookUrl, attempts: d.attempts }));
}

function listAlertsById(ids: number[], db: RawDb): Alert[] {
  const rows = db
    .prepare(
      `SELECT a."id", a."runId", r."name" AS "runName", r."projectId", a."ruleId", a."metric", a."step", a."lastStep", 0 AS "open",
        a."value", a."message", a."createdAt", a."webhookState"
       FROM "Alert" a JOIN "Run" r ON r."id" = a."runId" WHERE a."id" IN (${ids.map(() => "?").join(",")})`,
    )
    .all(...ids) as AlertRow[];
  return rows.map(({ projectId: _p, open: _o, ...r }) => ({ ...r, open: false, ruleName: null }));
}

/** Records a delivery attempt: sent, failed for good, or to retry at `next`. */
export function recordWebhookAttempt(id: number, outcome: { state: "sent" | "failed" | "pending"; next?: number }, db: RawDb = getRawDb()): void {
  writeTransaction(
    null,
    (db) =>
      db
        .prepare(`UPDATE "Alert" SET "webhookState" = ?, "attempts" = "attempts" + 1, "nextAttemptAt" = ? WHERE "id" = ?`)
        .run(outcome.state, outcome.next ?? 0, id),
    db,
  );
}
