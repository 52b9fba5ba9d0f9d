// The PostgreSQL Prisma client (generated from the derived schema, see scripts/db-schema.mjs).
// Loaded with lib/db/client.ts (~50 ms, pg included) so that createPrisma stays synchronous on either store.
import { PrismaPg } from "@prisma/adapter-pg";
import { PrismaClient as PrismaPgClient } from "../generated/prisma-pg/client";
import type { PrismaClient } from "../generated/prisma/client";

export function createPostgresPrisma(url: string): PrismaClient {
  // Same models and API as the SQLite client; the generated types differ only in provider tags.
  return new PrismaPgClient({ adapter: new PrismaPg({ connectionString: url }) }) as unknown as PrismaClient;
}
