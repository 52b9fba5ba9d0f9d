// The launch form's sweep mode as text: a varied param's values and the seeds, typed as lists, read
// into the POST /sweeps body; errors say which entry. Pure (no I/O).
import { SWEEP_LIMITS, type SweepValue } from "../schemas/sweeps";

export type Parsed<T> = { ok: true; value: T } | { ok: false; error: string };

/** `0.001, 0.0003` -> numbers; true / false / null; anything else a text (quotes optional). */
export function parseValues(text: string): Parsed<SweepValue[]> {
  const parts = text
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  if (!parts.length) return { ok: false, error: "list at least one value, separated by commas" };
  if (parts.length > SWEEP_LIMITS.values) return { ok: false, error: `at most ${SWEEP_LIMITS.values} values` };
  const value = parts.map((p): SweepValue => {
    if (p === "true" || p === "false") return p === "true";
    if (p === "null") return null;
    const n = Number(p);
    if (p !== "" && Number.isFinite(n)) return n;
    return p.replace(/^"(.*)"$/, "$1");
  });
  return { ok: true, value };
}

/** `0, 1, 2` or a range `0-4` (both ends in): the seeds, each a non-negative integer. */
export function parseSeeds(text: string): Parsed<number[]> {
  const t = text.trim();
  const range = t.match(/^(\d{1,10})\s*-\s*(\d{1,10})$/);
  if (range) {
    const [a, b] = [Number(range[1]), Number(range[2])];
    if (b < a) return { ok: false, error: `the range ${t} runs backwards` };
    if (b - a + 1 > SWEEP_LIMITS.seeds) return { ok: false, error: `at most ${SWEEP_LIMITS.seeds} seeds` };
    return { ok: true, value: Array.from({ length: b - a + 1 }, (_, i) => a + i) };
  }
  const parts = t
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  if (!parts.length) return { ok: false, error: "list the seeds (0, 1, 2) or a range (0-4)" };
  const bad = parts.find((p) => !/^\d{1,10}$/.test(p));
  if (bad !== undefined) return { ok: false, error: `"${bad}" is not a seed (a whole number >= 0)` };
  if (parts.length > SWEEP_LIMITS.seeds) return { ok: false, error: `at most ${SWEEP_LIMITS.seeds} seeds` };
  return { ok: true, value: parts.map(Number) };
}
