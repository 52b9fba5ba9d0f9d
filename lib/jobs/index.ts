// The job queue: enqueue / claim / heartbeat / progress / finish / cancel / retry / reap / list, job logs,
// and the job-kind registry (kinds.ts).
// See README.md beside this file for the state machine and the lease rules.
export * from "./errors";
export * from "./schemas";
export * from "./queue";
export { listJobs, toJobOut, type ListJobsQuery } from "./list";
export { JOB_KINDS, getJobKind, jobKindIds, launchableKinds, type JobKindSpec, type JobKindId, type LaunchableKindId } from "./kinds";
export { appendLog, tailLog, JobLogBuffer, type JobLogLine, type LogLineInput, type LogLevel } from "./logs";
export { workerConfig, retryDelayMs, type WorkerConfig } from "./config";
