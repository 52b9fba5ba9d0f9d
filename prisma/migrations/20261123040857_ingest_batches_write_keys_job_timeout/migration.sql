-- AlterTable
ALTER TABLE "Job" ADD COLUMN "timeoutMs" INTEGER;

-- AlterTable
ALTER TABLE "Run" ADD COLUMN "writeKeyHash" TEXT;

-- CreateTable
CREATE TABLE "IngestBatch" (
    "runId" TEXT NOT NULL,
    "batchId" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "hash" TEXT NOT NULL,
    "response" TEXT NOT NULL,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,

    PRIMARY KEY ("runId", "batchId"),
    CONSTRAINT "IngestBatch_runId_fkey" FOREIGN KEY ("runId") REFERENCES "Run" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);
