// The PostgreSQL Prisma client (generated from the derived schema, see scripts/db-schema.mjs).
// A module of its own, imported only for a postgresql:// URL: pg and this client add ~60 ms to
// every process start that would never use them (each job process on SQLite included).
import { PrismaPg } from "@prisma/adapter-pg";
import { PrismaClient as PrismaPgClient } from "../generated/prisma-pg/client";
import type { PrismaClient } from "../generated/prisma/client";

export function createPostgresPrisma(url: string): PrismaClient {
  // Same models and API as the SQLite client; the generated types differ only in provider tags.
  return new PrismaPgClient({ adapter: new PrismaPg({ connectionString: url }) }) as unknown as PrismaClient;
}
