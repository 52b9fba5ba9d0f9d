// The credit command: `turnlens-credit [--advantages-only] < request.json > response.json`.
// Reads one JSON request on stdin, prints the response JSON on stdout. A bad request prints one
// line to stderr, no JSON, and exits 1; an internal error exits 2. scripts/credit-cli.mjs (the
// package's `turnlens-credit` bin, and `npm run credit`) runs this file compiled to
// dist/credit-cli.cjs. TURNLENS_CREDIT_FAST=0 forces the ordinary path.
import { readFileSync, writeSync } from "node:fs";
import { CreditRequestError } from "../../lib/credit/errors";
import { computeCredit, parseArgs } from "./compute";

async function readStdin(): Promise<Buffer> {
  try {
    return readFileSync(0); // one read of the whole pipe or file: fastest for 10^6 turns
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "EAGAIN") throw e;
    const chunks: Buffer[] = []; // non-blocking stdin (some terminals): read it as a stream
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks);
  }
}

/** Writes every byte to fd 1, waiting out EAGAIN when stdout is a non-blocking pipe. */
function writeAll(chunks: Buffer[]): void {
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (const chunk of chunks) {
    let off = 0;
    while (off < chunk.length) {
      try {
        off += writeSync(1, chunk, off, chunk.length - off);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== "EAGAIN") throw e;
        Atomics.wait(pause, 0, 0, 2);
      }
    }
  }
}

async function main(): Promise<void> {
  const options = parseArgs(process.argv.slice(2));
  const bytes = await readStdin();
  writeAll(computeCredit(bytes, { ...options, fast: process.env.TURNLENS_CREDIT_FAST !== "0" }));
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
