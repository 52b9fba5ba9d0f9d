// How long a request body may take to arrive, read by the route wrapper (lib/api/route.ts: 408
// past it) or, after an answer sent before the body ended, discarded by the web server
// (scripts/early-answer.mjs: the connection is closed then). Without it a client that trickles a
// body holds what the request took (an ingest slot, a connection) for as long as it likes.
// Its own file: the web server reads it from source before the compiled routes load.

/**
 * Milliseconds from a request's start until its body must have arrived (TURNLENS_BODY_TIMEOUT_MS,
 * default 60 s: the largest ingest body, 64 MB, needs about 1.1 MB/s).
 */
export function bodyTimeoutMs(env: Record<string, string | undefined> = process.env): number {
  const v = env.TURNLENS_BODY_TIMEOUT_MS ?? "60000";
  const ms = Number(v);
  if (!/^\d+$/.test(v) || !(ms > 0)) throw new Error(`TURNLENS_BODY_TIMEOUT_MS must be a whole number of milliseconds above 0 (got ${JSON.stringify(v)})`);
  return ms;
}
