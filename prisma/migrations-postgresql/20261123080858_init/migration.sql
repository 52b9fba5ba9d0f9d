-- CreateTable
CREATE TABLE "Project" (
    "id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "description" TEXT NOT NULL DEFAULT '',
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "Project_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Run" (
    "id" TEXT NOT NULL,
    "projectId" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'queued',
    "jobKind" TEXT,
    "config" JSONB NOT NULL,
    "envId" TEXT,
    "estimator" TEXT,
    "seed" INTEGER NOT NULL DEFAULT 0,
    "tags" JSONB NOT NULL DEFAULT '[]',
    "notes" TEXT NOT NULL DEFAULT '',
    "progress" DOUBLE PRECISION NOT NULL DEFAULT 0,
    "progressMessage" TEXT NOT NULL DEFAULT '',
    "error" TEXT,
    "parentRunId" TEXT,
    "writeKeyHash" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,
    "startedAt" TIMESTAMP(3),
    "finishedAt" TIMESTAMP(3),

    CONSTRAINT "Run_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Metric" (
    "runId" TEXT NOT NULL,
    "key" TEXT NOT NULL,
    "step" INTEGER NOT NULL,
    "value" DOUBLE PRECISION NOT NULL,
    "wallTime" DOUBLE PRECISION NOT NULL,

    CONSTRAINT "Metric_pkey" PRIMARY KEY ("runId","key","step")
);

-- CreateTable
CREATE TABLE "MetricRollup" (
    "runId" TEXT NOT NULL,
    "key" TEXT NOT NULL,
    "level" INTEGER NOT NULL,
    "bucket" INTEGER NOT NULL,
    "count" INTEGER NOT NULL,
    "minStep" INTEGER NOT NULL,
    "minValue" DOUBLE PRECISION NOT NULL,
    "maxStep" INTEGER NOT NULL,
    "maxValue" DOUBLE PRECISION NOT NULL,
    "firstStep" INTEGER NOT NULL,
    "lastStep" INTEGER NOT NULL,
    "lastValue" DOUBLE PRECISION NOT NULL,

    CONSTRAINT "MetricRollup_pkey" PRIMARY KEY ("runId","key","level","bucket")
);

-- CreateTable
CREATE TABLE "MetricSeries" (
    "runId" TEXT NOT NULL,
    "key" TEXT NOT NULL,
    "count" INTEGER NOT NULL,
    "firstStep" INTEGER NOT NULL,
    "lastStep" INTEGER NOT NULL,
    "lastValue" DOUBLE PRECISION NOT NULL,
    "minValue" DOUBLE PRECISION NOT NULL,
    "maxValue" DOUBLE PRECISION NOT NULL,

    CONSTRAINT "MetricSeries_pkey" PRIMARY KEY ("runId","key")
);

-- CreateTable
CREATE TABLE "RolloutStep" (
    "id" TEXT NOT NULL,
    "runId" TEXT NOT NULL,
    "step" INTEGER NOT NULL,
    "estimator" TEXT,
    "params" JSONB,
    "diagnostics" JSONB,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "RolloutStep_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "RolloutGroup" (
    "id" TEXT NOT NULL,
    "runId" TEXT NOT NULL,
    "stepId" TEXT NOT NULL,
    "uid" TEXT NOT NULL,
    "envId" TEXT NOT NULL,
    "taskSeed" INTEGER NOT NULL,

    CONSTRAINT "RolloutGroup_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Trajectory" (
    "id" TEXT NOT NULL,
    "runId" TEXT NOT NULL,
    "groupId" TEXT NOT NULL,
    "index" INTEGER NOT NULL,
    "reward" DOUBLE PRECISION NOT NULL,
    "success" BOOLEAN NOT NULL,
    "length" INTEGER NOT NULL,
    "truncated" BOOLEAN NOT NULL DEFAULT false,

    CONSTRAINT "Trajectory_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Turn" (
    "runId" TEXT NOT NULL,
    "seq" INTEGER NOT NULL,
    "trajectoryId" TEXT NOT NULL,
    "index" INTEGER NOT NULL,
    "observation" TEXT NOT NULL,
    "action" TEXT NOT NULL,
    "reward" DOUBLE PRECISION NOT NULL,
    "valid" BOOLEAN NOT NULL,
    "done" BOOLEAN NOT NULL DEFAULT false,
    "anchor" TEXT,
    "agent" INTEGER,
    "tokenCount" INTEGER,
    "logprob" DOUBLE PRECISION,
    "entropy" DOUBLE PRECISION,
    "advantage" DOUBLE PRECISION,
    "info" TEXT,
    "tokenData" BYTEA,

    CONSTRAINT "Turn_pkey" PRIMARY KEY ("runId","seq")
);

-- CreateTable
CREATE TABLE "Checkpoint" (
    "id" TEXT NOT NULL,
    "runId" TEXT NOT NULL,
    "step" INTEGER NOT NULL,
    "torchPath" TEXT NOT NULL,
    "onnxPath" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "Checkpoint_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "IngestBatch" (
    "runId" TEXT NOT NULL,
    "batchId" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "hash" TEXT NOT NULL,
    "response" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "IngestBatch_pkey" PRIMARY KEY ("runId","batchId")
);

-- CreateTable
CREATE TABLE "Job" (
    "id" TEXT NOT NULL,
    "runId" TEXT,
    "kind" TEXT NOT NULL,
    "payload" JSONB NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'queued',
    "priority" INTEGER NOT NULL DEFAULT 0,
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "maxAttempts" INTEGER NOT NULL DEFAULT 3,
    "timeoutMs" INTEGER,
    "availableAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "leaseOwner" TEXT,
    "leaseToken" TEXT,
    "leaseExpiresAt" TIMESTAMP(3),
    "heartbeatAt" TIMESTAMP(3),
    "cancelRequested" BOOLEAN NOT NULL DEFAULT false,
    "progress" DOUBLE PRECISION NOT NULL DEFAULT 0,
    "progressMessage" TEXT NOT NULL DEFAULT '',
    "error" TEXT,
    "result" JSONB,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,
    "startedAt" TIMESTAMP(3),
    "finishedAt" TIMESTAMP(3),

    CONSTRAINT "Job_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "JobLog" (
    "jobId" TEXT NOT NULL,
    "seq" INTEGER NOT NULL,
    "time" DOUBLE PRECISION NOT NULL,
    "level" TEXT NOT NULL DEFAULT 'info',
    "line" TEXT NOT NULL,

    CONSTRAINT "JobLog_pkey" PRIMARY KEY ("jobId","seq")
);

-- CreateIndex
CREATE UNIQUE INDEX "Project_name_key" ON "Project"("name");

-- CreateIndex
CREATE INDEX "Run_projectId_createdAt_idx" ON "Run"("projectId", "createdAt");

-- CreateIndex
CREATE INDEX "Run_status_idx" ON "Run"("status");

-- CreateIndex
CREATE INDEX "Run_envId_idx" ON "Run"("envId");

-- CreateIndex
CREATE INDEX "Run_estimator_idx" ON "Run"("estimator");

-- CreateIndex
CREATE INDEX "MetricSeries_key_lastValue_idx" ON "MetricSeries"("key", "lastValue");

-- CreateIndex
CREATE UNIQUE INDEX "RolloutStep_runId_step_key" ON "RolloutStep"("runId", "step");

-- CreateIndex
CREATE INDEX "RolloutGroup_runId_idx" ON "RolloutGroup"("runId");

-- CreateIndex
CREATE UNIQUE INDEX "RolloutGroup_stepId_uid_key" ON "RolloutGroup"("stepId", "uid");

-- CreateIndex
CREATE INDEX "Trajectory_groupId_index_idx" ON "Trajectory"("groupId", "index");

-- CreateIndex
CREATE INDEX "Trajectory_runId_idx" ON "Trajectory"("runId");

-- CreateIndex
CREATE INDEX "Turn_trajectoryId_index_idx" ON "Turn"("trajectoryId", "index");

-- CreateIndex
CREATE UNIQUE INDEX "Checkpoint_runId_step_key" ON "Checkpoint"("runId", "step");

-- CreateIndex
CREATE INDEX "Job_status_availableAt_priority_idx" ON "Job"("status", "availableAt", "priority");

-- CreateIndex
CREATE INDEX "Job_runId_idx" ON "Job"("runId");

-- AddForeignKey
ALTER TABLE "Run" ADD CONSTRAINT "Run_projectId_fkey" FOREIGN KEY ("projectId") REFERENCES "Project"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "MetricSeries" ADD CONSTRAINT "MetricSeries_runId_fkey" FOREIGN KEY ("runId") REFERENCES "Run"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "RolloutStep" ADD CONSTRAINT "RolloutStep_runId_fkey" FOREIGN KEY ("runId") REFERENCES "Run"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "RolloutGroup" ADD CONSTRAINT "RolloutGroup_stepId_fkey" FOREIGN KEY ("stepId") REFERENCES "RolloutStep"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Trajectory" ADD CONSTRAINT "Trajectory_groupId_fkey" FOREIGN KEY ("groupId") REFERENCES "RolloutGroup"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Turn" ADD CONSTRAINT "Turn_trajectoryId_fkey" FOREIGN KEY ("trajectoryId") REFERENCES "Trajectory"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Checkpoint" ADD CONSTRAINT "Checkpoint_runId_fkey" FOREIGN KEY ("runId") REFERENCES "Run"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "IngestBatch" ADD CONSTRAINT "IngestBatch_runId_fkey" FOREIGN KEY ("runId") REFERENCES "Run"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Job" ADD CONSTRAINT "Job_runId_fkey" FOREIGN KEY ("runId") REFERENCES "Run"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "JobLog" ADD CONSTRAINT "JobLog_jobId_fkey" FOREIGN KEY ("jobId") REFERENCES "Job"("id") ON DELETE CASCADE ON UPDATE CASCADE;
