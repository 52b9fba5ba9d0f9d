// Query factories of labels and task timelines (lib/db/labels.ts, lib/db/task-timeline.ts).
import { queryOptions } from "@tanstack/react-query";
import { callRoute } from "../client/api";
import { routes } from "../api/routes";

export const labelsQuery = (project: string) =>
  queryOptions({ queryKey: ["labels", project], queryFn: () => callRoute(routes.labelsList, { query: { project } }), enabled: !!project });

export const trajectoryLabelsQuery = (id: string) =>
  queryOptions({ queryKey: ["trajectory", id, "labels"], queryFn: () => callRoute(routes.trajectoryLabels, { params: { id } }), enabled: !!id });

export const labelStepsQuery = (runId: string) =>
  queryOptions({ queryKey: ["run", runId, "label-steps"], queryFn: () => callRoute(routes.runLabelSteps, { params: { id: runId } }) });

/** A task by uid (`task`) or seed, across the given runs. */
export const taskTimelineQuery = (runs: string[], task: { task?: string; prompt?: string; seed?: string; envId?: string }) =>
  queryOptions({
    queryKey: ["task-timeline", runs, task.task ?? null, task.seed ?? null, task.envId ?? null, task.prompt ?? null],
    queryFn: () => callRoute(routes.taskTimeline, { query: { runs: runs.join(","), ...task } }),
    enabled: runs.length > 0 && (!!task.task || !!task.seed || !!task.prompt),
    staleTime: 10_000,
    retry: false,
  });

export const trajectoryDiffQuery = (a: string, b: string) =>
  queryOptions({
    queryKey: ["trajectory-diff", a, b],
    queryFn: () => callRoute(routes.trajectoryDiff, { query: { a, b } }),
    enabled: !!a && !!b,
    staleTime: Infinity, // stored trajectories never change
    retry: false,
  });
