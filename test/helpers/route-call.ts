// Calls a route handler in-process as Next.js would (a NextRequest, its params as a promise),
// remembering the write key of each run the calls import and sending it with later writes to it.
import { NextRequest } from "next/server";

type Handler<P> = (req: NextRequest, ctx: { params: Promise<P> }) => Promise<Response>;

export function routeCaller() {
  const writeKeys = new Map<string, string>();
  return async function call<P = Record<string, never>>(h: Handler<P>, method: string, path: string, opts: { body?: unknown; params?: P } = {}) {
    const key = writeKeys.get((opts.params as { id?: string } | undefined)?.id ?? "");
    const init = {
      method,
      headers: { "content-type": "application/json", ...(key ? { "x-turnlens-write-key": key } : {}) },
      body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
    };
    const res = await h(new NextRequest(new URL(path, "http://127.0.0.1:3000"), init), { params: Promise.resolve((opts.params ?? {}) as P) });
    const json = await res.json();
    if (json?.writeKey) writeKeys.set(json.id, json.writeKey);
    return { status: res.status, json };
  };
}
