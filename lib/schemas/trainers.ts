// Trainer templates: the operator's own training commands (verl, TRL, SkyRL, a script), declared in
// the file TURNLENS_TRAINERS names (lib/jobs/trainers.ts reads it). HTTP never carries a command:
// a launch names a template and gives its params, which are checked against the template's
// declarations here, and every `{param}` fills in inside one argv element (never a shell).
import { z } from "zod";

const IDENT = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** `{name}` inside an argv element, an env value or the cwd */
export const PLACEHOLDER = /\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

const described = { description: z.string().max(2_000).optional(), title: z.string().max(200).optional() };

/** One declared parameter: what the launch form shows and what a launch may give. */
export const trainerParamSchema = z.discriminatedUnion("type", [
  z
    .object({
      type: z.literal("number"),
      default: z.number().optional(),
      min: z.number().optional(),
      max: z.number().optional(),
      ...described,
    })
    .strict(),
  z
    .object({
      type: z.literal("integer"),
      default: z.number().int().optional(),
      min: z.number().int().optional(),
      max: z.number().int().optional(),
      ...described,
    })
    .strict(),
  z
    .object({
      type: z.literal("string"),
      default: z.string().optional(),
      /** the only values allowed (a select in the form) */
      enum: z.array(z.string().min(1).max(500)).min(1).max(200).optional(),
      /** a regular expression the whole value must match */
      pattern: z.string().max(500).optional(),
      maxLength: z.number().int().min(1).max(4_096).default(500),
      ...described,
    })
    .strict(),
  z.object({ type: z.literal("boolean"), default: z.boolean().optional(), ...described }).strict(),
]);
export type TrainerParam = z.infer<typeof trainerParamSchema>;

/** One template of the operator's file. */
export const trainerTemplateSchema = z
  .object({
    title: z.string().min(1).max(200),
    description: z.string().max(4_000).default(""),
    /** argv: the program and its arguments; `{param}` fills in inside one element */
    command: z.array(z.string().max(4_096)).min(1).max(500),
    params: z.record(z.string().regex(IDENT, "a parameter name is a letter or _ followed by letters, digits or _"), trainerParamSchema).default({}),
    /** extra environment of the process (values may use `{param}`) */
    env: z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "an environment variable name"), z.string().max(4_096)).default({}),
    /** working directory, relative to the file's folder unless absolute */
    cwd: z.string().min(1).max(1_000).optional(),
    /** GPUs the process gets (CUDA_VISIBLE_DEVICES from the worker's free GPUs; 0: none, CPU) */
    gpus: z.number().int().min(0).max(64).default(0),
    /** submit the command to the Ray cluster at the worker's TURNLENS_RAY_ADDRESS instead of running it on the worker */
    ray: z.boolean().default(false),
    /** CPUs Ray reserves for the entrypoint (ray: true) */
    cpus: z.number().min(0).max(1_024).default(1),
  })
  .strict()
  .superRefine((t, ctx) => {
    const check = (text: string, path: (string | number)[]) => {
      for (const m of text.matchAll(PLACEHOLDER))
        if (!Object.hasOwn(t.params, m[1]))
          ctx.addIssue({ code: "custom", path, message: `{${m[1]}} names no parameter (declared: ${Object.keys(t.params).join(", ") || "none"})` });
    };
    for (const [i, a] of t.command.entries()) check(a, ["command", i]);
    for (const [k, v] of Object.entries(t.env)) check(v, ["env", k]);
    if (t.cwd) check(t.cwd, ["cwd"]);
    for (const [name, p] of Object.entries(t.params)) {
      if (p.type === "string" && p.pattern !== undefined) {
        try {
          new RegExp(p.pattern);
        } catch (e) {
          ctx.addIssue({ code: "custom", path: ["params", name, "pattern"], message: `not a regular expression: ${(e as Error).message}` });
        }
      }
      if ((p.type === "number" || p.type === "integer") && p.min !== undefined && p.max !== undefined && p.min > p.max)
        ctx.addIssue({ code: "custom", path: ["params", name, "max"], message: "is below min" });
    }
  });
export type TrainerTemplate = z.infer<typeof trainerTemplateSchema>;

/** The whole file: template id -> template. */
export const trainersFileSchema = z.record(
  z.string().regex(/^[a-z0-9][a-z0-9_.-]{0,63}$/, "a template id is 1-64 characters: a-z, 0-9, and _ . - after the first"),
  trainerTemplateSchema,
);
export type TrainersFile = z.infer<typeof trainersFileSchema>;

/** POST /runs with jobKind "trainer": a template id and its params, nothing else (no command, no env). */
export const trainerLaunchConfigSchema = z
  .object({
    template: z.string().min(1).max(64).describe("Id of a trainer template in the operator's TURNLENS_TRAINERS file."),
    params: z
      .record(z.string().max(100), z.union([z.string().max(4_096), z.number(), z.boolean()]))
      .default({})
      .describe("The template's parameters; omitted ones take the template's defaults."),
  })
  .strict();
export type TrainerLaunchConfig = z.infer<typeof trainerLaunchConfigSchema>;

/** The zod schema of a template's params: types, min/max, enum, pattern; no undeclared names; defaults filled in. */
export function trainerParamsZod(t: TrainerTemplate): z.ZodObject {
  const shape: Record<string, z.ZodType> = {};
  for (const [name, p] of Object.entries(t.params)) {
    let s: z.ZodType;
    if (p.type === "number" || p.type === "integer") {
      let n = p.type === "integer" ? z.number().int() : z.number();
      if (p.min !== undefined) n = n.min(p.min);
      if (p.max !== undefined) n = n.max(p.max);
      s = n;
    } else if (p.type === "boolean") s = z.boolean();
    else if (p.enum) s = z.enum(p.enum as [string, ...string[]]);
    else {
      let str = z
        .string()
        .max(p.maxLength)
        // a value starting with "-" would read as an option where the element is the whole placeholder
        .refine((v) => !v.startsWith("-"), "must not start with '-'")
        .refine((v) => ![...v].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f), "must not contain control characters");
      if (p.pattern !== undefined) str = str.regex(new RegExp(`^(?:${p.pattern})$`), `must match ${p.pattern}`);
      s = str;
    }
    if (p.description) s = s.describe(p.description);
    if (p.title) s = s.meta({ title: p.title });
    shape[name] = p.default !== undefined ? s.default(p.default as never) : s;
  }
  return z.object(shape).strict();
}
