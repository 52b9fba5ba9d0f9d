-- CreateTable
CREATE TABLE "AlertConfig" (
    "projectId" TEXT NOT NULL PRIMARY KEY,
    "rules" TEXT NOT NULL,
    "webhookUrl" TEXT,
    "updatedAt" REAL NOT NULL,
    CONSTRAINT "AlertConfig_projectId_fkey" FOREIGN KEY ("projectId") REFERENCES "Project" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateTable
CREATE TABLE "AlertCursor" (
    "runId" TEXT NOT NULL,
    "ruleId" TEXT NOT NULL,
    "lastStep" INTEGER NOT NULL,
    "openAlertId" INTEGER,

    PRIMARY KEY ("runId", "ruleId"),
    CONSTRAINT "AlertCursor_runId_fkey" FOREIGN KEY ("runId") REFERENCES "Run" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateTable
CREATE TABLE "Alert" (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "runId" TEXT NOT NULL,
    "ruleId" TEXT NOT NULL,
    "metric" TEXT NOT NULL,
    "step" INTEGER NOT NULL,
    "lastStep" INTEGER NOT NULL,
    "value" REAL NOT NULL,
    "message" TEXT NOT NULL,
    "createdAt" REAL NOT NULL,
    "webhookUrl" TEXT,
    "webhookState" TEXT NOT NULL DEFAULT 'none',
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "nextAttemptAt" REAL NOT NULL DEFAULT 0,
    CONSTRAINT "Alert_runId_fkey" FOREIGN KEY ("runId") REFERENCES "Run" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateIndex
CREATE INDEX "Alert_runId_step_idx" ON "Alert"("runId", "step");

-- CreateIndex
CREATE INDEX "Alert_createdAt_idx" ON "Alert"("createdAt");

-- CreateIndex
CREATE INDEX "Alert_webhookState_nextAttemptAt_idx" ON "Alert"("webhookState", "nextAttemptAt");
