-- AlterTable
ALTER TABLE "TrajectorySearch" ADD COLUMN "promptHash" TEXT;

-- CreateIndex
CREATE INDEX "TrajectorySearch_runId_promptHash_idx" ON "TrajectorySearch"("runId", "promptHash");
