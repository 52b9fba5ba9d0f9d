-- CreateTable
CREATE TABLE "AlertConfig" (
    "projectId" TEXT NOT NULL,
    "rules" TEXT NOT NULL,
    "webhookUrl" TEXT,
    "updatedAt" DOUBLE PRECISION NOT NULL,

    CONSTRAINT "AlertConfig_pkey" PRIMARY KEY ("projectId")
);

-- CreateTable
CREATE TABLE "AlertCursor" (
    "runId" TEXT NOT NULL,
    "ruleId" TEXT NOT NULL,
    "lastStep" INTEGER NOT NULL,
    "openAlertId" INTEGER,

    CONSTRAINT "AlertCursor_pkey" PRIMARY KEY ("runId","ruleId")
);

-- CreateTable
CREATE TABLE "Alert" (
    "id" SERIAL NOT NULL,
    "runId" TEXT NOT NULL,
    "ruleId" TEXT NOT NULL,
    "metric" TEXT NOT NULL,
    "step" INTEGER NOT NULL,
    "lastStep" INTEGER NOT NULL,
    "value" DOUBLE PRECISION NOT NULL,
    "message" TEXT NOT NULL,
    "createdAt" DOUBLE PRECISION NOT NULL,
    "webhookUrl" TEXT,
    "webhookState" TEXT NOT NULL DEFAULT 'none',
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "nextAttemptAt" DOUBLE PRECISION NOT NULL DEFAULT 0,

    CONSTRAINT "Alert_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "Alert_runId_step_idx" ON "Alert"("runId", "step");

-- CreateIndex
CREATE INDEX "Alert_createdAt_idx" ON "Alert"("createdAt");

-- CreateIndex
CREATE INDEX "Alert_webhookState_nextAttemptAt_idx" ON "Alert"("webhookState", "nextAttemptAt");

-- AddForeignKey
ALTER TABLE "AlertConfig" ADD CONSTRAINT "AlertConfig_projectId_fkey" FOREIGN KEY ("projectId") REFERENCES "Project"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "AlertCursor" ADD CONSTRAINT "AlertCursor_runId_fkey" FOREIGN KEY ("runId") REFERENCES "Run"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Alert" ADD CONSTRAINT "Alert_runId_fkey" FOREIGN KEY ("runId") REFERENCES "Run"("id") ON DELETE CASCADE ON UPDATE CASCADE;
