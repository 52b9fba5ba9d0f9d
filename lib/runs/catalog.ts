// What can be launched, as JSON Schema made from the zod schemas (the launch form and API clients read it).
import { z } from "zod";
import { envRegistry } from "../envs/registry";
import { launchableKinds } from "../jobs/kinds";
import { loadTrainers, TrainersFileError } from "../jobs/trainers";
import { trainerParamsZod } from "../schemas/trainers";
import { estimators } from "../credit";
import type { EstimatorInfo } from "../schemas/credit";
import type { JsonSchema } from "../schemas/json-schema";

const toJsonSchema = (s: z.ZodType) => z.toJSONSchema(s, { io: "input", unrepresentable: "any" }) as JsonSchema;

export function envCatalog() {
  return Object.values(envRegistry).map((spec) => ({
    id: spec.id,
    title: spec.title,
    description: spec.description,
    configSchema: toJsonSchema(spec.configSchema as z.ZodType),
  }));
}

/**
 * The operator's trainer templates (TURNLENS_TRAINERS), each with its params as JSON Schema; a file
 * that cannot be read gives no templates and its error (shown by the form, naming the file and field).
 */
export function trainerCatalog(): { trainers: { id: string; title: string; description: string; paramsSchema: JsonSchema }[]; trainersError: string | null } {
  try {
    const templates = loadTrainers();
    return {
      trainers: Object.entries(templates).map(([id, t]) => ({
        id,
        title: t.title,
        description: t.description,
        paramsSchema: toJsonSchema(trainerParamsZod(t)),
      })),
      trainersError: null,
    };
  } catch (e) {
    if (!(e instanceof TrainersFileError)) throw e;
    return { trainers: [], trainersError: e.message };
  }
}

/** The environments and the launchable job kinds of the job-kind registry (lib/jobs/kinds.ts); `trainer` only with templates declared. */
export function launchCatalog() {
  const trainers = trainerCatalog();
  return {
    envs: envCatalog(),
    jobKinds: launchableKinds()
      .filter((k) => k.id !== "trainer" || trainers.trainers.length > 0)
      .map((k) => ({ id: k.id, title: k.title, description: k.description, configSchema: toJsonSchema(k.payload) })),
    ...trainers,
  };
}

/** The estimators the UI offers, from the lib/credit registry: server-side, pages pass it to client components. */
export function estimatorCatalog(): EstimatorInfo[] {
  return Object.values(estimators).map((s) => ({
    id: s.id,
    title: s.title,
    paper: { title: s.paper.title, year: s.paper.year, url: s.paper.url },
    needs: s.needs.filter((f) => f !== "reward").map(String),
    paramsSchema: toJsonSchema(s.paramsSchema),
  }));
}
