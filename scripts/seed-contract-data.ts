// Stores a little data through the public API so the contract test (scripts/test-api-contract.sh)
// reaches operations on existing runs: an imported run with metrics and one step, and a queued
// baseline run. Prints the ids.
const base = (process.argv[2] ?? "http://127.0.0.1:3000").replace(/\/$/, "") + "/api/v1";

async function post(path: string, body: unknown, headers: Record<string, string> = {}) {
  const r = await fetch(base + path, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) });
  const json = await r.json();
  if (!r.ok) throw new Error(`POST ${path}: ${r.status} ${JSON.stringify(json)}`);
  return json;
}

const run = await post("/runs/import", { name: "contract-imported", envId: "sokoban", estimator: "gigpo", config: { lr: 1e-6 } });
const key = { "x-turnlens-write-key": run.writeKey };
await post(`/runs/${run.id}/metrics`, { points: Array.from({ length: 50 }, (_, i) => ({ step: i, values: { "train/reward": i / 50 } })) }, key);
await post(
  `/runs/${run.id}/steps`,
  {
    step: 0,
    estimator: "gigpo",
    groups: [0, 1].map((g) => ({
      uid: `task-${g}`,
      envId: "sokoban",
      trajectories: [0, 1].map((t) => ({
        success: t === 0,
        turns: [0, 1, 2].map((i) => ({ observation: `o${i}`, action: "left", reward: t === 0 && i === 2 ? 1 : 0, anchor: `s${i}`, advantage: 0.5 - t })),
      })),
    })),
  },
  key,
);
const launched = await post("/runs", { jobKind: "baseline", name: "contract-baseline", config: { envId: "frozenlake", episodes: 8 } });
console.log(JSON.stringify({ imported: run.id, baseline: launched.id }));
export {};
