-- Per-token data of a turn's response (ids, log-probs, advantages, entropies, texts), packed into one
-- nullable BLOB (layout: lib/db/token-data.ts). Old rows and writers without token data keep NULL.
ALTER TABLE "Turn" ADD COLUMN "tokenData" BLOB;
