// The one fetch wrapper of the browser side (Trackio's `callApi()`): JSON in/out, the API's
// `{error, issues}` surfaced as ApiClientError. With a token configured, the page was opened once with
// `?token=…` (proxy.ts), and its HttpOnly cookie carries the token on every call.
// `callRoute` is its typed face: it takes a route declaration (lib/api/routes.ts), fills the path
// from it and types params, query, body and the answer from the route's zod schemas.
import type { z } from "zod";

export interface ApiIssue {
  path: string;
  message: string;
}

export class ApiClientError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly issues: ApiIssue[],
  ) {
    super(message);
    this.name = "ApiClientError";
  }
}

/** A query value; an array repeats the key (`?key=a&key=b`); undefined, null and "" are left out. */
export type QueryValue = string | number | boolean | undefined | null | readonly (string | number)[];
export type QueryParams = Record<string, QueryValue>;

const API_BASE = "/api/v1";

/** The URL of an API path (under /api/v1) with its query. */
export function apiUrl(path: string, query: QueryParams = {}): URL {
  const url = new URL(API_BASE + path, typeof window === "undefined" ? "http://127.0.0.1" : window.location.origin);
  for (const [k, v] of Object.entries(query)) {
    if (Array.isArray(v)) for (const x of v) url.searchParams.append(k, String(x));
    else if (v !== undefined && v !== null && v !== "") url.searchParams.set(k, String(v));
  }
  return url;
}

/** A request to a path under /api/v1 (callRoute builds the path from a declaration; use that). */
export async function callApi<T>(path: string, init: { method?: string; body?: unknown; query?: QueryParams } = {}): Promise<T> {
  const url = apiUrl(path, init.query);
  const method = init.method ?? "GET";
  // every write is JSON (the server refuses others: a cross-site form cannot send it), `{}` when it has no input
  const body = init.body !== undefined ? init.body : method === "POST" ? {} : undefined;
  const headers: Record<string, string> = {};
  if (body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const data = await res.json().catch(() => null);
  if (!res.ok) throw new ApiClientError(res.status, data?.error ?? `HTTP ${res.status}`, data?.issues ?? []);
  return data as T;
}

// ---------------------------------------------------------------- typed routes

/**
 * What the client reads of a route declaration (lib/api/routes.ts's RouteContract, matched by
 * shape). Only zod schemas: the declarations file imports nothing server-only, so the browser
 * bundle can hold it.
 */
export interface ClientRoute {
  id: string;
  method: "GET" | "POST" | "DELETE";
  path: string;
  query?: z.ZodType;
  body?: z.ZodType;
  response?: z.ZodType;
}

/** `{id}` names of a path template, as a union ("/runs/{id}/steps/{step}" -> "id" | "step"). */
export type PathParamNames<P extends string> = P extends `${string}{${infer N}}${infer Rest}` ? N | PathParamNames<Rest> : never;
/** The path parameters a route needs; a path typed only as `string` gives an open record. */
export type RouteParams<R extends ClientRoute> = string extends R["path"]
  ? Record<string, string | number>
  : { [K in PathParamNames<R["path"]>]: string | number };
/** A schema the route declares (a part it leaves out is typed as the wide default, z.ZodType: none). */
type Declared<S> = NonNullable<S> extends z.ZodType ? (z.ZodType extends NonNullable<S> ? never : NonNullable<S>) : never;
/** A query field as the URL carries it: a field the server parses from text (`string` input) takes a number too. */
type QueryField<T> = T | (string extends T ? number : never);
/** The route's query, typed from its query schema's input. */
export type RouteQuery<R extends ClientRoute> = [Declared<R["query"]>] extends [never]
  ? Record<string, never>
  : { [K in keyof z.input<Declared<R["query"]>>]?: QueryField<z.input<Declared<R["query"]>>[K]> };
/** The route's JSON body, typed from its body schema's input. */
export type RouteBody<R extends ClientRoute> = [Declared<R["body"]>] extends [never] ? never : z.input<Declared<R["body"]>>;
/** The route's answer, typed from its response schema's output. */
export type RouteResponse<R extends ClientRoute> = [Declared<R["response"]>] extends [never] ? unknown : z.output<Declared<R["response"]>>;

/** Path parameters are required where the path names some (known when the declaration keeps its path's literal type). */
type HasParams<R extends ClientRoute> = string extends R["path"] ? false : [PathParamNames<R["path"]>] extends [never] ? false : true;
type HasBody<R extends ClientRoute> = [Declared<R["body"]>] extends [never] ? false : true;
export type RouteInit<R extends ClientRoute> = (HasParams<R> extends true ? { params: RouteParams<R> } : { params?: RouteParams<R> }) & {
  query?: RouteQuery<R>;
} & (HasBody<R> extends true ? { body: RouteBody<R> } : { body?: undefined });
/** callRoute's second argument: required when the route has path parameters or a body. */
type InitArg<R extends ClientRoute> = HasParams<R> extends true ? [RouteInit<R>] : HasBody<R> extends true ? [RouteInit<R>] : [RouteInit<R>?];

/** A route's path with its `{name}` parameters filled in (each URL-encoded); a missing one throws naming it. */
export function routePath(route: ClientRoute, params: Record<string, string | number> = {}): string {
  return route.path.replace(/\{(\w+)\}/g, (_, name: string) => {
    const v = params[name];
    if (v === undefined || v === null || v === "") throw new Error(`${route.id}: path parameter "${name}" is missing`);
    return encodeURIComponent(String(v));
  });
}

/** A route's address for a link (`/api/v1/...?...`), e.g. an export the browser downloads itself. */
export function routeHref<R extends ClientRoute>(route: R, ...[init]: InitArg<R>): string {
  const i = (init ?? {}) as { params?: Record<string, string | number>; query?: QueryParams };
  const url = apiUrl(routePath(route, i.params), i.query);
  return url.pathname + url.search;
}

/** Calls a declared route: method and path from the declaration, types from its schemas, errors as ApiClientError. */
export function callRoute<R extends ClientRoute>(route: R, ...[init]: InitArg<R>): Promise<RouteResponse<R>> {
  const i = (init ?? {}) as { params?: Record<string, string | number>; query?: QueryParams; body?: unknown };
  return callApi<RouteResponse<R>>(routePath(route, i.params), { method: route.method, query: i.query, body: i.body });
}

/**
 * Uploads a file as the raw body (application/octet-stream, which the upload routes take) with XHR,
 * because fetch cannot report upload progress; `onProgress` gets the fraction sent.
 */
export function uploadRoute<R extends ClientRoute>(
  route: R,
  file: Blob,
  init: RouteInit<R>,
  onProgress?: (fraction: number) => void,
): Promise<RouteResponse<R>> {
  type T = RouteResponse<R>;
  const url = apiUrl(routePath(route, init.params as Record<string, string | number> | undefined), init.query as QueryParams | undefined);
  return new Promise<T>((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open(route.method, url);
    xhr.setRequestHeader("content-type", "application/octet-stream");
    xhr.upload.onprogress = (e) => onProgress?.(e.lengthComputable ? e.loaded / e.total : 0);
    xhr.onerror = () => reject(new ApiClientError(0, "the upload failed: the server could not be reached", []));
    xhr.onload = () => {
      let data: { error?: string; issues?: ApiIssue[] } | null = null;
      try {
        data = JSON.parse(xhr.responseText);
      } catch {
        /* not JSON */
      }
      if (xhr.status >= 200 && xhr.status < 300) resolve(data as T);
      else reject(new ApiClientError(xhr.status, data?.error ?? `HTTP ${xhr.status}`, data?.issues ?? []));
    };
    xhr.send(file);
  });
}
