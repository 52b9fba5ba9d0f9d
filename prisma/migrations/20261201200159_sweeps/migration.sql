-- CreateTable
CREATE TABLE "Sweep" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "projectId" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "jobKind" TEXT NOT NULL,
    "spec" JSONB NOT NULL,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "Sweep_projectId_fkey" FOREIGN KEY ("projectId") REFERENCES "Project" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- RedefineTables
PRAGMA defer_foreign_keys=ON;
PRAGMA foreign_keys=OFF;
CREATE TABLE "new_Run" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "projectId" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'queued',
    "jobKind" TEXT,
    "config" JSONB NOT NULL,
    "envId" TEXT,
    "estimator" TEXT,
    "seed" INTEGER NOT NULL DEFAULT 0,
    "tags" JSONB NOT NULL DEFAULT [],
    "notes" TEXT NOT NULL DEFAULT '',
    "progress" REAL NOT NULL DEFAULT 0,
    "progressMessage" TEXT NOT NULL DEFAULT '',
    "error" TEXT,
    "parentRunId" TEXT,
    "writeKeyHash" TEXT,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" DATETIME NOT NULL,
    "startedAt" DATETIME,
    "finishedAt" DATETIME,
    "sweepId" TEXT,
    "sweepParams" JSONB,
    CONSTRAINT "Run_projectId_fkey" FOREIGN KEY ("projectId") REFERENCES "Project" ("id") ON DELETE CASCADE ON UPDATE CASCADE,
    CONSTRAINT "Run_sweepId_fkey" FOREIGN KEY ("sweepId") REFERENCES "Sweep" ("id") ON DELETE SET NULL ON UPDATE CASCADE
);
INSERT INTO "new_Run" ("config", "createdAt", "envId", "error", "estimator", "finishedAt", "id", "jobKind", "kind", "name", "notes", "parentRunId", "progress", "progressMessage", "projectId", "seed", "startedAt", "status", "tags", "updatedAt", "writeKeyHash") SELECT "config", "createdAt", "envId", "error", "estimator", "finishedAt", "id", "jobKind", "kind", "name", "notes", "parentRunId", "progress", "progressMessage", "projectId", "seed", "startedAt", "status", "tags", "updatedAt", "writeKeyHash" FROM "Run";
DROP TABLE "Run";
ALTER TABLE "new_Run" RENAME TO "Run";
CREATE INDEX "Run_projectId_createdAt_idx" ON "Run"("projectId", "createdAt");
CREATE INDEX "Run_status_idx" ON "Run"("status");
CREATE INDEX "Run_envId_idx" ON "Run"("envId");
CREATE INDEX "Run_estimator_idx" ON "Run"("estimator");
CREATE INDEX "Run_sweepId_idx" ON "Run"("sweepId");
PRAGMA foreign_keys=ON;
PRAGMA defer_foreign_keys=OFF;

-- CreateIndex
CREATE INDEX "Sweep_projectId_createdAt_idx" ON "Sweep"("projectId", "createdAt");
