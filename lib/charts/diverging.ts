// The one diverging colour scale of the app (heatmaps, token tints, legends): centred at zero,
// negative red, positive blue (ColorBrewer RdBu, colour-blind safe), symmetric domain [-max, max].
// Light theme: pale centre on a white page. Dark theme: dark centre, brighter toward the ends, so
// large |values| stand out on a dark page too. A missing value gets no colour (callers draw a gap).

export type Theme = "light" | "dark";

type Rgb = readonly [number, number, number];

/** Colour stops at t = -1, -0.5, 0, 0.5, 1. */
const STOPS: Record<Theme, readonly Rgb[]> = {
  light: [
    [178, 24, 43], // #b2182b
    [239, 138, 98], // #ef8a62
    [247, 247, 247], // #f7f7f7
    [103, 169, 207], // #67a9cf
    [33, 102, 172], // #2166ac
  ],
  dark: [
    [244, 109, 97], // bright red
    [150, 60, 62],
    [46, 46, 52], // close to the card colour, but not equal to it
    [52, 96, 140],
    [110, 176, 235], // bright blue
  ],
};

const hex = (c: Rgb) => "#" + c.map((x) => Math.round(x).toString(16).padStart(2, "0")).join("");

function lerp(a: Rgb, b: Rgb, f: number): Rgb {
  return [a[0] + (b[0] - a[0]) * f, a[1] + (b[1] - a[1]) * f, a[2] + (b[2] - a[2]) * f];
}

/** Position of `v` on the scale, clamped to [-1, 1] (0 when max is not positive). */
export function scalePosition(v: number, max: number): number {
  if (!(max > 0) || !Number.isFinite(v)) return 0;
  return Math.max(-1, Math.min(1, v / max));
}

function rgbAt(t: number, theme: Theme): Rgb {
  const stops = STOPS[theme];
  const x = (Math.max(-1, Math.min(1, t)) + 1) * 2; // 0..4
  const i = Math.min(3, Math.floor(x));
  return lerp(stops[i], stops[i + 1], x - i);
}

/** Colour of a value; `null` for a missing value (draw a gap, never the zero colour). */
export function divergingColor(v: number | null | undefined, max: number, theme: Theme = "light"): string | null {
  if (v === null || v === undefined || !Number.isFinite(v)) return null;
  return hex(rgbAt(scalePosition(v, max), theme));
}

/** Black or white, whichever reads better on the value's colour (WCAG relative luminance). */
export function textOn(v: number | null | undefined, max: number, theme: Theme = "light"): string {
  if (v === null || v === undefined || !Number.isFinite(v)) return theme === "dark" ? "#e4e4e7" : "#27272a";
  const [r, g, b] = rgbAt(scalePosition(v, max), theme).map((c) => {
    const s = c / 255;
    return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
  });
  const lum = 0.2126 * r + 0.7152 * g + 0.0722 * b;
  return lum > 0.22 ? "#18181b" : "#fafafa";
}

/**
 * Half-width of the symmetric domain: the largest |v|, or with `percentile` (e.g. 98) that
 * percentile of |v| so one outlier does not wash every other cell out. 1 when there is nothing
 * to scale (all missing or all zero), so zeros still get the centre colour.
 */
export function symmetricMax(values: Iterable<number | null | undefined>, percentile?: number): number {
  const abs: number[] = [];
  for (const v of values) if (v !== null && v !== undefined && Number.isFinite(v)) abs.push(Math.abs(v));
  if (abs.length === 0) return 1;
  let m: number;
  if (percentile === undefined || percentile >= 100) m = abs.reduce((a, b) => Math.max(a, b), 0);
  else {
    abs.sort((a, b) => a - b);
    const p = Math.max(0, Math.min(100, percentile));
    m = abs[Math.min(abs.length - 1, Math.ceil((p / 100) * abs.length) - 1)] ?? 0;
  }
  return m > 0 ? m : 1;
}

/** CSS gradient of the whole scale, left = -max, right = +max (for the legend bar). */
export function legendGradient(theme: Theme = "light"): string {
  const stops: string[] = [];
  for (let i = 0; i <= 16; i++) {
    const t = -1 + i / 8;
    stops.push(`${hex(rgbAt(t, theme))} ${(i / 16) * 100}%`);
  }
  return `linear-gradient(to right, ${stops.join(", ")})`;
}

/** Legend tick values: -max, -max/2, 0, max/2, max. */
export function legendTicks(max: number): number[] {
  return [-max, -max / 2, 0, max / 2, max];
}
