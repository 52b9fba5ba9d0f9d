// Anchor ids for the fast path: every turn's anchor becomes a dense integer id by first
// appearance, equal iff the anchors are the same JSON value of the same type (as anchorGroupKey
// decides). Plain ASCII string anchors are interned by their bytes in an open-addressing table,
// with no string made; other strings by value, other JSON values by canonical JSON.
import { type AnchorKind, canonicalJson } from "../../../lib/credit/anchor-key";
import { checkValue } from "../../../lib/credit/request";
import type { AnchorValue } from "../../../lib/credit/types";
import { hashOut, scanPlain } from "./scan";

function grow<T extends Int32Array | Uint8Array>(a: T, n: number): T {
  const b = new (a.constructor as new (n: number) => T)(n);
  b.set(a);
  return b;
}

export class AnchorTable {
  /** Per id: JSON type (`AnchorKind`), where a plain string's bytes lie (end -1: not there), its hash. */
  kind = new Uint8Array(1024);
  start = new Int32Array(1024);
  end = new Int32Array(1024);
  private hash = new Int32Array(1024);
  /** Per id: the value, for the ids not read from plain bytes (strings are decoded on demand). */
  readonly value: (AnchorValue | undefined)[] = [];
  count = 0;
  /** Slots: id + 1, 0 = empty. */
  private table = new Int32Array(1 << 12);
  private strMap: Map<string, number> | null = null;
  private jsonMap: Map<string, number> | null = null;
  private absent = -1;
  private readonly dv: DataView;

  constructor(private readonly buf: Buffer) {
    this.dv = new DataView(buf.buffer, buf.byteOffset, buf.length);
  }

  /** The id of a turn with no anchor. */
  absentId(): number {
    if (this.absent < 0) this.absent = this.newId(0, 0, -1, 0, undefined);
    return this.absent;
  }

  /** Id of the plain ASCII string anchor buf[a, b) (no escapes), hash h of its bytes. */
  plain(a: number, b: number, h: number): number {
    const { table, hash, start, end, buf, dv } = this;
    const mask = table.length - 1;
    const len = b - a;
    for (let s = h & mask; table[s] !== 0; s = (s + 1) & mask) {
      const id = table[s] - 1;
      if (hash[id] !== h || end[id] - start[id] !== len) continue;
      const c = start[id];
      let k = 0;
      while (k + 4 <= len && dv.getInt32(c + k, true) === dv.getInt32(a + k, true)) k += 4;
      while (k < len && buf[c + k] === buf[a + k]) k++;
      if (k === len) return id;
    }
    const known = this.strMap?.get(buf.toString("latin1", a, b));
    if (known !== undefined) return known; // sent escaped first; stays in strMap
    const id = this.newId(1, a, b, h, undefined);
    this.insert(id, h);
    return id;
  }

  /** Id of a string anchor that needed decoding (escapes or non-ASCII bytes). */
  decoded(s: string): number {
    const same = this.plainTwin(s);
    if (same >= 0) return same;
    this.strMap ??= new Map();
    let id = this.strMap.get(s);
    if (id === undefined) {
      id = this.newId(1, 0, -1, 0, s);
      this.strMap.set(s, id);
    }
    return id;
  }

  /** Id of any other anchor value (number, boolean, null, array, object), by its canonical JSON. */
  json(v: AnchorValue): number {
    checkValue(v, "anchor", true); // nesting and finite numbers, as validateRequest checks them
    const k = canonicalJson(v);
    this.jsonMap ??= new Map();
    let id = this.jsonMap.get(k);
    if (id === undefined) {
      const kind: AnchorKind = v === null ? 4 : typeof v === "number" ? 2 : typeof v === "boolean" ? 3 : Array.isArray(v) ? 5 : 6;
      id = this.newId(kind, 0, -1, 0, v);
      this.jsonMap.set(k, id);
    }
    return id;
  }

  /** The value of id k (a plain string is decoded from its bytes the first time). */
  valueOf(k: number): AnchorValue | undefined {
    if (this.kind[k] === 1 && this.value[k] === undefined) this.value[k] = this.buf.toString("latin1", this.start[k], this.end[k]);
    return this.value[k];
  }

  /** The id of the same string sent plain elsewhere, found by its bytes, else -1. */
  private plainTwin(s: string): number {
    // a plain string is ASCII with no quote, backslash or control character: scanPlain checks it
    for (let k = 0; k < s.length; k++) if (s.charCodeAt(k) >= 0x80) return -1;
    const bytes = Buffer.from(s + '"', "latin1");
    if (scanPlain(bytes, new DataView(bytes.buffer, bytes.byteOffset, bytes.length), 0, bytes.length) !== s.length) return -1;
    const h = hashOut[0];
    const { table, hash, start, end } = this;
    const mask = table.length - 1;
    for (let slot = h & mask; table[slot] !== 0; slot = (slot + 1) & mask) {
      const id = table[slot] - 1;
      if (hash[id] === h && end[id] - start[id] === s.length && this.buf.toString("latin1", start[id], end[id]) === s) return id;
    }
    return -1;
  }

  private newId(kind: AnchorKind, a: number, b: number, h: number, value: AnchorValue | undefined): number {
    const id = this.count;
    if (id === this.kind.length) {
      const cap = id * 2;
      this.kind = grow(this.kind, cap);
      this.start = grow(this.start, cap);
      this.end = grow(this.end, cap);
      this.hash = grow(this.hash, cap);
    }
    this.kind[id] = kind;
    this.start[id] = a;
    this.end[id] = b;
    this.hash[id] = h;
    this.value[id] = value;
    return this.count++;
  }

  private insert(id: number, h: number): void {
    if ((this.count + 1) * 2 > this.table.length) {
      this.table = new Int32Array(this.table.length * 2);
      for (let k = 0; k < this.count; k++) if (this.kind[k] === 1 && this.end[k] >= 0 && k !== id) this.place(k, this.hash[k]);
    }
    this.place(id, h);
  }

  private place(id: number, h: number): void {
    const { table } = this;
    const mask = table.length - 1;
    let s = h & mask;
    while (table[s] !== 0) s = (s + 1) & mask;
    table[s] = id + 1;
  }
}
