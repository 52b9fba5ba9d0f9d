-- Turns move from one row each into their trajectory's row, packed (lib/db/trajectory-pack.ts).
-- Existing turns are carried over: each trajectory's columns are built here as JSON text (the
-- reader takes JSON text as well as the deflated JSON new writes store), token BLOBs as
-- length-prefixed records. A turn's mean token entropy is not derived here (its token entropies
-- are kept, in turnTokens).

-- AlterTable
ALTER TABLE "Trajectory" ADD COLUMN "firstSeq" INTEGER,
ADD COLUMN "turnData" BYTEA,
ADD COLUMN "turnTexts" BYTEA,
ADD COLUMN "turnTokens" BYTEA;

UPDATE "Trajectory" t SET
  "firstSeq" = p."firstSeq", "turnData" = p."turnData", "turnTexts" = p."turnTexts", "turnTokens" = p."turnTokens"
FROM (
  SELECT u."trajectoryId",
    MIN(u."seq") AS "firstSeq",
    convert_to(json_build_object(
      'reward', json_agg(u."reward" ORDER BY u."index"),
      'valid', json_agg(CASE WHEN u."valid" THEN 1 ELSE 0 END ORDER BY u."index"),
      'done', json_agg(CASE WHEN u."done" THEN 1 ELSE 0 END ORDER BY u."index"),
      'anchor', json_agg(u."anchor" ORDER BY u."index"),
      'agent', json_agg(u."agent" ORDER BY u."index"),
      'tokenCount', json_agg(u."tokenCount" ORDER BY u."index"),
      'logprob', json_agg(u."logprob" ORDER BY u."index"),
      'entropy', json_agg(u."entropy" ORDER BY u."index"),
      'advantage', json_agg(u."advantage" ORDER BY u."index"),
      'creditInfo', json_agg(u."info"::json ORDER BY u."index"))::text, 'UTF8') AS "turnData",
    convert_to(json_build_object(
      'observation', json_agg(u."observation" ORDER BY u."index"),
      'action', json_agg(u."action" ORDER BY u."index"),
      'info', json_agg(u."info"::json ORDER BY u."index"))::text, 'UTF8') AS "turnTexts",
    CASE WHEN COUNT(u."tokenData") > 0 THEN
      string_agg(int4send(COALESCE(length(u."tokenData"), 0)) || COALESCE(u."tokenData", ''::bytea), ''::bytea ORDER BY u."index")
    END AS "turnTokens"
  FROM "Turn" u GROUP BY u."trajectoryId"
) p
WHERE p."trajectoryId" = t."id";

UPDATE "Trajectory" SET "firstSeq" = 0, "turnData" = convert_to('{}', 'UTF8'), "turnTexts" = convert_to('{}', 'UTF8') WHERE "turnData" IS NULL;
ALTER TABLE "Trajectory" ALTER COLUMN "firstSeq" SET NOT NULL, ALTER COLUMN "turnData" SET NOT NULL, ALTER COLUMN "turnTexts" SET NOT NULL;

-- DropForeignKey
ALTER TABLE "Turn" DROP CONSTRAINT "Turn_trajectoryId_fkey";

-- DropIndex
DROP INDEX "Trajectory_runId_idx";

-- DropTable
DROP TABLE "Turn";

-- CreateIndex
CREATE INDEX "Trajectory_runId_firstSeq_idx" ON "Trajectory"("runId", "firstSeq");
