// Labels: a project's label set and the labels on trajectories and turns (lib/db/labels.ts).
import { z } from "zod";
import { idSchema, queryInt } from "./common";

/** A project's labels at most: one per digit key of the trajectory view. */
export const MAX_LABELS = 9;
export const MAX_LABEL_NAME = 40;
export const MAX_LABEL_NOTE = 1000;

export const labelNameSchema = z
  .string()
  .trim()
  .min(1)
  .max(MAX_LABEL_NAME)
  .regex(/^[\p{L}\p{N}\p{P}\p{S} ]+$/u, "must be letters, digits, punctuation and spaces");

export const labelSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    position: z.number().describe("1-9: the digit that applies it in the trajectory view."),
    uses: z.number().describe("Trajectories and turns carrying it."),
  })
  .meta({ id: "Label" });
export type LabelOut = z.infer<typeof labelSchema>;

export const labelListQuerySchema = z.object({ project: z.string().min(1).max(100).describe("The project, by name.") }).strict();
export const labelListSchema = z.object({ labels: z.array(labelSchema) }).meta({ id: "LabelList" });

export const createLabelSchema = z
  .object({
    project: z.string().min(1).max(100).describe("The project, by name."),
    name: labelNameSchema,
    position: z.number().int().min(1).max(MAX_LABELS).optional().describe("Its digit key; default the first free one."),
  })
  .strict();

export const trajectoryLabelSchema = z
  .object({
    id: z.string(),
    labelId: z.string(),
    name: z.string(),
    turn: z.number().nullable().describe("The labelled turn's index; null: the whole trajectory."),
    note: z.string(),
    createdAt: z.string(),
  })
  .meta({ id: "TrajectoryLabel" });
export type TrajectoryLabelOut = z.infer<typeof trajectoryLabelSchema>;
export const trajectoryLabelListSchema = z.object({ labels: z.array(trajectoryLabelSchema) }).meta({ id: "TrajectoryLabelList" });

export const applyLabelSchema = z
  .object({
    labelId: idSchema,
    turn: z.number().int().min(0).max(1_000_000).nullable().default(null).describe("A turn's index; null or absent: the whole trajectory."),
    note: z.string().max(MAX_LABEL_NOTE).default(""),
  })
  .strict();

export const removeLabelQuerySchema = z
  .object({ turn: queryInt(0, 1_000_000).optional().describe("The labelled turn; absent: the trajectory's own label.") })
  .strict();

/** Labels per step of a run: how many trajectories or turns carry each label at each step. */
export const labelStepsSchema = z
  .object({
    labels: z.array(z.object({ id: z.string(), name: z.string(), position: z.number() })),
    points: z.array(z.object({ step: z.number(), labelId: z.string(), count: z.number() })),
  })
  .meta({ id: "LabelSteps" });
export type LabelSteps = z.infer<typeof labelStepsSchema>;

/** A run's labels, one per line of the JSON Lines export. */
export const labelExportRowSchema = z.object({
  step: z.number(),
  task: z.string(),
  index: z.number(),
  turn: z.number().nullable(),
  label: z.string(),
  note: z.string(),
  trajectoryId: z.string().nullable(),
  createdAt: z.string(),
});
