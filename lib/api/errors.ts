// The one mapping of errors to HTTP responses: lib/ throws the hierarchy of lib/schemas/errors.ts
// (each error has a `kind`), and this table gives each kind its status. Route handlers stay thin.
import { ZodError } from "zod";
import { errorKind, isDiskFull, zodIssues, type ErrorKind, type Issue } from "../schemas/errors";

export const STATUS_OF_KIND: Record<ErrorKind, number> = {
  invalid: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  timeout: 408,
  conflict: 409,
  too_large: 413,
  unsupported_media_type: 415,
  overloaded: 429,
  insufficient_storage: 507,
};

/** The status for an error, or undefined for an unexpected one (a 500). */
export function statusOf(err: unknown): number | undefined {
  // lib/credit imports nothing of ours, so its one error (which names itself) is mapped here
  if (err instanceof Error && err.name === "CreditRequestError") return 400;
  const kind = errorKind(err);
  if (kind) return STATUS_OF_KIND[kind];
  // a full disk wherever it was hit (an upload, a SQLite write): the request may succeed once space is freed
  return isDiskFull(err) ? STATUS_OF_KIND.insufficient_storage : undefined;
}

export function toErrorResponse(err: unknown): Response {
  if (err instanceof ZodError) return Response.json({ error: "invalid input", issues: zodIssues(err, "body") }, { status: 400 });
  const status = statusOf(err);
  if (status === 507 && !errorKind(err)) {
    const code = (err as Error & { code?: string }).code;
    console.error("[api] disk full", err); // the operator's problem, not the client's
    return Response.json({ error: `the server's disk is full (${code}): the request was not stored; retry once space is freed`, issues: [] }, { status });
  }
  if (status) {
    const issues = (err as Error & { issues?: Issue[] }).issues ?? [];
    // an overloaded server says when to come back
    return Response.json({ error: (err as Error).message, issues }, { status, headers: status === 429 ? { "retry-after": "1" } : {} });
  }
  console.error("[api] unexpected error", err);
  return Response.json({ error: "internal error: " + (err instanceof Error ? err.message : String(err)), issues: [] }, { status: 500 });
}
