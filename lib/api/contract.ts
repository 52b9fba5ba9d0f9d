// What a route declares once: method, path, parameters, body, responses and the status codes it can
// answer. The route handler (lib/api/route.ts) enforces it and the OpenAPI document
// (lib/api/openapi.ts) is generated from it, so the two cannot drift apart.
import type { z } from "zod";
import { idSchema, queryInt } from "../schemas/common";

export type Method = "GET" | "POST" | "DELETE";

/** Statuses a route may answer besides its success: each is documented in OpenAPI. */
export type ErrorStatus = 400 | 401 | 403 | 404 | 408 | 409 | 413 | 415 | 429 | 507;

export interface RouteContract<Q extends z.ZodType = z.ZodType, B extends z.ZodType = z.ZodType, R extends z.ZodType = z.ZodType, P extends string = string> {
  /** operationId */
  id: string;
  method: Method;
  /** under /api/v1, with `{name}` parameters */
  path: P;
  summary: string;
  tag: string;
  query?: Q;
  body?: B;
  /** the success body (JSON) */
  response?: R;
  /** success status (POST: 201 when it creates, else 200) */
  status?: 200 | 201;
  /** a repeat of an idempotent write answers 200 with the stored response */
  idempotent?: boolean;
  /** route-specific error statuses (the generic ones are added from the declaration) */
  errors?: ErrorStatus[];
  /** largest body accepted (bytes); default: 1 MB, and the ingest limit (TURNLENS_MAX_BODY_MB) for ingest bodies the ingest thread parses */
  maxBodyBytes?: number;
  /** writes by external trainers to one run: write key, ownership, the ingest concurrency limit (429) */
  ingest?: boolean;
  /** the request body's type: JSON (default), or raw bytes for uploads (the handler streams them) */
  bodyType?: "application/json" | "application/octet-stream";
  /** non-JSON success content types (exports) */
  produces?: Record<string, z.ZodType>;
}

/** A path parameter's schema, by name: ids are ids, `step` a decimal step number. */
export const pathParamSchema = (name: string): z.ZodType<string | number> => (name === "step" ? STEP : idSchema);
const STEP = queryInt(0, 2 ** 31 - 1);

export function pathParamNames(path: string): string[] {
  return [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
}

/** Every status a route can answer, derived from its declaration. */
export function statusesOf(c: RouteContract): number[] {
  const s = new Set<number>([c.status ?? (c.method === "POST" ? 201 : 200), 401, 403]);
  if (c.idempotent) s.add(200);
  if (c.query || c.body || pathParamNames(c.path).length) s.add(400);
  if (pathParamNames(c.path).length) s.add(404);
  if (c.method === "POST") {
    s.add(415);
    s.add(400); // the body is parsed even when a route declares none (it must be empty or JSON)
    s.add(413);
    s.add(408); // a body that arrives slower than TURNLENS_BODY_TIMEOUT_MS allows
  }
  if (c.method !== "GET") s.add(507); // a write on a full disk
  if (c.ingest) {
    s.add(409);
    s.add(429);
  }
  for (const e of c.errors ?? []) s.add(e);
  return [...s].sort();
}

export function defineRoute<Q extends z.ZodType = z.ZodType, B extends z.ZodType = z.ZodType, R extends z.ZodType = z.ZodType, const P extends string = string>(
  c: RouteContract<Q, B, R, P>,
): RouteContract<Q, B, R, P> {
  return c;
}
