-- FrozenLake's observation gained a line of the eight cells two moves from the player
-- (envConfig.farNeighbours, on by default). Runs and jobs made before did not show it: they keep
-- that, written into their config, so that a resumed run or an evaluation of its checkpoints shows
-- the model what it was trained on. Imported runs' configs are their trainers' own and stay as sent.
UPDATE "Run" SET "config" = json_set("config", '$.envConfig.farNeighbours', json('false'))
WHERE "jobKind" IS NOT NULL AND json_extract("config", '$.envId') = 'frozenlake'
  AND json_type("config", '$.envConfig') = 'object' AND json_type("config", '$.envConfig.farNeighbours') IS NULL;

UPDATE "Job" SET "payload" = json_set("payload", '$.envConfig.farNeighbours', json('false'))
WHERE json_extract("payload", '$.envId') = 'frozenlake'
  AND json_type("payload", '$.envConfig') = 'object' AND json_type("payload", '$.envConfig.farNeighbours') IS NULL;
