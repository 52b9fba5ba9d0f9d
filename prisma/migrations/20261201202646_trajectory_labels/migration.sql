-- AlterTable
ALTER TABLE "TrajectorySearch" ADD COLUMN "advantageCount" INTEGER;
ALTER TABLE "TrajectorySearch" ADD COLUMN "advantageSum" REAL;

-- CreateTable
CREATE TABLE "Label" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "projectId" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "position" INTEGER NOT NULL,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "Label_projectId_fkey" FOREIGN KEY ("projectId") REFERENCES "Project" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateTable
CREATE TABLE "TrajectoryLabel" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "runId" TEXT NOT NULL,
    "step" INTEGER NOT NULL,
    "uid" TEXT NOT NULL,
    "index" INTEGER NOT NULL,
    "turn" INTEGER NOT NULL DEFAULT -1,
    "labelId" TEXT NOT NULL,
    "note" TEXT NOT NULL DEFAULT '',
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "TrajectoryLabel_runId_fkey" FOREIGN KEY ("runId") REFERENCES "Run" ("id") ON DELETE CASCADE ON UPDATE CASCADE,
    CONSTRAINT "TrajectoryLabel_labelId_fkey" FOREIGN KEY ("labelId") REFERENCES "Label" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateIndex
CREATE UNIQUE INDEX "Label_projectId_name_key" ON "Label"("projectId", "name");

-- CreateIndex
CREATE UNIQUE INDEX "Label_projectId_position_key" ON "Label"("projectId", "position");

-- CreateIndex
CREATE INDEX "TrajectoryLabel_labelId_runId_step_idx" ON "TrajectoryLabel"("labelId", "runId", "step");

-- CreateIndex
CREATE UNIQUE INDEX "TrajectoryLabel_runId_step_uid_index_turn_labelId_key" ON "TrajectoryLabel"("runId", "step", "uid", "index", "turn", "labelId");
