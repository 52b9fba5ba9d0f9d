// Typed API errors and the mapping of library errors to HTTP status codes (route handlers stay thin).
import { ZodError, type z } from "zod";

export interface Issue {
  path: string;
  message: string;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly issues: Issue[] = [],
  ) {
    super(message);
    this.name = "ApiError";
  }
}

/** zod issues as `{path, message}` with the path rooted at where the input came from (body, query, params). */
export function zodIssues(err: ZodError, root: string): Issue[] {
  return err.issues.map((i) => ({ path: [root, ...i.path.map(String)].join("."), message: i.message }));
}

export function parseOr400<S extends z.ZodType>(schema: S, input: unknown, root: string): z.infer<S> {
  const r = schema.safeParse(input);
  if (r.success) return r.data;
  const issues = zodIssues(r.error, root);
  throw new ApiError(400, `invalid ${root}: ${issues.map((i) => `${i.path}: ${i.message}`).join("; ")}`, issues);
}

// Library errors are matched by name so lib/ stays free of HTTP concerns.
const STATUS_BY_NAME: Record<string, number> = {
  NotFoundError: 404,
  JobNotFoundError: 404,
  ConflictError: 409,
  StepExistsError: 409,
  InvalidJobTransitionError: 409,
  CreditRequestError: 400,
  LaunchConfigError: 400,
};

export function toErrorResponse(err: unknown): Response {
  if (err instanceof ApiError)
    return Response.json({ error: err.message, issues: err.issues }, { status: err.status, headers: err.status === 429 ? { "retry-after": "1" } : {} });
  if (err instanceof ZodError) {
    const issues = zodIssues(err, "body");
    return Response.json({ error: "invalid input", issues }, { status: 400 });
  }
  // An error may carry its own 4xx `httpStatus` (lib/jobs errors do); class names can be mangled by bundlers.
  const own = (err as { httpStatus?: unknown })?.httpStatus;
  const status = typeof own === "number" && own >= 400 && own < 500 ? own : err instanceof Error ? STATUS_BY_NAME[err.name] : undefined;
  if (err instanceof Error && status) {
    const issues = (err as Error & { issues?: Issue[] }).issues ?? [];
    return Response.json({ error: err.message, issues }, { status });
  }
  console.error("[api] unexpected error", err);
  return Response.json({ error: "internal error: " + (err instanceof Error ? err.message : String(err)), issues: [] }, { status: 500 });
}
