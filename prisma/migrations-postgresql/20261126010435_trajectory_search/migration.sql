-- The trajectory search's table (see schema.prisma, lib/db/trajectory-search.ts).
-- CreateTable
CREATE TABLE "TrajectorySearch" (
    "key" SERIAL NOT NULL,
    "trajectoryId" TEXT NOT NULL,
    "runId" TEXT NOT NULL,
    "step" INTEGER NOT NULL,
    "success" BOOLEAN NOT NULL,
    "reward" DOUBLE PRECISION NOT NULL,
    "length" INTEGER NOT NULL,

    CONSTRAINT "TrajectorySearch_pkey" PRIMARY KEY ("key")
);

-- CreateIndex
CREATE UNIQUE INDEX "TrajectorySearch_trajectoryId_key" ON "TrajectorySearch"("trajectoryId");

-- CreateIndex
CREATE INDEX "TrajectorySearch_runId_step_key_idx" ON "TrajectorySearch"("runId", "step", "key");

-- CreateIndex
CREATE INDEX "TrajectorySearch_runId_reward_idx" ON "TrajectorySearch"("runId", "reward");

-- AddForeignKey
ALTER TABLE "TrajectorySearch" ADD CONSTRAINT "TrajectorySearch_trajectoryId_fkey" FOREIGN KEY ("trajectoryId") REFERENCES "Trajectory"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- The word index itself (lib/db/trajectory-search.ts writes it): a trajectory's distinct words of
-- observations and of actions as lexeme sets (array_to_tsvector: no parser, no positions. Phrases
-- are checked on the turns' texts), GIN-indexed. Prisma cannot model tsvector columns usefully:
-- the schema check leaves "TrajectoryText" out (scripts/db-migrate.mjs).
CREATE TABLE "TrajectoryText" (
    "key" INTEGER NOT NULL PRIMARY KEY REFERENCES "TrajectorySearch"("key") ON DELETE CASCADE,
    "obs" tsvector NOT NULL,
    "act" tsvector NOT NULL
);
CREATE INDEX "TrajectoryText_obs_idx" ON "TrajectoryText" USING GIN ("obs");
CREATE INDEX "TrajectoryText_act_idx" ON "TrajectoryText" USING GIN ("act");
