// Kind -> runner, from the job-kind registry (lib/jobs/kinds.ts). Runner modules are imported only
// here, lazily, by the job process that runs a job of that kind (workers/job-process.ts).
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { getJobKind } from "../../lib/jobs/kinds";
import type { JobRunner } from "./types";

// Registry module paths are relative to the project root (this file's grandparent).
const ROOT = fileURLToPath(new URL("../..", import.meta.url));

/** The runner of `kind`, or undefined for a kind the registry does not declare. */
export async function loadRunner(kind: string): Promise<JobRunner | undefined> {
  const spec = getJobKind(kind);
  if (!spec) return undefined;
  const mod = (await import(pathToFileURL(path.join(ROOT, spec.runner.module)).href)) as Record<string, unknown>;
  const runner = mod[spec.runner.export];
  if (typeof runner !== "function") throw new Error(`job kind "${kind}": ${spec.runner.module} exports no function "${spec.runner.export}"`);
  return runner as JobRunner;
}
