// Every /api/v1 route, declared once. Route files import their declaration from here
// (`route(routes.runsList, …)`), and /api/v1/openapi.json is generated from this list.
import { z } from "zod";
import { defineRoute } from "./contract";
import { creditOverviewQuerySchema, creditOverviewSchema, creditSourceQuerySchema, groupCreditSchema } from "../schemas/credit";
import { emptyBodySchema, queryInt } from "../schemas/common";
import { importSchema, importUploadQuerySchema, maxUploadBytes } from "../schemas/imports";
import { jobListQuerySchema, jobListSchema, jobSchema, logLinesSchema, logQuerySchema } from "../schemas/jobs";
import { logMetricsSchema, metricKeyInfoSchema, metricKeySchema, seriesQuerySchema, seriesSchema } from "../schemas/metrics";
import { groupSchema, pageQuerySchema, rolloutStepInputSchema, rolloutStepPartSchema, rolloutStepSchema, rolloutStepsBatchSchema, trajectoryDetailSchema, trajectoryListQuerySchema, trajectorySchema, turnSchema } from "../schemas/rollouts";
import { compareQuerySchema, envCatalogSchema, finishRunSchema, importedRunSchema, runFiltersSchema, importRunSchema, launchRunSchema, projectListSchema, runComparisonSchema, runListQuerySchema, runListSchema, runSchema } from "../schemas/runs";
import { openApiDocumentSchema } from "../schemas/openapi";
import { taskCompareQuerySchema, taskCompareSchema } from "../schemas/task-compare";
import { trajectorySearchQuerySchema, trajectorySearchResultSchema } from "../schemas/search";

// the item key keeps its literal type, so a page's answer types as `{ steps: Step[], total, … }`
const page = <K extends string, T extends z.ZodType>(key: K, item: T) =>
  z.object({ ...({ [key]: z.array(item) } as { [P in K]: z.ZodArray<T> }), total: z.number(), page: z.number(), pageSize: z.number() });
const none = z.object({}).strict();

export const routes = {
  projects: defineRoute({ id: "listProjects", method: "GET", path: "/projects", summary: "List projects", tag: "runs", query: none, response: projectListSchema }),
  envs: defineRoute({ id: "listEnvs", method: "GET", path: "/envs", summary: "Environments with their config JSON Schemas", tag: "launch", query: none, response: envCatalogSchema }),
  runsList: defineRoute({ id: "listRuns", method: "GET", path: "/runs", summary: "List runs (filter, sort, paginate)", tag: "runs", query: runListQuerySchema, response: runListSchema }),
  runsLaunch: defineRoute({
    id: "launchRun",
    method: "POST",
    path: "/runs",
    summary: "Launch a run (creates the run and queues its job)",
    tag: "runs",
    body: launchRunSchema,
    response: runSchema,
    errors: [404],
  }),
  runsImport: defineRoute({
    id: "importRun",
    method: "POST",
    path: "/runs/import",
    summary: "Create a run for an external trainer; the answer carries its write key (shown once)",
    tag: "ingest",
    body: importRunSchema,
    response: importedRunSchema,
  }),
  runsFilters: defineRoute({
    id: "runFilters",
    method: "GET",
    path: "/runs/filters",
    summary: "What the runs table can filter and sort by (environments, estimators, tags, metric keys, config paths)",
    tag: "runs",
    query: none,
    response: runFiltersSchema,
  }),
  runGet: defineRoute({ id: "getRun", method: "GET", path: "/runs/{id}", summary: "Get a run", tag: "runs", query: none, response: runSchema }),
  runDelete: defineRoute({
    id: "deleteRun",
    method: "DELETE",
    path: "/runs/{id}",
    summary: "Delete a finished run and everything it stored",
    tag: "runs",
    response: z.object({ deleted: z.string() }),
    errors: [409],
  }),
  runCancel: defineRoute({ id: "cancelRun", method: "POST", path: "/runs/{id}/cancel", summary: "Cancel a run's job (a running job stops within 5 s)", tag: "runs", response: runSchema, body: emptyBodySchema, status: 200, errors: [409] }),
  runRetry: defineRoute({ id: "retryRun", method: "POST", path: "/runs/{id}/retry", summary: "Re-queue a failed or canceled run", tag: "runs", response: runSchema, body: emptyBodySchema, status: 200, errors: [409] }),
  runFinish: defineRoute({
    id: "finishRun",
    method: "POST",
    path: "/runs/{id}/finish",
    summary: "Mark an imported run finished (needs its write key)",
    tag: "ingest",
    body: finishRunSchema,
    response: runSchema,
    status: 200,
    ingest: true,
  }),
  runResume: defineRoute({
    id: "resumeRun",
    method: "POST",
    path: "/runs/{id}/resume",
    summary: "Reopen a finished imported run for writes (needs its write key)",
    tag: "ingest",
    body: emptyBodySchema,
    response: runSchema,
    status: 200,
    ingest: true,
  }),
  metricsKeys: defineRoute({
    id: "listMetricKeys",
    method: "GET",
    path: "/runs/{id}/metrics",
    summary: "Metric keys of a run with summaries",
    tag: "metrics",
    query: none,
    response: z.object({ keys: z.array(metricKeyInfoSchema) }),
  }),
  metricsLog: defineRoute({
    id: "logMetrics",
    method: "POST",
    path: "/runs/{id}/metrics",
    summary: "Log metrics (W&B-shaped); a retried `batchId` is stored once",
    tag: "ingest",
    body: logMetricsSchema,
    response: z.object({ inserted: z.number(), replaced: z.number() }),
    idempotent: true,
    ingest: true,
  }),
  metricsSeries: defineRoute({ id: "metricSeries", method: "GET", path: "/runs/{id}/metrics/series", summary: "Downsampled series with live cursor", tag: "metrics", query: seriesQuerySchema, response: seriesSchema }),
  metricsExport: defineRoute({
    id: "exportMetrics",
    method: "GET",
    path: "/runs/{id}/metrics/export",
    summary: "Full-resolution export, streamed (CSV, JSON or columnar JSON); repeat `key` to select keys",
    tag: "metrics",
    query: z
      .object({
        format: z
          .enum(["csv", "json", "columnar"])
          .default("csv")
          .describe(
            "csv: `key,step,value,wall_time` rows (NaN, Infinity and -Infinity as those words); json: an array of {key, step, value, wallTime} (non-finite values as the texts NaN, Infinity, -Infinity in quotes); columnar: an array of blocks {key, steps, values, wallTimes} (one key each, in step order, up to 20,000 points a block; a third of the bytes of json).",
          ),
        key: z
          .union([metricKeySchema, z.array(metricKeySchema).max(100)])
          .optional()
          // 100 keys of up to 200 characters keep the URL within the web server's 64 KB header limit
          .describe("Metric key(s) to export, at most 100; repeat the parameter for several; omitted: all keys."),
      })
      .strict(),
    produces: {
      "text/csv": z.string(),
      "application/json": z.union([
        z.array(z.object({ key: z.string(), step: z.number(), value: z.number(), wallTime: z.number() })),
        z.array(z.object({ key: z.string(), steps: z.array(z.number()), values: z.array(z.number()), wallTimes: z.array(z.number()) })),
      ]),
    },
  }),
  stepsList: defineRoute({
    id: "listSteps",
    method: "GET",
    path: "/runs/{id}/steps",
    summary: "Rollout steps of a run",
    tag: "rollouts",
    query: z.object({ page: queryInt(1, 1_000_000).default(1), pageSize: queryInt(1, 1000).default(100) }).strict(),
    response: page("steps", rolloutStepSchema),
  }),
  stepsWrite: defineRoute({
    id: "writeStep",
    method: "POST",
    path: "/runs/{id}/steps",
    summary: "Ingest one step's rollouts (groups, trajectories, turns); a retry with identical content answers 200, other content for the step 409",
    tag: "ingest",
    body: rolloutStepInputSchema,
    response: z.object({ stepId: z.string(), turns: z.number() }),
    idempotent: true,
    ingest: true,
  }),
  stepsBatchWrite: defineRoute({
    id: "writeSteps",
    method: "POST",
    path: "/runs/{id}/steps/batch",
    summary: "Ingest several steps in one request, in increasing step order and each once (else 400 naming body.steps.N.step), stored in order in one transaction (all or none); each step is idempotent as in writeStep (a step stored before with identical content is answered from its record; other content: 409 naming body.steps.N.step)",
    tag: "ingest",
    body: rolloutStepsBatchSchema,
    response: z.object({ steps: z.array(z.object({ stepId: z.string(), turns: z.number() })) }),
    idempotent: true,
    ingest: true,
  }),
  stepPartWrite: defineRoute({
    id: "writeStepPart",
    method: "POST",
    path: "/runs/{id}/steps/parts",
    summary:
      "Ingest one part of a step too large for one request (split by groups; each part carries the step's estimator, params and diagnostics): parts wait until the last arrives, then the step is stored whole in one transaction; each part is idempotent (identical again 200, other content 409)",
    tag: "ingest",
    body: rolloutStepPartSchema,
    response: z.object({
      complete: z.boolean().describe("true once every part has arrived and the step is stored"),
      part: z.number(),
      parts: z.number(),
      received: z.number().describe("parts stored so far"),
      stepId: z.string().optional(),
      turns: z.number().optional(),
    }),
    idempotent: true,
    ingest: true,
  }),
  groupsList: defineRoute({
    id: "listGroups",
    method: "GET",
    path: "/runs/{id}/steps/{step}/groups",
    summary: "Task groups of a step",
    tag: "rollouts",
    query: none,
    response: z.object({ groups: z.array(groupSchema) }),
  }),
  trajectoriesList: defineRoute({
    id: "listTrajectories",
    method: "GET",
    path: "/runs/{id}/trajectories",
    summary: "Trajectories of a run (filter by step, group, success)",
    tag: "rollouts",
    query: trajectoryListQuerySchema,
    response: page("trajectories", trajectorySchema),
  }),
  turnsPage: defineRoute({
    id: "listTurns",
    method: "GET",
    path: "/runs/{id}/turns",
    summary: "All turns of a run, by cursor",
    tag: "rollouts",
    query: pageQuerySchema,
    response: z.object({ turns: z.array(turnSchema), next: z.number().nullable() }),
  }),
  trajectoryGet: defineRoute({ id: "getTrajectory", method: "GET", path: "/trajectories/{id}", summary: "A trajectory with every turn", tag: "rollouts", query: none, response: trajectoryDetailSchema }),
  compareTasks: defineRoute({
    id: "compareTasks",
    method: "GET",
    path: "/compare/tasks",
    summary: "Two runs on the same tasks: newly solved, newly failed, persistent failures",
    tag: "runs",
    query: taskCompareQuerySchema,
    response: taskCompareSchema,
    errors: [404],
  }),
  searchTrajectories: defineRoute({
    id: "searchTrajectories",
    method: "GET",
    path: "/search/trajectories",
    summary: "Trajectories of runs or a project by words in their turns, outcome, length, return, step, task, and conditions one turn meets",
    tag: "rollouts",
    query: trajectorySearchQuerySchema,
    response: trajectorySearchResultSchema,
  }),
  compare: defineRoute({ id: "compareRuns", method: "GET", path: "/compare", summary: "Runs to compare and the union of their metric keys", tag: "runs", query: compareQuerySchema, response: runComparisonSchema, errors: [404] }),
  creditOverview: defineRoute({
    id: "creditOverview",
    method: "GET",
    path: "/runs/{id}/credit",
    summary: "Credit over training: step x turn-index advantage and per-step batch diagnostics",
    tag: "credit",
    query: creditOverviewQuerySchema,
    response: creditOverviewSchema,
  }),
  groupCredit: defineRoute({
    id: "groupCredit",
    method: "GET",
    path: "/runs/{id}/steps/{step}/groups/{groupId}/credit",
    summary: "A task group's per-turn advantages (heatmap): as stored, or recomputed with any estimator over the step's batch",
    tag: "credit",
    query: creditSourceQuerySchema,
    response: groupCreditSchema,
  }),
  importUpload: defineRoute({
    id: "uploadImport",
    method: "POST",
    path: "/imports",
    summary: "Upload a verl dump, TensorBoard log, MLflow store or generic JSONL file (raw bytes; archives as .tar/.tar.gz/.zip) and queue its import job",
    tag: "ingest",
    query: importUploadQuerySchema,
    bodyType: "application/octet-stream",
    response: importSchema,
    maxBodyBytes: maxUploadBytes(),
  }),
  importsList: defineRoute({
    id: "listImports",
    method: "GET",
    path: "/imports",
    summary: "Uploads and their import jobs, most recent first",
    tag: "ingest",
    query: z.object({ page: queryInt(1, 1_000_000).default(1), pageSize: queryInt(1, 100).default(20) }).strict(),
    response: page("imports", importSchema),
  }),
  importGet: defineRoute({
    id: "getImport",
    method: "GET",
    path: "/imports/{id}",
    summary: "An import: its upload, its job (status, progress) and, once done, rows imported and rejected with reasons and the runs made",
    tag: "ingest",
    query: none,
    response: importSchema,
  }),
  importCancel: defineRoute({
    id: "cancelImport",
    method: "POST",
    path: "/imports/{id}/cancel",
    summary: "Cancel an import (a running one stops within 5 s; rows stored so far stay, and a new upload of the same file completes them)",
    tag: "ingest",
    body: emptyBodySchema,
    response: importSchema,
    status: 200,
    errors: [409],
  }),
  jobsList: defineRoute({ id: "listJobs", method: "GET", path: "/jobs", summary: "The job queue: jobs by status, kind or run, paginated", tag: "jobs", query: jobListQuerySchema, response: jobListSchema }),
  jobGet: defineRoute({ id: "getJob", method: "GET", path: "/jobs/{id}", summary: "Job status and progress", tag: "jobs", query: none, response: jobSchema }),
  jobLog: defineRoute({ id: "jobLog", method: "GET", path: "/jobs/{id}/log", summary: "Tail a job's log", tag: "jobs", query: logQuerySchema, response: logLinesSchema }),
  openapi: defineRoute({ id: "openapi", method: "GET", path: "/openapi.json", summary: "This document", tag: "meta", query: none, response: openApiDocumentSchema }),
} as const;

export const ROUTES = Object.values(routes);
