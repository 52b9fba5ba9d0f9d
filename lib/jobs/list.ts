// Jobs as the API shows them: one job, and the paginated jobs list.
import { getDb, type Db } from "../db/client";
import type { Job, Prisma } from "../generated/prisma/client";
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

// Queued jobs in the order the queue claims them: higher priority first, then the one that may run
// soonest (back-off), then the oldest.
const CLAIM_ORDER: Prisma.JobOrderByWithRelationInput[] = [{ priority: "desc" }, { availableAt: "asc" }, { createdAt: "asc" }, { id: "asc" }];
const RECENT_FIRST: Prisma.JobOrderByWithRelationInput[] = [{ createdAt: "desc" }, { id: "desc" }];

/**
 * One page of jobs. Order: queued jobs first, in the order the queue would claim them (priority
 * desc, availableAt, createdAt); then every other job most recent first (createdAt desc). So a
 * `status=queued` list is the queue itself, and an unfiltered list shows what waits before what ran.
 */
export async function listJobs(q: ListJobsQuery = {}, opts: { db?: Db } = {}): Promise<JobList> {
  const db = opts.db ?? getDb();
  const page = Math.max(1, Math.floor(q.page ?? 1));
  const pageSize = Math.max(1, Math.min(500, Math.floor(q.pageSize ?? 50)));
  const base: Prisma.JobWhereInput = { ...(q.kind ? { kind: q.kind } : {}), ...(q.runId ? { runId: q.runId } : {}) };
  const wanted = q.status?.length ? new Set(q.status) : null;
  const others = wanted ? [...wanted].filter((s) => s !== "queued") : null;
  const queuedWhere: Prisma.JobWhereInput | null = !wanted || wanted.has("queued") ? { ...base, status: "queued" } : null;
  const otherWhere: Prisma.JobWhereInput | null =
    others === null ? { ...base, status: { not: "queued" } } : others.length ? { ...base, status: { in: others } } : null;

  const [queuedTotal, otherTotal] = await Promise.all([
    queuedWhere ? db.job.count({ where: queuedWhere }) : 0,
    otherWhere ? db.job.count({ where: otherWhere }) : 0,
  ]);
  // The page is a window over [queued in claim order] ++ [others, most recent first].
  const skip = (page - 1) * pageSize;
  const jobs: Job[] = [];
  if (queuedWhere && skip < queuedTotal) jobs.push(...(await db.job.findMany({ where: queuedWhere, orderBy: CLAIM_ORDER, skip, take: pageSize })));
  if (otherWhere && jobs.length < pageSize) {
    jobs.push(...(await db.job.findMany({ where: otherWhere, orderBy: RECENT_FIRST, skip: Math.max(0, skip - queuedTotal), take: pageSize - jobs.length })));
  }
  return { jobs: jobs.map(toJobOut), total: queuedTotal + otherTotal, page, pageSize };
}
