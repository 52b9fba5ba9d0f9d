// The one error hierarchy: what went wrong with a request, said without HTTP. Stores, services
// and the queue throw these; lib/api/errors.ts maps `kind` to a status in one table. It lives at
// the bottom (lib/schemas) so every layer may throw it without importing lib/api.
// lib/credit, which imports nothing of ours, has its own CreditRequestError (mapped as "invalid").
import type { ZodError, z } from "zod";

/** A field the error is about: `path` rooted where the input came from (body, query, params, headers). */
export interface Issue {
  path: string;
  message: string;
}

/** What kind of failure; lib/api answers each with one status (400, 401, 403, 404, 408, 409, 413, 415, 429, 507). */
export type ErrorKind =
  | "invalid"
  | "unauthorized"
  | "forbidden"
  | "not_found"
  | "timeout"
  | "conflict"
  | "too_large"
  | "unsupported_media_type"
  | "overloaded"
  | "insufficient_storage";

export class DomainError extends Error {
  constructor(
    readonly kind: ErrorKind,
    message: string,
    readonly issues: Issue[] = [],
  ) {
    super(message);
    this.name = new.target.name;
  }
}

/** Bad input (a field out of range, an unknown id, malformed JSON). */
export class InvalidInputError extends DomainError {
  constructor(message: string, issues: Issue[] = []) {
    super("invalid", message, issues);
  }
}

export class NotFoundError extends DomainError {
  constructor(what: string, id: string) {
    super("not_found", `${what} ${id} not found`);
  }
}

/** The request is valid but the resource's state refuses it (a step written twice, a running run deleted). */
export class ConflictError extends DomainError {
  constructor(message: string, issues: Issue[] = []) {
    super("conflict", message, issues);
  }
}

export class ForbiddenError extends DomainError {
  constructor(message: string, issues: Issue[] = []) {
    super("forbidden", message, issues);
  }
}

/**
 * The server's disk (or quota) is full: nothing is wrong with the request, and it succeeds once space
 * is freed, so it is a 507 for a request and a retry for a job, never a 500 or a failed job.
 */
export class InsufficientStorageError extends DomainError {
  constructor(message: string, issues: Issue[] = []) {
    super("insufficient_storage", message, issues);
  }
}

/** Codes of a full disk: ENOSPC, EDQUOT (a quota) and SQLite's SQLITE_FULL ("database or disk is full"). */
const DISK_FULL = new Set(["ENOSPC", "EDQUOT", "SQLITE_FULL"]);

/** Whether `err` is a full disk: an InsufficientStorageError, or a system or SQLite error with a disk-full code. */
export function isDiskFull(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  return (err as { kind?: unknown }).kind === "insufficient_storage" || (typeof code === "string" && DISK_FULL.has(code));
}

/** The error's kind when it is one of ours (checked by shape, not class identity: it also crosses the ingest thread). */
export function errorKind(err: unknown): ErrorKind | undefined {
  const k = err instanceof Error ? (err as { kind?: unknown }).kind : undefined;
  return typeof k === "string" && KINDS.has(k as ErrorKind) ? (k as ErrorKind) : undefined;
}
const KINDS = new Set<ErrorKind>([
  "invalid",
  "unauthorized",
  "forbidden",
  "not_found",
  "timeout",
  "conflict",
  "too_large",
  "unsupported_media_type",
  "overloaded",
  "insufficient_storage",
]);

/** zod issues as `{path, message}` with the path rooted at where the input came from (body, query, params). */
export function zodIssues(err: ZodError, root: string): Issue[] {
  return err.issues.flatMap((i) => unionBranch(i)).map((i) => ({ path: [root, ...i.path.map(String)].join("."), message: i.message }));
}

type RawIssue = ZodError["issues"][number];

/**
 * A union's failure named by the branch the input was meant for: of `number[] | packed`, an array
 * with a bad entry reports that entry (`tokenIds.0: expected int`), not "Invalid input". The meant
 * branch is the only one whose issues do not start with a wrong type at the union itself.
 */
function unionBranch(i: RawIssue): RawIssue[] {
  if (i.code !== "invalid_union" || !("errors" in i) || !Array.isArray(i.errors)) return [i];
  const meant = (i.errors as RawIssue[][]).filter((branch) => !branch.some((b) => b.code === "invalid_type" && b.path.length === 0));
  if (meant.length !== 1) return [i];
  return meant[0].flatMap((b) => unionBranch({ ...b, path: [...i.path, ...b.path] } as RawIssue));
}

/** Parses `input` with `schema` or throws InvalidInputError naming every bad field under `root`. */
export function parseInput<S extends z.ZodType>(schema: S, input: unknown, root: string): z.infer<S> {
  const r = schema.safeParse(input);
  if (r.success) return r.data;
  const issues = zodIssues(r.error, root);
  throw new InvalidInputError(`invalid ${root}: ${issues.map((i) => `${i.path}: ${i.message}`).join("; ")}`, issues);
}
