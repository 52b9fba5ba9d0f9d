// Web security shared by the API wrapper (lib/api/route.ts) and the page proxy (proxy.ts).
// Safe by default on loopback too: a page the user visits elsewhere must not be able to launch,
// cancel or ingest (CSRF), nor read through a rebound DNS name (Host allowlist).
import { timingSafeEqual } from "node:crypto";
import { isIP } from "node:net";
import { DomainError } from "../schemas/errors";

/** Tokens shorter than this are refused at start-up: a guessable token is no protection. */
export const MIN_TOKEN_LENGTH = 32;
/** Cookie the dashboard's token form sets (HttpOnly, SameSite=Strict): accepted like a bearer token. */
export const TOKEN_COOKIE = "turnlens_token";

export interface SecurityConfig {
  /** writes need it when set */
  apiToken: string | null;
  /** reads (pages and GET endpoints) need it, or the API token, when set */
  readToken: string | null;
  /** Host header values (host or host:port, lower case) accepted besides the loopback names */
  allowedHosts: string[];
}

function token(env: Record<string, string | undefined>, name: string): string | null {
  const v = env[name];
  if (v === undefined || v === "") return null;
  if (v.trim() !== v || v.length < MIN_TOKEN_LENGTH)
    throw new Error(`${name} must be at least ${MIN_TOKEN_LENGTH} characters with no surrounding whitespace (generate one with: openssl rand -hex 32)`);
  return v;
}

/** Reads and checks the settings; throws naming the variable on a bad one. */
export function securityConfig(env: Record<string, string | undefined> = process.env): SecurityConfig {
  return {
    apiToken: token(env, "TURNLENS_API_TOKEN"),
    readToken: token(env, "TURNLENS_READ_TOKEN"),
    allowedHosts: (env.TURNLENS_ALLOWED_HOSTS ?? "")
      .split(",")
      .map((h) => h.trim().toLowerCase())
      .filter(Boolean),
  };
}

/** True for an address or name that only this machine can reach: 127.0.0.0/8, ::1, localhost. */
export function isLoopbackHostname(hostname: string): boolean {
  const h = hostname.toLowerCase().replace(/^\[|\]$/g, "");
  if (h === "localhost") return true;
  const v = isIP(h);
  if (v === 4) return h.split(".")[0] === "127";
  if (v === 6) return h === "::1" || h === "0:0:0:0:0:0:0:1" || /^::ffff:127\./.test(h);
  return false;
}

/** Splits a Host header into hostname and port; null when it is not a well-formed host. */
export function parseHost(host: string): { hostname: string; port: string } | null {
  const m = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+)(?::(\d{1,5}))?$/.exec(host);
  return m ? { hostname: m[1].toLowerCase(), port: m[2] ?? "" } : null;
}

/** The Host allowlist: loopback names (any port) plus TURNLENS_ALLOWED_HOSTS (`name` or `name:port`). */
export function hostAllowed(host: string | null, cfg: SecurityConfig): boolean {
  if (!host) return false;
  const p = parseHost(host);
  if (!p) return false;
  if (isLoopbackHostname(p.hostname)) return true;
  const lower = host.toLowerCase();
  return cfg.allowedHosts.some((a) => a === lower || a === p.hostname);
}

function sameToken(got: string, want: string): boolean {
  const a = Buffer.from(got);
  const b = Buffer.from(want);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The token a request carries: `Authorization: Bearer …`, else the dashboard's cookie. */
export function requestToken(headers: Headers): string {
  const bearer = headers.get("authorization")?.match(/^Bearer (.+)$/)?.[1];
  if (bearer) return bearer;
  const cookie = headers.get("cookie") ?? "";
  for (const part of cookie.split(";")) {
    const [k, ...v] = part.trim().split("=");
    if (k === TOKEN_COOKIE) {
      try {
        return decodeURIComponent(v.join("="));
      } catch {
        return "";
      }
    }
  }
  return "";
}

export type Access = "read" | "write";

/** Whether the request's token opens `access` (no token configured: open). */
export function tokenAllows(headers: Headers, access: Access, cfg: SecurityConfig): boolean {
  const got = requestToken(headers);
  if (access === "write") return !cfg.apiToken || sameToken(got, cfg.apiToken);
  if (!cfg.readToken) return true; // reads are open unless a read token is set
  return sameToken(got, cfg.readToken) || (!!cfg.apiToken && sameToken(got, cfg.apiToken));
}

/**
 * Everything the API checks before reading a body: the Host, the token, and for state-changing
 * methods a same-origin, JSON request (an HTML form or a no-CORS fetch from another site can send
 * neither application/json nor our Origin). Upload routes take application/octet-stream instead:
 * not a type an HTML form can send either, so a cross-site fetch of it needs a CORS preflight we never grant.
 */
export function checkRequest(
  req: Request,
  cfg: SecurityConfig = securityConfig(),
  bodyType: "application/json" | "application/octet-stream" = "application/json",
): void {
  // Node's HTTP server refuses HTTP/1.1 requests without Host; a Request built in-process (tests) has
  // none, and its URL's host stands in
  const host = req.headers.get("host") ?? new URL(req.url).host;
  if (!hostAllowed(host, cfg))
    throw new DomainError("forbidden", `Host "${host ?? ""}" is not allowed; add it to TURNLENS_ALLOWED_HOSTS`, [
      { path: "headers.host", message: "not an allowed host" },
    ]);
  const unsafe = !["GET", "HEAD", "OPTIONS"].includes(req.method);
  if (unsafe) {
    const origin = req.headers.get("origin");
    if (origin !== null) {
      let originHost: string | null = null;
      try {
        originHost = new URL(origin).host;
      } catch {
        /* "null" or garbage */
      }
      if (originHost === null || originHost.toLowerCase() !== host.toLowerCase())
        throw new DomainError("forbidden", `cross-origin request refused: Origin ${origin} is not this dashboard (${host})`, [
          { path: "headers.origin", message: "must be the dashboard's own origin" },
        ]);
    }
    if (req.headers.get("sec-fetch-site") === "cross-site")
      throw new DomainError("forbidden", "cross-site request refused", [{ path: "headers.sec-fetch-site", message: "cross-site" }]);
    if (req.method !== "DELETE") {
      const type = (req.headers.get("content-type") ?? "").split(";")[0].trim().toLowerCase();
      if (type !== bodyType)
        throw new DomainError(
          "unsupported_media_type",
          `${bodyType === "application/json" ? "state-changing requests" : "this upload"} must be Content-Type: ${bodyType} (got ${type ? `"${type}"` : "none"})`,
          [{ path: "headers.content-type", message: `must be ${bodyType}` }],
        );
    }
  }
  if (!tokenAllows(req.headers, unsafe ? "write" : "read", cfg)) {
    const which = unsafe ? "TURNLENS_API_TOKEN" : "TURNLENS_READ_TOKEN (or TURNLENS_API_TOKEN)";
    throw new DomainError("unauthorized", `this endpoint needs \`Authorization: Bearer <${which}>\``, [
      { path: "headers.authorization", message: "missing or wrong bearer token" },
    ]);
  }
}
