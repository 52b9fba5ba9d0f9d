// Command line: `npm run --silent credit [-- --advantages-only] < request.json > response.json`.
// Reads one JSON request on stdin, prints the response JSON on stdout. A bad request prints one
// line to stderr, no JSON, and exits 1; an internal error exits 2. `npm run credit` runs this file
// compiled to dist/credit-cli.mjs (scripts/credit-cli.mjs rebuilds it when lib/credit changed).
import { readFileSync } from "node:fs";
import { CreditRequestError, parseRequestText, runCredit } from "./index";

const USAGE = "usage: credit [--advantages-only] < request.json > response.json";

async function readStdin(): Promise<string> {
  try {
    return readFileSync(0, "utf8"); // one read of the whole pipe or file: fastest for 10^6 turns
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "EAGAIN") throw e;
    const chunks: Buffer[] = []; // non-blocking stdin (some terminals): read it as a stream
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString("utf8");
  }
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const bad = args.find((a) => a !== "--advantages-only");
  if (bad !== undefined) throw new CreditRequestError(`argument ${JSON.stringify(bad)}: unknown; ${USAGE}`);
  const text = await readStdin();
  if (text.trim() === "") throw new CreditRequestError("request: empty input; send one JSON request on stdin");
  const response = runCredit(parseRequestText(text), args.includes("--advantages-only") ? { output: "advantages" } : {});
  process.stdout.write(JSON.stringify(response) + "\n");
}

main().catch((e: unknown) => {
  if (e instanceof CreditRequestError) {
    process.stderr.write(`error: ${e.message}\n`);
    process.exitCode = 1;
  } else {
    const msg = e instanceof Error ? e.message : String(e);
    process.stderr.write(`internal error: ${msg.replace(/\s*\n\s*/g, " ")}\n`);
    process.exitCode = 2;
  }
});
