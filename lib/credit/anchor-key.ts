// Canonical anchor keys (GiGPO step 4: anchor-state grouping, see gigpo.ts): equal states give equal keys
// whatever the key order or number formatting of the observation object, and anchors of
// different JSON types never share a key (the number 1 is not the string "1").
import type { AnchorValue } from "./types";

/**
 * Canonical text of an anchor. A string is its own text (environments already emit canonical
 * strings); any other JSON value is serialised with object keys sorted recursively and numbers
 * printed by JSON (so 1, 1.0 and 1e0 parsed from JSON are the same number, and -0 is 0).
 * The text forgets the type: the string "1" and the number 1 have the same text. Grouping uses
 * `anchorGroupKey`, which keeps them apart.
 */
export function canonicalAnchorKey(anchor: AnchorValue | undefined): string {
  if (anchor === undefined) return "";
  if (typeof anchor === "string") return anchor;
  return canonicalJson(anchor);
}

/** Marks a grouping key that is not a plain string anchor (see `anchorGroupKey`). */
const TAG = "\u0000";

/**
 * Grouping key of an anchor: equal iff the anchors are the same JSON value of the same type.
 * A string is its own key (the common case costs nothing), unless it starts with U+0000, then it
 * is TAG + "s" + the string; any other value is TAG + its canonical JSON (which never starts with
 * "s" or "u"); a missing anchor is TAG + "u". So `1` / `"1"`, `null` / `"null"`, `{"a":1}` /
 * `'{"a":1}'` and a missing anchor / `""` all get different keys.
 */
export function anchorGroupKey(anchor: AnchorValue | undefined): string {
  if (typeof anchor === "string") return anchor.charCodeAt(0) === 0 ? TAG + "s" + anchor : anchor;
  if (anchor === undefined) return TAG + "u";
  return TAG + canonicalJson(anchor);
}

/** JSON type of an anchor: 0 missing, 1 string, 2 number, 3 boolean, 4 null, 5 array, 6 object. */
export type AnchorKind = 0 | 1 | 2 | 3 | 4 | 5 | 6;

export function anchorKind(anchor: AnchorValue | undefined): AnchorKind {
  if (anchor === undefined) return 0;
  if (anchor === null) return 4;
  switch (typeof anchor) {
    case "string":
      return 1;
    case "number":
      return 2;
    case "boolean":
      return 3;
    default:
      return Array.isArray(anchor) ? 5 : 6;
  }
}

export function canonicalJson(value: AnchorValue): string {
  if (value === null) return "null";
  switch (typeof value) {
    case "number":
      if (!Number.isFinite(value)) throw new Error(`anchor contains a non-finite number: ${value}`);
      return JSON.stringify(value === 0 ? 0 : value);
    case "boolean":
      return value ? "true" : "false";
    case "string":
      return JSON.stringify(value);
    default:
      if (Array.isArray(value)) return "[" + value.map(canonicalJson).join(",") + "]";
      return (
        "{" +
        Object.keys(value)
          .sort()
          .map((k) => JSON.stringify(k) + ":" + canonicalJson((value as Record<string, AnchorValue>)[k]))
          .join(",") +
        "}"
      );
  }
}
