// What the credit command computes, without its process: request bytes in, response bytes out.
// In-process callers (tests, benchmarks) use `computeCredit`; the command (main.ts) adds stdin,
// stdout and exit codes around it.
import { CreditRequestError, parseRequestText, runCredit, type RunCreditOptions } from "../../lib/credit/index";
import { fastCredit } from "./fast-path";

export const USAGE = "usage: turnlens-credit [--advantages-only] < request.json > response.json";

export interface CreditCliOptions extends RunCreditOptions {
  /** false: always the ordinary path (JSON.parse, runCredit, JSON.stringify); the bytes are the same. */
  fast?: boolean;
}

/** The command's options from its arguments (`--advantages-only`); a CreditRequestError for any other. */
export function parseArgs(args: readonly string[]): CreditCliOptions {
  const bad = args.find((a) => a !== "--advantages-only");
  if (bad !== undefined) throw new CreditRequestError(`argument ${JSON.stringify(bad)}: unknown; ${USAGE}`);
  return args.includes("--advantages-only") ? { output: "advantages" } : {};
}

/**
 * The response to one JSON request, as the bytes the command prints:
 * `JSON.stringify(runCredit(JSON.parse(request), options)) + "\n"`, by the fast path where it
 * applies. A bad request throws CreditRequestError naming the field.
 */
export function computeCredit(request: Buffer | string, options: CreditCliOptions = {}): Buffer[] {
  const bytes = typeof request === "string" ? Buffer.from(request, "utf8") : request;
  if (options.fast !== false) {
    const out = fastCredit(bytes, options);
    if (Array.isArray(out)) return out;
  }
  const text = bytes.toString("utf8");
  if (text.trim() === "") throw new CreditRequestError("request: empty input; send one JSON request on stdin");
  const response = runCredit(parseRequestText(text), { output: options.output });
  return [Buffer.from(JSON.stringify(response) + "\n", "utf8")];
}
