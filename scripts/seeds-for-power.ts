// npm run seeds-for-power -- --effect 0.412 --sd-a 0.446 --sd-b 0.203 [--alpha 0.05] [--power 0.8]
// The seeds per arm a two-arm experiment needs so that a two-sided Welch test at --alpha detects a
// true difference --effect with --power, from a pilot's standard deviations (lib/stats/two-sample.ts
// welchPower, seedsForPower). Prints the power at each seed count up to the answer and a bit past it.
import { seedsForPower, welchPower } from "../lib/stats/two-sample";

const args = process.argv.slice(2);
const num = (name: string, def?: number) => {
  const i = args.indexOf(`--${name}`);
  const v = i >= 0 ? Number(args[i + 1]) : def;
  if (v === undefined || !Number.isFinite(v)) throw new Error(`--${name} must be a number${def === undefined ? " (required)" : ""}`);
  return v;
};
const effect = num("effect");
const sdA = num("sd-a");
const sdB = num("sd-b");
const alpha = num("alpha", 0.05);
const power = num("power", 0.8);
const n = seedsForPower(effect, sdA, sdB, { alpha, power });
console.log(`effect ${effect}, sd ${sdA} and ${sdB}, two-sided Welch at ${alpha}: power by seeds per arm`);
for (let k = Math.max(2, n - 4); k <= n + 3; k++)
  console.log(`  ${String(k).padStart(3)}  ${welchPower(effect, sdA, sdB, k, alpha).toFixed(3)}${k === n ? "  <- fewest with power >= " + power : ""}`);
console.log(`seeds per arm: ${n}`);
