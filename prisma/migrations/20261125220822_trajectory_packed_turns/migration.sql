-- Turns move from one row each into their trajectory's row, packed (lib/db/trajectory-pack.ts).
-- Existing turns are carried over: each trajectory's columns are built here as JSON text (the
-- reader takes JSON text as well as the deflated JSON new writes store), token BLOBs as
-- length-prefixed records. A turn's mean token entropy is not derived here (its token entropies
-- are kept, in turnTokens).

PRAGMA defer_foreign_keys=ON;
PRAGMA foreign_keys=OFF;
CREATE TABLE "new_Trajectory" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "runId" TEXT NOT NULL,
    "groupId" TEXT NOT NULL,
    "index" INTEGER NOT NULL,
    "reward" REAL NOT NULL,
    "success" BOOLEAN NOT NULL,
    "length" INTEGER NOT NULL,
    "truncated" BOOLEAN NOT NULL DEFAULT false,
    "firstSeq" INTEGER NOT NULL,
    "turnData" BLOB NOT NULL,
    "turnTexts" BLOB NOT NULL,
    "turnTokens" BLOB,
    CONSTRAINT "Trajectory_groupId_fkey" FOREIGN KEY ("groupId") REFERENCES "RolloutGroup" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);
INSERT INTO "new_Trajectory" ("groupId", "id", "index", "length", "reward", "runId", "success", "truncated", "firstSeq", "turnData", "turnTexts", "turnTokens")
SELECT t."groupId", t."id", t."index", t."length", t."reward", t."runId", t."success", t."truncated",
  COALESCE((SELECT MIN(u."seq") FROM "Turn" u WHERE u."trajectoryId" = t."id"), 0),
  COALESCE((SELECT CAST(json_object(
      'reward', json_group_array(u."reward" ORDER BY u."index"),
      'valid', json_group_array(CAST(u."valid" AS INTEGER) ORDER BY u."index"),
      'done', json_group_array(CAST(u."done" AS INTEGER) ORDER BY u."index"),
      'anchor', json_group_array(u."anchor" ORDER BY u."index"),
      'agent', json_group_array(u."agent" ORDER BY u."index"),
      'tokenCount', json_group_array(u."tokenCount" ORDER BY u."index"),
      'logprob', json_group_array(u."logprob" ORDER BY u."index"),
      'entropy', json_group_array(u."entropy" ORDER BY u."index"),
      'advantage', json_group_array(u."advantage" ORDER BY u."index"),
      'creditInfo', json_group_array(json(u."info") ORDER BY u."index")) AS BLOB)
    FROM "Turn" u WHERE u."trajectoryId" = t."id"), CAST('{}' AS BLOB)),
  COALESCE((SELECT CAST(json_object(
      'observation', json_group_array(u."observation" ORDER BY u."index"),
      'action', json_group_array(u."action" ORDER BY u."index"),
      'info', json_group_array(json(u."info") ORDER BY u."index")) AS BLOB)
    FROM "Turn" u WHERE u."trajectoryId" = t."id"), CAST('{}' AS BLOB)),
  (SELECT unhex(group_concat(printf('%08x', COALESCE(length(u."tokenData"), 0)) || COALESCE(hex(u."tokenData"), ''), '' ORDER BY u."index"))
    FROM "Turn" u WHERE u."trajectoryId" = t."id" HAVING COUNT(u."tokenData") > 0)
FROM "Trajectory" t;
DROP INDEX "Turn_trajectoryId_index_idx";
DROP TABLE "Turn";
DROP TABLE "Trajectory";
ALTER TABLE "new_Trajectory" RENAME TO "Trajectory";
CREATE INDEX "Trajectory_groupId_index_idx" ON "Trajectory"("groupId", "index");
CREATE INDEX "Trajectory_runId_firstSeq_idx" ON "Trajectory"("runId", "firstSeq");
PRAGMA foreign_keys=ON;
PRAGMA defer_foreign_keys=OFF;
