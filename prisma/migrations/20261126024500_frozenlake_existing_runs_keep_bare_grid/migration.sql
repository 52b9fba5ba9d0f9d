-- FrozenLake's observation gained a last line, the cells around the player (envConfig.neighbours,
-- on by default). Runs and jobs made before it played the bare grid: they keep it, written into
-- their config, so that a resumed run or an evaluation of its checkpoints shows the model what it
-- was trained on. Imported runs' configs are their trainers' own and stay as they were sent.
UPDATE "Run" SET "config" = json_set("config", '$.envConfig.neighbours', json('false'))
WHERE "jobKind" IS NOT NULL AND json_extract("config", '$.envId') = 'frozenlake'
  AND json_type("config", '$.envConfig') = 'object' AND json_type("config", '$.envConfig.neighbours') IS NULL;

UPDATE "Job" SET "payload" = json_set("payload", '$.envConfig.neighbours', json('false'))
WHERE json_extract("payload", '$.envId') = 'frozenlake'
  AND json_type("payload", '$.envConfig') = 'object' AND json_type("payload", '$.envConfig.neighbours') IS NULL;
