-- CreateTable
CREATE TABLE "TrajectorySearch" (
    "key" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "trajectoryId" TEXT NOT NULL,
    "runId" TEXT NOT NULL,
    "step" INTEGER NOT NULL,
    "success" BOOLEAN NOT NULL,
    "reward" REAL NOT NULL,
    "length" INTEGER NOT NULL,
    CONSTRAINT "TrajectorySearch_trajectoryId_fkey" FOREIGN KEY ("trajectoryId") REFERENCES "Trajectory" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateIndex
CREATE UNIQUE INDEX "TrajectorySearch_trajectoryId_key" ON "TrajectorySearch"("trajectoryId");

-- CreateIndex
CREATE INDEX "TrajectorySearch_runId_step_key_idx" ON "TrajectorySearch"("runId", "step", "key");

-- CreateIndex
CREATE INDEX "TrajectorySearch_runId_reward_idx" ON "TrajectorySearch"("runId", "reward");

-- The word index itself (lib/db/trajectory-search.ts writes it): one document per trajectory, its
-- distinct words of observations and of actions, no positions (phrases are checked on the turns'
-- texts) and no copy of the text (contentless). Prisma cannot model a virtual table: the schema
-- check leaves "TrajectoryText*" out (scripts/db-migrate.mjs).
CREATE VIRTUAL TABLE "TrajectoryText" USING fts5("obs", "act", content='', contentless_delete=1, detail=column, tokenize='unicode61 remove_diacritics 0');

-- A trajectory deleted (its run deleted, cascading) takes its index entry with it.
CREATE TRIGGER "TrajectorySearch_delete_text" AFTER DELETE ON "TrajectorySearch" BEGIN
    DELETE FROM "TrajectoryText" WHERE "rowid" = old."key";
END;
