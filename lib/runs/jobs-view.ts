// Job rows as the API shows them.
import { getJob, tailLog, toJobOut } from "../jobs";
import type { JobOut, LogLines } from "../schemas/jobs";

export async function jobView(id: string): Promise<JobOut> {
  return toJobOut(await getJob(id));
}

export async function jobLog(id: string, after: number, limit: number): Promise<LogLines> {
  await getJob(id); // 404 for an unknown job
  const { lines, lastSeq } = await tailLog(id, after, limit);
  return { lines, next: lastSeq };
}
