// The operator's trainer templates (the file TURNLENS_TRAINERS names, JSON), read by the web server
// (the launch form and POST /runs) and by the workers (which build the command from their own copy:
// a stored job names only a template id and params). Schema and substitution: lib/schemas/trainers.ts.
import fs from "node:fs";
import path from "node:path";
import { ConflictError, InvalidInputError, zodIssues } from "../schemas/errors";
import {
  PLACEHOLDER,
  trainerLaunchConfigSchema,
  trainerParamsZod,
  trainersFileSchema,
  type TrainerLaunchConfig,
  type TrainersFile,
  type TrainerTemplate,
} from "../schemas/trainers";

/**
 * TURNLENS_TRAINERS could not be read or does not declare valid templates: the message names the
 * file and the field. A launch then gets 409 (the server's set-up refuses it, not the request).
 */
export class TrainersFileError extends ConflictError {
  constructor(message: string) {
    super(message, [{ path: "body.config.template", message: "the server's trainer templates cannot be read" }]);
  }
}

let cache: { file: string; mtimeMs: number; size: number; templates: TrainersFile } | null = null;

/** The file TURNLENS_TRAINERS names (absolute), or null when unset. */
export function trainersFilePath(env: Record<string, string | undefined> = process.env): string | null {
  const f = env.TURNLENS_TRAINERS?.trim();
  return f ? path.resolve(f) : null;
}

/** The declared templates ({} when TURNLENS_TRAINERS is unset); read again when the file changes. Throws TrainersFileError. */
export function loadTrainers(file: string | null = trainersFilePath()): TrainersFile {
  if (!file) return {};
  let st: fs.Stats;
  try {
    st = fs.statSync(file);
  } catch (e) {
    throw new TrainersFileError(`TURNLENS_TRAINERS: cannot read ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
  if (cache && cache.file === file && cache.mtimeMs === st.mtimeMs && cache.size === st.size) return cache.templates;
  if (st.size > 1_000_000) throw new TrainersFileError(`${file}: ${st.size} bytes; a trainers file is at most 1 MB`);
  let json: unknown;
  try {
    json = JSON.parse(fs.readFileSync(file, "utf8"));
  } catch (e) {
    throw new TrainersFileError(`${file}: not JSON: ${(e as Error).message}`);
  }
  const r = trainersFileSchema.safeParse(json);
  if (!r.success)
    throw new TrainersFileError(
      `${file}: ${zodIssues(r.error, "")
        .map((i) => `${i.path.replace(/^\./, "") || "(top)"}: ${i.message}`)
        .join("; ")}`,
    );
  // a relative cwd is the file's folder's
  for (const t of Object.values(r.data)) t.cwd = path.resolve(path.dirname(file), t.cwd ?? ".");
  cache = { file, mtimeMs: st.mtimeMs, size: st.size, templates: r.data };
  return r.data;
}

/** What a launch resolves to: the template, its checked params (defaults filled in), and the process it starts. */
export interface ResolvedTrainer {
  id: string;
  template: TrainerTemplate;
  params: Record<string, string | number | boolean>;
  argv: string[];
  env: Record<string, string>;
  cwd: string;
}

/** `{name}` -> the param's text, inside the one string given (an argv element stays one element). */
function fill(text: string, params: Record<string, string | number | boolean>): string {
  return text.replace(PLACEHOLDER, (_, name: string) => String(params[name]));
}

/**
 * A launch's template and params checked against the operator's file: an unknown template, an
 * undeclared param or a value out of its declaration is an InvalidInputError naming the field
 * under `root` (body.config at launch, payload in the worker).
 */
export function resolveTrainer(cfg: TrainerLaunchConfig, root: string, templates: TrainersFile = loadTrainers()): ResolvedTrainer {
  const known = Object.keys(templates);
  if (!Object.hasOwn(templates, cfg.template)) {
    const list = known.join(", ") || `none (${trainersFilePath() ? "the TURNLENS_TRAINERS file declares none" : "TURNLENS_TRAINERS is not set"})`;
    throw new InvalidInputError(`${root}.template: unknown trainer template "${cfg.template}" (known: ${list})`, [
      { path: `${root}.template`, message: `unknown trainer template; known: ${list}` },
    ]);
  }
  const template = templates[cfg.template];
  const r = trainerParamsZod(template).safeParse(cfg.params);
  if (!r.success) {
    const issues = zodIssues(r.error, `${root}.params`);
    throw new InvalidInputError(`invalid ${cfg.template} params: ${issues.map((i) => `${i.path}: ${i.message}`).join("; ")}`, issues);
  }
  const params = r.data as Record<string, string | number | boolean>;
  const missing = template.command
    .concat(Object.values(template.env), template.cwd ?? "")
    .flatMap((s) => [...s.matchAll(PLACEHOLDER)].map((m) => m[1]))
    .filter((n) => params[n] === undefined);
  if (missing.length) {
    const names = [...new Set(missing)];
    throw new InvalidInputError(
      `${root}.params: ${names.join(", ")} required (no default)`,
      names.map((n) => ({ path: `${root}.params.${n}`, message: "required" })),
    );
  }
  return {
    id: cfg.template,
    template,
    params,
    argv: template.command.map((a) => fill(a, params)),
    env: Object.fromEntries(Object.entries(template.env).map(([k, v]) => [k, fill(v, params)])),
    cwd: fill(template.cwd ?? process.cwd(), params),
  };
}

/**
 * GPUs the worker gives a job: a trainer's template says how many (none for one that runs on Ray,
 * which assigns its own), every other kind one. A payload that does not resolve gets one: its
 * runner fails it with the reason.
 */
export function gpusWanted(job: { kind: string; payload: unknown }): number {
  if (job.kind !== "trainer") return 1;
  try {
    const t = resolveTrainer(trainerLaunchConfigSchema.parse(job.payload), "payload");
    return t.template.ray ? 0 : t.template.gpus;
  } catch {
    return 1;
  }
}
