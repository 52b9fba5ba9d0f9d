// The typed browser client: callRoute fills a route's path and query from its declaration
// (lib/api/routes.ts), sends the method and body it declares and surfaces errors as
// ApiClientError; the query factories keep the keys server pages seed caches under; and what the
// browser imports (lib/queries, lib/client, the route declarations) reaches no server-only module.
import fs from "node:fs";
import path from "node:path";
import ts from "typescript";
import { afterEach, beforeEach, describe, expect, expectTypeOf, it, vi } from "vitest";
import { ApiClientError, callRoute, routeHref, routePath } from "@/lib/client/api";
import { routes } from "@/lib/api/routes";
import { creditOverviewQuery, groupCreditQuery, runQuery, runsPageQuery, stepsQuery } from "@/lib/queries";
import type { CreditOverview, GroupCredit } from "@/lib/schemas/credit";
import type { RunOut } from "@/lib/schemas/runs";

interface Sent {
  url: URL;
  method: string;
  headers: Record<string, string>;
  body: string | undefined;
}
let sent: Sent[] = [];
let answer: { status: number; body: unknown } = { status: 200, body: {} };

beforeEach(() => {
  sent = [];
  answer = { status: 200, body: {} };
  // our own URL building is under test: the stub records the request the client makes and answers it
  vi.stubGlobal("fetch", async (url: URL, init: { method: string; headers: Record<string, string>; body?: string }) => {
    sent.push({ url: new URL(url), method: init.method, headers: init.headers, body: init.body });
    return new Response(JSON.stringify(answer.body), { status: answer.status, headers: { "content-type": "application/json" } });
  });
});
afterEach(() => vi.unstubAllGlobals());

const only = () => {
  expect(sent).toHaveLength(1);
  return sent[0];
};

describe("callRoute", () => {
  it("fills every path parameter, URL-encoded, and the query from the declaration", async () => {
    await callRoute(routes.groupCredit, { params: { id: "run_1", step: 3, groupId: "g-2" }, query: { estimator: "gigpo", params: '{"gamma":0.9}' } });
    const r = only();
    expect(r.method).toBe("GET");
    expect(r.url.pathname).toBe("/api/v1/runs/run_1/steps/3/groups/g-2/credit");
    expect(r.url.searchParams.get("estimator")).toBe("gigpo");
    expect(r.url.searchParams.get("params")).toBe('{"gamma":0.9}');
    expect(r.body).toBeUndefined();
    expect(routePath(routes.trajectoryGet, { id: "a/b c" })).toBe("/trajectories/a%2Fb%20c");
  });

  it("leaves out undefined, null and empty query values, and repeats an array's key", async () => {
    await callRoute(routes.runsList, { query: { q: "", status: undefined, page: 2, pageSize: 50 } });
    expect(only().url.search).toBe("?page=2&pageSize=50");
    expect(routeHref(routes.metricsExport, { params: { id: "r1" }, query: { format: "json", key: ["a/b", "c"] } })).toBe(
      "/api/v1/runs/r1/metrics/export?format=json&key=a%2Fb&key=c",
    );
  });

  it("sends the declared method and the body as JSON; a body-less action sends {}", async () => {
    await callRoute(routes.runsLaunch, { body: { jobKind: "baseline", config: { envId: "frozenlake" } } });
    await callRoute(routes.runCancel, { params: { id: "r9" }, body: {} });
    await callRoute(routes.runDelete, { params: { id: "r9" } });
    expect(sent.map((s) => [s.method, s.url.pathname, s.body])).toEqual([
      ["POST", "/api/v1/runs", JSON.stringify({ jobKind: "baseline", config: { envId: "frozenlake" } })],
      ["POST", "/api/v1/runs/r9/cancel", "{}"],
      ["DELETE", "/api/v1/runs/r9", undefined],
    ]);
    expect(sent[0].headers["content-type"]).toBe("application/json");
  });

  it("refuses a missing path parameter by name, before any request", () => {
    // (routePath: callRoute's own params type already refuses this where the declaration keeps its path's literal type)
    expect(() => routePath(routes.groupsList, { id: "r1" })).toThrow('listGroups: path parameter "step" is missing');
    expect(() => callRoute(routes.groupsList, { params: { id: "r1" } as unknown as { id: string; step: number } })).toThrow(
      'listGroups: path parameter "step" is missing',
    );
    expect(sent).toHaveLength(0);
  });

  it("surfaces the API's {error, issues} as ApiClientError", async () => {
    answer = { status: 400, body: { error: "invalid query", issues: [{ path: "query.estimator", message: "unknown" }] } };
    const err = await callRoute(routes.creditOverview, { params: { id: "r1" }, query: { estimator: "grpo" } }).catch((e) => e);
    expect(err).toBeInstanceOf(ApiClientError);
    expect(err.status).toBe(400);
    expect(err.issues).toEqual([{ path: "query.estimator", message: "unknown" }]);
  });

  it("types the answer from the route's response schema", () => {
    // compile-time: tsc fails this file if the inferred types drift (the calls are never awaited)
    expectTypeOf(callRoute(routes.runGet, { params: { id: "r" } })).resolves.toEqualTypeOf<RunOut>();
    expectTypeOf(callRoute(routes.groupCredit, { params: { id: "r", step: 0, groupId: "g" } })).resolves.toEqualTypeOf<GroupCredit>();
    expectTypeOf(callRoute(routes.creditOverview, { params: { id: "r" } })).resolves.toEqualTypeOf<CreditOverview>();
    expectTypeOf(callRoute(routes.stepsList, { params: { id: "r" } }))
      .resolves.toHaveProperty("steps")
      .toBeArray();
    // @ts-expect-error: not a value the query schema takes
    void callRoute(routes.runsList, { query: { order: "sideways" } });
    // @ts-expect-error: a write declares its body
    void callRoute(routes.runsLaunch, {});
  });
});

describe("query factories", () => {
  it("keep their keys and fetch the declared routes", async () => {
    expect(runQuery("r1").queryKey).toEqual(["run", "r1"]);
    expect(stepsQuery("r1").queryKey).toEqual(["run", "r1", "steps"]);
    expect(runsPageQuery({ status: "running" }, 3).queryKey).toEqual(["runs", "page", { status: "running" }, 3]);
    const gc = groupCreditQuery("r1", 4, "g7", { estimator: "grpo", params: { norm: false } });
    expect(gc.queryKey).toEqual(["run", "r1", "group-credit", 4, "g7", "grpo", { norm: false }]);
    const co = creditOverviewQuery("r1", {}, 20);
    expect(co.queryKey).toEqual(["run", "r1", "credit-overview", "stored", null, 20]);

    const run = (q: { queryFn?: unknown }) => (q.queryFn as (ctx: unknown) => Promise<unknown>)({});
    await run(runQuery("r1"));
    await run(stepsQuery("r1"));
    await run(runsPageQuery({ status: "running" }, 3));
    await run(gc);
    await run(co);
    expect(sent.map((s) => s.url.pathname + s.url.search)).toEqual([
      "/api/v1/runs/r1",
      "/api/v1/runs/r1/steps?pageSize=1000",
      "/api/v1/runs?status=running&page=3&pageSize=100",
      "/api/v1/runs/r1/steps/4/groups/g7/credit?estimator=grpo&params=%7B%22norm%22%3Afalse%7D",
      "/api/v1/runs/r1/credit?maxSteps=20",
    ]);
  });
});

describe("the browser's imports", () => {
  const ROOT = path.resolve(import.meta.dirname, "../..");
  /** Repository files reached through value imports (type-only imports are erased), and the packages they name. */
  function closure(entries: string[]) {
    const files = new Set<string>();
    const packages = new Map<string, string>();
    const todo = entries.map((e) => path.join(ROOT, e));
    while (todo.length) {
      const file = todo.pop()!;
      if (files.has(file)) continue;
      files.add(file);
      const sf = ts.createSourceFile(file, fs.readFileSync(file, "utf8"), ts.ScriptTarget.Latest);
      for (const st of sf.statements) {
        if (!(ts.isImportDeclaration(st) || ts.isExportDeclaration(st)) || !st.moduleSpecifier || !ts.isStringLiteral(st.moduleSpecifier)) continue;
        if (ts.isImportDeclaration(st) && st.importClause?.isTypeOnly) continue;
        if (ts.isExportDeclaration(st) && st.isTypeOnly) continue;
        const named = ts.isImportDeclaration(st) ? st.importClause?.namedBindings : undefined;
        if (
          ts.isImportDeclaration(st) &&
          !st.importClause?.name &&
          named &&
          ts.isNamedImports(named) &&
          named.elements.length &&
          named.elements.every((e) => e.isTypeOnly)
        )
          continue;
        const spec = st.moduleSpecifier.text;
        if (!spec.startsWith(".") && !spec.startsWith("@/")) {
          packages.set(spec, path.relative(ROOT, file));
          continue;
        }
        const base = spec.startsWith("@/") ? path.join(ROOT, spec.slice(2)) : path.resolve(path.dirname(file), spec);
        const hit = [base, `${base}.ts`, `${base}.tsx`, path.join(base, "index.ts")].find((c) => fs.existsSync(c) && fs.statSync(c).isFile());
        if (hit) todo.push(hit);
      }
    }
    return { files: [...files].map((f) => path.relative(ROOT, f).split(path.sep).join("/")), packages };
  }

  it("reach only the route declarations, schemas and pure rooms: no store, service, server wrapper or Node module", () => {
    const entries = [
      "lib/client/api.ts",
      "lib/api/routes.ts",
      ...fs
        .readdirSync(path.join(ROOT, "lib/queries"))
        .filter((f) => f.endsWith(".ts"))
        .map((f) => `lib/queries/${f}`),
    ];
    const { files, packages } = closure(entries);
    expect(files).toContain("lib/api/contract.ts");
    const server = files.filter(
      (f) => /^lib\/(db|runs|jobs|ingest|generated)\//.test(f) || (f.startsWith("lib/api/") && !["lib/api/routes.ts", "lib/api/contract.ts"].includes(f)),
    );
    expect(server).toEqual([]);
    const nodeOnly = [...packages].filter(([p]) => p.startsWith("node:") || /^(fs|path|crypto|child_process|better-sqlite3|@prisma\/|next\/server)/.test(p));
    expect(nodeOnly).toEqual([]);
  });
});
