// Runs one command against a throwaway PostgreSQL (test/helpers/postgres.ts: a temp cluster from
// Debian's PostgreSQL 15, or a fresh database on TURNLENS_TEST_PG), with DATABASE_URL set to an
// empty database on it and TURNLENS_TEST_PG to the server (test/helpers/temp-db.ts makes one
// database per test file there); the cluster is stopped and deleted when the command ends, whatever its end.
//   node --import tsx scripts/pg-temp.ts -- node scripts/db-migrate.mjs dev <name>
import { spawn } from "node:child_process";
import { postgresUnavailable, startPostgres } from "../test/helpers/postgres";

const argv = process.argv.slice(2);
const cmd = argv[0] === "--" ? argv.slice(1) : argv;
if (cmd.length === 0) {
  console.error("usage: node --import tsx scripts/pg-temp.ts -- <command> [args...]");
  process.exit(2);
}
const skip = postgresUnavailable();
if (skip) {
  console.error(skip);
  process.exit(1);
}
const server = await startPostgres();
let code = 1;
try {
  const url = await server.createDatabase("turnlens");
  console.error(`pg-temp: DATABASE_URL=${url}`);
  const child = spawn(cmd[0], cmd.slice(1), { stdio: "inherit", env: { ...process.env, DATABASE_URL: url, TURNLENS_TEST_PG: url } });
  const stop = (sig: NodeJS.Signals) => child.kill(sig);
  process.on("SIGINT", stop).on("SIGTERM", stop);
  code = await new Promise<number>((resolve) => child.on("exit", (c, sig) => resolve(c ?? (sig ? 128 : 1))));
} finally {
  await server.stop();
}
process.exit(code);
