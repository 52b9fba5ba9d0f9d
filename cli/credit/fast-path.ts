// The fast path: request bytes -> columns (the readers in read/) -> the estimator on those
// columns -> response bytes (write/). It takes the common request: turns with only `reward`,
// `anchor`, `invalid`, no reward transform. Anything else, and any request that is not plainly
// valid (a syntax error, an unknown or duplicate field, a bound, a missing field the estimator
// needs, a non-finite advantage...), gives a `Declined` naming the field, and computeCredit runs
// the ordinary path, which gives the answer or the error message. The bytes written are exactly
// those of `JSON.stringify(runCredit(request, options)) + "\n"` (test/credit/fast-request.test.ts).
import type { RunCreditOptions } from "../../lib/credit/index";
import { validateHead } from "../../lib/credit/request";
import type { CreditResult } from "../../lib/credit/result";
import type { EstimatorSpec } from "../../lib/credit/spec";
import { columnsFlat } from "./flat-columns";
import type { ParsedColumns } from "./read/columns";
import { readRequest } from "./read/request";
import { Declined } from "./read/scan";
import { writeResponse } from "./write/response";

/** The response bytes (`JSON.stringify(response) + "\n"`), or why the ordinary path must answer. */
export function fastCredit(buf: Buffer, options: RunCreditOptions = {}): Buffer[] | Declined {
  try {
    const c = readRequest(buf);
    const { spec, params, output } = checkHead(c, options);
    const result = compute(spec, c, params, output === "full");
    const cols = result.columns;
    if (!cols) throw new Declined("request", "the estimator gave no columns");
    const adv = cols.advantages;
    for (let r = 0; r < adv.length; r++) if (!Number.isFinite(adv[r])) throw new Declined("request", "a non-finite advantage");
    return writeResponse(c.trajIdDecoded, c.trajTurnStart, cols, result.diagnostics, { buf: c.buf, start: c.trajIdText, end: c.trajIdEnd });
  } catch (e) {
    if (e instanceof Declined) return e;
    throw e;
  }
}

/** The head's estimator, params and output; declines where validation would name a problem. */
function checkHead(c: ParsedColumns, options: RunCreditOptions): { spec: EstimatorSpec; params: Record<string, unknown>; output: "full" | "advantages" } {
  if (c.head.rewardTransform !== undefined) throw new Declined("rewardTransform", "a reward transform is applied on the ordinary path");
  try {
    const v = validateHead(c.head, (s) => {
      // a needed field missing on some turn: the ordinary path names it (or allows it, neededOn)
      for (const f of s.needs) {
        if (f === "reward") continue;
        if (f === "anchor" && c.anchorCount === c.nTurns) continue;
        if (f === "invalid" && c.invalidCount === c.nTurns) continue;
        throw new Declined("groups", `${f} missing on some turn`);
      }
    });
    return { spec: v.spec, params: v.params, output: options.output ?? v.head.output ?? "full" };
  } catch (e) {
    if (e instanceof Declined) throw e;
    throw new Declined((e as { path?: string }).path || "request", (e as Error).message);
  }
}

function compute(spec: EstimatorSpec, c: ParsedColumns, params: Record<string, unknown>, withComponents: boolean): CreditResult {
  try {
    return spec.computeFlat(columnsFlat(c, withComponents), params);
  } catch (e) {
    // e.g. a rowCopies entry naming no turn, whitening over < 2 tokens: the ordinary path names it
    throw new Declined("request", (e as Error).message);
  }
}
