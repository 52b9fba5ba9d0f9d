// What the body limit walk (lib/schemas/json-limits.ts findJsonViolation: depth, lengths, numbers
// beyond the double range, lone UTF-16 surrogates) costs on a large step, beside JSON.parse of it.
//   node --import tsx scripts/bench-json-limits.ts [ascii|mixed]
// mixed: observations with non-ASCII characters (two-byte strings, which the surrogate check scans).
import { findJsonViolation } from "../lib/schemas/json-limits";

const mixed = process.argv[2] === "mixed";
const obs = (i: number) => (mixed ? "You see a café — 東京 " : "You are in the middle of a room. ").repeat(40) + i;
const turns = (k0: number) =>
  Array.from({ length: 30 }, (_, k) => ({
    observation: obs(k0 + k),
    action: "go to desk 1",
    reward: 0,
    tokenIds: Array.from({ length: 200 }, (_, i) => i * 31 + k),
    tokenLogprobs: Array.from({ length: 200 }, (_, i) => -i / 997),
  }));
const groups = Array.from({ length: 16 }, (_, g) => ({
  uid: `u${g}`,
  envId: "alfworld",
  trajectories: Array.from({ length: 16 }, (_, t) => ({ turns: turns(t) })),
}));
const text = JSON.stringify({ step: 1, groups });
const value = JSON.parse(text);
const walk: number[] = [];
const parse: number[] = [];
for (let r = 0; r < 15; r++) {
  let t0 = performance.now();
  if (findJsonViolation(value)) throw new Error("the bench step breaks a limit");
  walk.push(performance.now() - t0);
  t0 = performance.now();
  JSON.parse(text);
  parse.push(performance.now() - t0);
}
const median = (xs: number[]) => xs.sort((a, b) => a - b)[xs.length >> 1];
console.log(
  `${(Buffer.byteLength(text) / 1e6).toFixed(1)} MB step, ${mixed ? "non-ASCII" : "ASCII"} observations; median of 15: limit walk ${median(walk).toFixed(1)} ms, JSON.parse ${median(parse).toFixed(0)} ms`,
);
