// Jobs as the API shows them: one job, and the paginated jobs list.
import { countJobs, pageJobs, type Job, type JobFilter } from "../db/jobs";
import type { RawDb } from "../db/raw";
import type { JobList, JobOut } from "../schemas/jobs";
import type { JobStatus } from "./schemas";

export function toJobOut(j: Job): JobOut {
  return {
    id: j.id,
    runId: j.runId,
    kind: j.kind,
    status: j.status as JobOut["status"],
    priority: j.priority,
    timeoutMs: j.timeoutMs,
    attempts: j.attempts,
    maxAttempts: j.maxAttempts,
    progress: j.progress,
    progressMessage: j.progressMessage,
    cancelRequested: j.cancelRequested,
    error: j.error,
    leaseOwner: j.leaseOwner,
    createdAt: j.createdAt.toISOString(),
    startedAt: j.startedAt?.toISOString() ?? null,
    finishedAt: j.finishedAt?.toISOString() ?? null,
  };
}

export interface ListJobsQuery {
  /** any of these statuses (none or empty: all) */
  status?: readonly JobStatus[];
  kind?: string;
  runId?: string;
  /** 1-based */
  page?: number;
  pageSize?: number;
}

/**
 * One page of jobs. Order: queued jobs first, in the order the queue would claim them (priority
 * desc, availableAt, createdAt); then every other job most recent first (createdAt desc). So a
 * `status=queued` list is the queue itself, and an unfiltered list shows what waits before what ran.
 */
export async function listJobs(q: ListJobsQuery = {}, opts: { db?: RawDb } = {}): Promise<JobList> {
  const db = opts.db;
  const page = Math.max(1, Math.floor(q.page ?? 1));
  const pageSize = Math.max(1, Math.min(500, Math.floor(q.pageSize ?? 50)));
  const base: JobFilter = { ...(q.kind ? { kind: q.kind } : {}), ...(q.runId ? { runId: q.runId } : {}) };
  const wanted = q.status?.length ? new Set(q.status) : null;
  const others = wanted ? [...wanted].filter((s) => s !== "queued") : null;
  const queuedWhere: JobFilter | null = !wanted || wanted.has("queued") ? { ...base, status: "queued" } : null;
  const otherWhere: JobFilter | null = others === null ? { ...base, statusNot: "queued" } : others.length ? { ...base, statusIn: others } : null;

  const queuedTotal = queuedWhere ? countJobs(queuedWhere, db) : 0;
  const otherTotal = otherWhere ? countJobs(otherWhere, db) : 0;
  // The page is a window over [queued in claim order] ++ [others, most recent first].
  const skip = (page - 1) * pageSize;
  const jobs: Job[] = [];
  if (queuedWhere && skip < queuedTotal) jobs.push(...pageJobs(queuedWhere, "claim", skip, pageSize, db));
  if (otherWhere && jobs.length < pageSize) jobs.push(...pageJobs(otherWhere, "recent", Math.max(0, skip - queuedTotal), pageSize - jobs.length, db));
  return { jobs: jobs.map(toJobOut), total: queuedTotal + otherTotal, page, pageSize };
}
