-- FrozenLake's observation gained a last line, the cells around the player (envConfig.neighbours,
-- on by default). Runs and jobs made before it played the bare grid: they keep it, written into
-- their config, so that a resumed run or an evaluation of its checkpoints shows the model what it
-- was trained on. Imported runs' configs are their trainers' own and stay as they were sent.
UPDATE "Run" SET "config" = jsonb_set("config", '{envConfig,neighbours}', 'false'::jsonb)
WHERE "jobKind" IS NOT NULL AND "config"->>'envId' = 'frozenlake'
  AND jsonb_typeof("config"->'envConfig') = 'object' AND NOT ("config"->'envConfig') ? 'neighbours';

UPDATE "Job" SET "payload" = jsonb_set("payload", '{envConfig,neighbours}', 'false'::jsonb)
WHERE "payload"->>'envId' = 'frozenlake'
  AND jsonb_typeof("payload"->'envConfig') = 'object' AND NOT ("payload"->'envConfig') ? 'neighbours';
