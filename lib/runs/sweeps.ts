// Launching a sweep: the grid's cartesian product times the seeds, each point launched as POST /runs
// would launch it (the same schema, the same registries: any launchable kind), all runs, their jobs
// and the sweep row in one transaction: every point is validated before anything is written.
import { writeTransaction } from "../db/raw";
import { createRun } from "../db/runs";
import { insertSweep } from "../db/sweeps";
import { enqueueInTransaction } from "../jobs/queue";
import { getJobKind, launchableKinds } from "../jobs/kinds";
import { DomainError, InvalidInputError, zodIssues, type Issue } from "../schemas/errors";
import { launchRunSchema } from "../schemas/runs";
import { gridPoints, pointLabel, type LaunchSweep, type SweepValue } from "../schemas/sweeps";
import { prepareLaunch } from "./launch";

/** `config` with `value` at the dotted `path` (objects created on the way); null when a step of the path is not an object. */
function setPath(config: Record<string, unknown>, path: string, value: unknown): Record<string, unknown> | null {
  const out = structuredClone(config);
  const parts = path.split(".");
  let at: Record<string, unknown> = out;
  for (const p of parts.slice(0, -1)) {
    if (!Object.hasOwn(at, p)) at[p] = {};
    const next = at[p];
    if (next === null || typeof next !== "object" || Array.isArray(next)) return null;
    at = next as Record<string, unknown>;
  }
  at[parts[parts.length - 1]] = value;
  return out;
}

const fail = (path: string, message: string): never => {
  throw new InvalidInputError(`${path}: ${message}`, [{ path, message }]);
};

/**
 * Names a point's failing field in the sweep body: a grid value (`body.grid.0.values.1`), a seed
 * (`body.seeds.2`) or the base config (`body.config.x`), and says which point it was.
 */
function pointIssues(body: LaunchSweep, point: Record<string, SweepValue>, seed: number, issues: Issue[]): InvalidInputError {
  const at = `grid point ${pointLabel(point)}, seed ${seed}`;
  const mapped = issues.map((i) => {
    const rel = i.path.replace(/^body\./, "");
    // the value itself, a field inside it, or an object on its path that the value made
    const gi = body.grid.findIndex(
      (g) => rel === `config.${g.path}` || rel.startsWith(`config.${g.path}.`) || (rel !== "config" && `config.${g.path}`.startsWith(`${rel}.`)),
    );
    const path =
      gi >= 0
        ? `body.grid.${gi}.values.${body.grid[gi].values.indexOf(point[body.grid[gi].path])}`
        : rel === `config.${body.seedPath}`
          ? `body.seeds.${body.seeds.indexOf(seed)}`
          : `body.${rel}`;
    return { path, message: `${i.message} (${at})` };
  });
  return new InvalidInputError(mapped.map((i) => `${i.path}: ${i.message}`).join("; "), mapped);
}

/** Creates the sweep, its runs and their queued jobs (one transaction), or a 4xx naming the field and nothing written. */
export function launchSweep(body: LaunchSweep): { sweepId: string; runIds: string[] } {
  if (!getJobKind(body.jobKind)?.launchable) {
    const known = launchableKinds()
      .map((k) => k.id)
      .join(", ");
    fail("body.jobKind", `"${body.jobKind}" cannot be launched (known: ${known})`);
  }
  const name = body.name ?? `sweep-${body.jobKind}-${body.grid.map((g) => g.path).join("-") || "seeds"}`;
  const prepared = gridPoints(body.grid).flatMap((point) =>
    body.seeds.map((seed) => {
      let config: Record<string, unknown> | null = body.config;
      for (const [path, value] of [...Object.entries(point), [body.seedPath, seed] as const]) {
        config = config && setPath(config, path, value);
        if (!config)
          fail(
            path === body.seedPath ? "body.seedPath" : `body.grid.${body.grid.findIndex((g) => g.path === path)}.path`,
            `${path} runs through a value that is not an object in the config`,
          );
      }
      const parsed = launchRunSchema.safeParse({
        jobKind: body.jobKind,
        config,
        project: body.project,
        name: `${name}/${pointLabel(point)}/s${seed}`,
        tags: body.tags,
        notes: body.notes,
        priority: body.priority,
        ...(body.timeoutMs !== undefined ? { timeoutMs: body.timeoutMs } : {}),
      });
      if (!parsed.success) throw pointIssues(body, point, seed, zodIssues(parsed.error, "body"));
      try {
        return { point, seed, ...prepareLaunch(parsed.data) };
      } catch (err) {
        if (err instanceof DomainError && err.kind === "invalid") throw pointIssues(body, point, seed, err.issues);
        throw err;
      }
    }),
  );
  const spec = { config: body.config, grid: body.grid, seeds: body.seeds, seedPath: body.seedPath };
  return writeTransaction(null, (db) => {
    const sweepId = insertSweep({ project: body.project, name, jobKind: body.jobKind, spec }, db);
    const runIds = prepared.map((p, index) => {
      const { runId } = createRun({ ...p.run, sweepId, sweepParams: { point: p.point, seed: p.seed, index } }, db);
      enqueueInTransaction(db, { ...p.job, runId });
      return runId;
    });
    return { sweepId, runIds };
  });
}
