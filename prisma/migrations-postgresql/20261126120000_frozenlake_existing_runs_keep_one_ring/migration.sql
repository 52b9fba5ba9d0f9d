-- FrozenLake's observation gained a line of the eight cells two moves from the player
-- (envConfig.farNeighbours, on by default). Runs and jobs made before did not show it: they keep
-- that, written into their config, so that a resumed run or an evaluation of its checkpoints shows
-- the model what it was trained on. Imported runs' configs are their trainers' own and stay as sent.
UPDATE "Run" SET "config" = jsonb_set("config", '{envConfig,farNeighbours}', 'false'::jsonb)
WHERE "jobKind" IS NOT NULL AND "config"->>'envId' = 'frozenlake'
  AND jsonb_typeof("config"->'envConfig') = 'object' AND NOT ("config"->'envConfig') ? 'farNeighbours';

UPDATE "Job" SET "payload" = jsonb_set("payload", '{envConfig,farNeighbours}', 'false'::jsonb)
WHERE "payload"->>'envId' = 'frozenlake'
  AND jsonb_typeof("payload"->'envConfig') = 'object' AND NOT ("payload"->'envConfig') ? 'farNeighbours';
