-- AlterTable
ALTER TABLE "Run" ADD COLUMN     "sweepId" TEXT,
ADD COLUMN     "sweepParams" JSONB;

-- CreateTable
CREATE TABLE "Sweep" (
    "id" TEXT NOT NULL,
    "projectId" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "jobKind" TEXT NOT NULL,
    "spec" JSONB NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "Sweep_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "Sweep_projectId_createdAt_idx" ON "Sweep"("projectId", "createdAt");

-- CreateIndex
CREATE INDEX "Run_sweepId_idx" ON "Run"("sweepId");

-- AddForeignKey
ALTER TABLE "Run" ADD CONSTRAINT "Run_sweepId_fkey" FOREIGN KEY ("sweepId") REFERENCES "Sweep"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Sweep" ADD CONSTRAINT "Sweep_projectId_fkey" FOREIGN KEY ("projectId") REFERENCES "Project"("id") ON DELETE CASCADE ON UPDATE CASCADE;
