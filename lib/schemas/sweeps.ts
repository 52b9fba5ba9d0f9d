// Sweeps: a grid of config values x seeds launched at once as one group of runs (POST /sweeps).
import { z } from "zod";
import { queryInt, tagsSchema } from "./common";

/** The most a sweep may launch: varied paths, values per path, seeds, and runs in all (the product). */
export const SWEEP_LIMITS = { params: 8, values: 32, seeds: 64, runs: 256 } as const;

/** A dotted path into a launch config: `estimator`, `envConfig.size`, `params.lr`. */
export const configPathSchema = z
  .string()
  .max(200)
  .regex(/^[A-Za-z_][\w-]*(?:\.[A-Za-z_][\w-]*)*$/, "must be a dotted path into the config, like estimator or envConfig.size");

/** One value a grid sets: a JSON scalar (a number, a text, true/false, null). */
export const sweepValueSchema = z.union([z.string().max(1000), z.number(), z.boolean(), z.null()]);
export type SweepValue = z.infer<typeof sweepValueSchema>;

/** What a sweep's run stores of its grid point: the value at each varied path, its seed, and its place in the launch order. */
export const sweepParamsSchema = z
  .object({ point: z.record(z.string(), sweepValueSchema), seed: z.number().int(), index: z.number().int() })
  .meta({ id: "SweepParams" });
export type SweepParams = z.infer<typeof sweepParamsSchema>;

const seedSchema = z
  .number()
  .int()
  .min(0)
  .max(2 ** 31 - 1);

export const launchSweepSchema = z
  .object({
    jobKind: z.string().min(1).max(64).describe("A launchable job kind (GET /envs lists them): each run of the sweep is launched as POST /runs would."),
    config: z.record(z.string(), z.unknown()).default({}).describe("The base config: each run's config is this with its grid point's values and its seed set."),
    grid: z
      .array(
        z
          .object({
            path: configPathSchema.describe("Dotted path into the config."),
            values: z.array(sweepValueSchema).min(1).max(SWEEP_LIMITS.values).describe("The values it takes, each in its own runs."),
          })
          .strict(),
      )
      .max(SWEEP_LIMITS.params)
      .default([])
      .describe("The varied params: the sweep launches every combination of their values (the cartesian product), each with every seed."),
    seeds: z.array(seedSchema).min(1).max(SWEEP_LIMITS.seeds).default([0]).describe("The seeds each grid point runs with."),
    seedPath: configPathSchema.default("seed").describe("Where the seed goes in the config (`seed` for the built-in kinds)."),
    project: z.string().min(1).max(100).default("default"),
    name: z.string().min(1).max(150).optional().describe("Sweep name; its runs are named `<name>/<point>/s<seed>`. Generated when omitted."),
    tags: tagsSchema.describe("Tags of every run of the sweep."),
    notes: z.string().max(10_000).default(""),
    priority: z.number().int().min(-100).max(100).default(0),
    timeoutMs: z
      .number()
      .int()
      .min(1_000)
      .max(2 ** 31 - 1)
      .nullable()
      .optional(),
  })
  .strict()
  .superRefine((b, ctx) => {
    const paths = b.grid.map((g) => g.path);
    b.grid.forEach((g, i) => {
      const clash = paths.findIndex((p, j) => j !== i && (p === g.path || p.startsWith(`${g.path}.`) || g.path.startsWith(`${p}.`)));
      if (clash >= 0 && clash < i) ctx.addIssue({ code: "custom", path: ["grid", i, "path"], message: `overlaps grid[${clash}].path (${paths[clash]})` });
      if (g.path === b.seedPath || g.path.startsWith(`${b.seedPath}.`) || b.seedPath.startsWith(`${g.path}.`))
        ctx.addIssue({ code: "custom", path: ["grid", i, "path"], message: `overlaps seedPath (${b.seedPath}): list seeds in \`seeds\`` });
      const seen = new Set<string>();
      g.values.forEach((v, j) => {
        const k = JSON.stringify(v);
        if (seen.has(k)) ctx.addIssue({ code: "custom", path: ["grid", i, "values", j], message: `repeats the value ${k}` });
        seen.add(k);
      });
    });
    if (new Set(b.seeds).size !== b.seeds.length) ctx.addIssue({ code: "custom", path: ["seeds"], message: "repeats a seed" });
    const runs = sweepSize(b);
    if (runs > SWEEP_LIMITS.runs)
      ctx.addIssue({ code: "custom", path: ["grid"], message: `makes ${runs} runs (values multiplied, times seeds); at most ${SWEEP_LIMITS.runs}` });
  })
  .meta({ id: "LaunchSweep" });
export type LaunchSweep = z.infer<typeof launchSweepSchema>;

/** Runs a sweep launches: the product of the value counts, times the seeds. */
export function sweepSize(b: { grid: readonly { values: readonly unknown[] }[]; seeds: readonly unknown[] }): number {
  return b.grid.reduce((n, g) => n * g.values.length, 1) * b.seeds.length;
}

/** Every grid point in launch order (the last path varies fastest): path -> value. */
export function gridPoints(grid: readonly { path: string; values: readonly SweepValue[] }[]): Record<string, SweepValue>[] {
  let points: Record<string, SweepValue>[] = [{}];
  for (const g of grid) points = points.flatMap((p) => g.values.map((v) => ({ ...p, [g.path]: v })));
  return points;
}

/** A grid point as a group label: `estimator=gigpo, lr=0.001` (empty grid: `all`). */
export function pointLabel(point: Record<string, SweepValue>): string {
  const parts = Object.entries(point).map(([k, v]) => `${k}=${typeof v === "string" ? v : JSON.stringify(v)}`);
  return parts.length ? parts.join(", ") : "all";
}

/** A sweep with its runs' progress (GET /sweeps/{id}, the rows of GET /sweeps). */
export const sweepSchema = z
  .object({
    id: z.string(),
    project: z.string(),
    name: z.string(),
    jobKind: z.string(),
    spec: z.object({
      config: z.record(z.string(), z.unknown()),
      grid: z.array(z.object({ path: z.string(), values: z.array(sweepValueSchema) })),
      seeds: z.array(z.number()),
      seedPath: z.string(),
    }),
    createdAt: z.string(),
    runIds: z.array(z.string()).describe("The sweep's runs in launch order."),
    status: z.record(z.string(), z.number()).describe("Runs per status (queued, running, succeeded, failed, canceled)."),
  })
  .meta({ id: "Sweep" });
export type SweepOut = z.infer<typeof sweepSchema>;

export const sweepListQuerySchema = z
  .object({
    project: z.string().max(100).optional(),
    limit: queryInt(1, 200).default(50),
  })
  .strict();
export const sweepListSchema = z.object({ sweeps: z.array(sweepSchema) }).meta({ id: "SweepList" });
