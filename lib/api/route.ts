// One wrapper for every route handler: it enforces the route's declaration (lib/api/routes.ts):
// Host, token, CSRF rules, body size and JSON limits, path/query/body schemas, and maps errors to
// `{error, issues}` with a 4xx code. Handlers only call lib/ and return JSON.
import type { NextRequest } from "next/server";
import type { z } from "zod";
import { pathParamNames, pathParamSchema, type RouteContract } from "./contract";
import { toErrorResponse } from "./errors";
import { DomainError, parseInput } from "../schemas/errors";
import { parseJsonBytes } from "../schemas/json-limits";
import { checkRequest, securityConfig, type SecurityConfig } from "./security";
import { noteRead } from "../ingest/pool";
import { bodyTimeoutMs } from "./body-timeout";

/** Body limit of every route that declares none and is not an ingest body (docs/api.md: 1 MB outside ingest). */
const SMALL_BODY_BYTES = 1 << 20;

/** Ingest body limit (TURNLENS_MAX_BODY_MB, default 64 MB): metrics and steps, which the ingest thread parses. */
export function maxBodyBytes(): number {
  const mb = Number(process.env.TURNLENS_MAX_BODY_MB ?? 64);
  return Number.isFinite(mb) && mb > 0 ? Math.floor(mb * 1024 * 1024) : 64 * 1024 * 1024;
}

let cachedCfg: { env: string; cfg: SecurityConfig } | null = null;
/** Settings are re-read when the environment changes (tests), else cached. */
function security(): SecurityConfig {
  const key = `${process.env.TURNLENS_API_TOKEN ?? ""}\0${process.env.TURNLENS_READ_TOKEN ?? ""}\0${process.env.TURNLENS_ALLOWED_HOSTS ?? ""}`;
  if (cachedCfg?.env !== key) cachedCfg = { env: key, cfg: securityConfig() };
  return cachedCfg.cfg;
}

/**
 * Hands the body to `onChunk` as it arrives, refusing more than `limit` bytes: by Content-Length
 * before reading anything, and while streaming when the length is not declared (nothing past the
 * limit is read). `setting` names the variable that sets the limit, for the 413's message. A body
 * that has not ended `timeoutMs` after reading began is refused (408) and the rest left unread.
 */
export async function readBodyChunks(
  req: Request,
  limit: number,
  onChunk: (c: Uint8Array) => void | Promise<void>,
  setting = "the ingest limit is TURNLENS_MAX_BODY_MB",
  timeoutMs = bodyTimeoutMs(),
): Promise<number> {
  const tooLarge = () =>
    new DomainError("too_large", `request body larger than this endpoint's limit of ${limit} bytes (${setting})`, [{ path: "body", message: "too large" }]);
  const declared = req.headers.get("content-length");
  if (declared !== null && Number(declared) > limit) throw tooLarge();
  if (!req.body) return 0;
  const reader = req.body.getReader();
  let size = 0;
  // cancelling ends the pending read; the flag tells that end from the body's own
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    reader.cancel().catch(() => {});
  }, timeoutMs);
  try {
    for (;;) {
      const { done, value } = await reader.read().catch((e: Error) => {
        // the client closed its connection mid-body: its request, not a server error (no one reads the answer)
        throw new DomainError("invalid", `the request body did not arrive whole: ${e.message}`, [{ path: "body", message: "incomplete" }]);
      });
      if (timedOut)
        throw new DomainError("timeout", `request body did not arrive within ${timeoutMs} ms (${size} bytes came; the limit is TURNLENS_BODY_TIMEOUT_MS)`, [
          { path: "body", message: "arrived too slowly" },
        ]);
      if (done) break;
      size += value.byteLength;
      if (size > limit) throw tooLarge();
      await onChunk(value);
    }
  } catch (e) {
    // refused, or `onChunk` failed (a full disk): the rest of the body is not read
    await reader.cancel().catch(() => {});
    throw e;
  } finally {
    clearTimeout(timer);
  }
  return size;
}

/** The body in one buffer of its own (so it can move to the ingest thread without a copy), at most `limit` bytes. */
export async function readBodyBytes(req: Request, limit: number): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  const size = await readBodyChunks(req, limit, (c) => void chunks.push(c));
  const out = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  return out;
}

export interface RouteInput<Q extends z.ZodType, B extends z.ZodType> {
  req: NextRequest;
  params: Record<string, string> & { step?: number };
  query: z.infer<Q>;
  body: z.infer<B>;
  /** the raw body (rawBody routes only), handed to the ingest thread unparsed */
  bodyBytes: Uint8Array;
}

type Ctx = { params: Promise<Record<string, string | string[]>> };

/** A returned `Ok` picks the status (e.g. 200 for an idempotent repeat) and headers. */
export class Ok {
  constructor(
    readonly body: unknown,
    readonly status: number,
    readonly headers: Record<string, string> = {},
  ) {}
}

export interface RouteOptions {
  /** the handler parses the body itself (ingest thread): the wrapper only reads the bytes, up to the ingest limit */
  rawBody?: boolean;
  /**
   * Runs before the body is read: checks what the headers and path decide (an ingest run's write
   * key) and takes a slot, or throws (403, the ingest queue's 429), so a refused body is never
   * buffered nor holds a slot; the returned function gives the slot back once the handler is done.
   */
  admit?: (x: { req: NextRequest; params: Record<string, unknown> }) => () => void;
  /** the handler streams the body itself (uploads, readBodyChunks): the wrapper reads none of it */
  streamBody?: boolean;
}

export function route<Q extends z.ZodType, B extends z.ZodType, R extends z.ZodType>(
  contract: RouteContract<Q, B, R>,
  fn: (x: RouteInput<Q, B>) => unknown,
  opts: RouteOptions = {},
) {
  const names = pathParamNames(contract.path);
  const success = contract.status ?? (contract.method === "POST" ? 201 : 200);
  const check = process.env.TURNLENS_CHECK_RESPONSES === "1";
  return async (req: NextRequest, ctx: Ctx): Promise<Response> => {
    let release: (() => void) | undefined;
    if (contract.method === "GET") noteRead(); // ingest leaves a core to the dashboard's readers (lib/ingest/pool.ts)
    try {
      checkRequest(req, security(), contract.bodyType);
      let raw: Record<string, string | string[]> = {};
      try {
        raw = ctx?.params ? await ctx.params : {};
      } catch {
        throw new DomainError("invalid", "malformed path: a segment is not valid percent-encoding", [{ path: "params", message: "invalid percent-encoding" }]);
      }
      const params: Record<string, unknown> = {};
      for (const n of names) params[n] = parseInput(pathParamSchema(n), raw[n], `params.${n}`);
      const query = contract.query ? parseInput(contract.query, queryObject(req), "query") : {};
      release = opts.admit?.({ req, params });
      let bodyBytes: Uint8Array = new Uint8Array(0);
      let body: unknown;
      if (contract.method !== "GET" && !opts.streamBody) {
        bodyBytes = await readBodyBytes(req, contract.maxBodyBytes ?? (opts.rawBody ? maxBodyBytes() : SMALL_BODY_BYTES));
        if (!opts.rawBody) {
          if (contract.body) body = parseInput(contract.body, parseJsonBytes(bodyBytes), "body");
          else if (!blank(bodyBytes)) parseJsonBytes(bodyBytes); // no body expected: it must at least be JSON
        }
      }
      const out = await fn({ req, params: params as RouteInput<Q, B>["params"], query: query as z.infer<Q>, body: body as z.infer<B>, bodyBytes });
      if (out instanceof Response) return out;
      const ok = out instanceof Ok ? out : new Ok(out, success);
      if (check && contract.response) {
        const r = contract.response.safeParse(ok.body);
        if (!r.success) throw new Error(`response of ${contract.id} violates its schema: ${r.error.message}`);
      }
      return Response.json(ok.body, { status: ok.status, headers: ok.headers });
    } catch (err) {
      return toErrorResponse(err);
    } finally {
      release?.();
    }
  };
}

/** Whether a body is empty or only JSON whitespace. */
const blank = (b: Uint8Array) => b.every((x) => x === 0x20 || x === 0x0a || x === 0x0d || x === 0x09);

/** Query parameters as an object; a parameter the schema declares as an array keeps every value. */
function queryObject(req: NextRequest): Record<string, string | string[]> {
  const sp = req.nextUrl.searchParams;
  const out: Record<string, string | string[]> = {};
  for (const k of new Set(sp.keys())) {
    const all = sp.getAll(k);
    out[k] = all.length > 1 ? all : all[0];
  }
  return out;
}
