// Per-token data of one turn's response, packed into the Turn row's `tokenData` BLOB (one row, no
// side table: a turn's tokens are always read together). The one encoder/decoder; the layout is
// written here and nowhere else.
//
// Layout (little-endian, version 1):
//   byte 0       u8   version (1)
//   byte 1       u8   flags: 1 log-probs, 2 advantages, 4 entropies, 8 token texts
//   bytes 2-3    u16  0 (reserved)
//   bytes 4-7    u32  n, the number of tokens
//   then         i32[n]  token ids
//   then, each only when its flag is set, in this order:
//                f32[n]  log-probs (sampling-time, under the policy)
//                f32[n]  advantages (per token)
//                f32[n]  entropies (of the policy's distribution at each token, nats)
//                u32[n]  end byte offset of each token's text in the UTF-8 region that follows
//                u8[..]  the token texts, UTF-8, concatenated
// Every array starts at a multiple of 4 bytes. Floats are stored as float32 (about 7 significant
// digits): enough to tint and read on hover; the turn's own columns keep float64 summaries.

import { MAX_TURN_TOKENS, type TokenData } from "../schemas/rollouts";

export const TOKEN_DATA_VERSION = 1;

const F_LOGPROBS = 1;
const F_ADVANTAGES = 2;
const F_ENTROPIES = 4;
const F_TEXTS = 8;
const HEADER = 8;

export type { TokenData };

export class TokenDataError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "TokenDataError";
  }
}

/** Packs one turn's tokens. Throws TokenDataError naming the array whose length or values are wrong. */
export function encodeTokenData(d: TokenData): Buffer {
  const n = d.ids.length;
  if (n > MAX_TURN_TOKENS) throw new TokenDataError(`ids: ${n} tokens, at most ${MAX_TURN_TOKENS}`);
  const floats = [
    ["logprobs", d.logprobs, F_LOGPROBS],
    ["advantages", d.advantages, F_ADVANTAGES],
    ["entropies", d.entropies, F_ENTROPIES],
  ] as const;
  let flags = 0;
  for (const [name, arr, flag] of floats) {
    if (!arr) continue;
    if (arr.length !== n) throw new TokenDataError(`${name}: ${arr.length} values for ${n} token ids`);
    flags |= flag;
  }
  let textBytes: Buffer[] | null = null;
  if (d.texts) {
    if (d.texts.length !== n) throw new TokenDataError(`texts: ${d.texts.length} values for ${n} token ids`);
    textBytes = d.texts.map((t) => Buffer.from(t, "utf8"));
    flags |= F_TEXTS;
  }
  const nFloat = floats.filter(([, a]) => a).length;
  const textLen = textBytes ? textBytes.reduce((s, b) => s + b.length, 0) : 0;
  const size = HEADER + 4 * n * (1 + nFloat) + (textBytes ? 4 * n + textLen : 0);
  const buf = Buffer.alloc(size);
  buf.writeUInt8(TOKEN_DATA_VERSION, 0);
  buf.writeUInt8(flags, 1);
  buf.writeUInt32LE(n, 4);
  let o = HEADER;
  for (let i = 0; i < n; i++, o += 4) {
    const id = d.ids[i];
    if (!Number.isInteger(id) || id < -(2 ** 31) || id >= 2 ** 31) throw new TokenDataError(`ids[${i}]: ${id} is not a 32-bit integer`);
    buf.writeInt32LE(id, o);
  }
  for (const [name, arr] of floats) {
    if (!arr) continue;
    for (let i = 0; i < n; i++, o += 4) {
      if (!Number.isFinite(arr[i])) throw new TokenDataError(`${name}[${i}]: ${arr[i]} is not a finite number`);
      buf.writeFloatLE(arr[i], o);
    }
  }
  if (textBytes) {
    let end = 0;
    for (let i = 0; i < n; i++, o += 4) {
      end += textBytes[i].length;
      buf.writeUInt32LE(end, o);
    }
    for (const b of textBytes) o += b.copy(buf, o);
  }
  return buf;
}

/** Unpacks a tokenData BLOB. Throws TokenDataError on a truncated or unknown-version BLOB. */
export function decodeTokenData(blob: Uint8Array): TokenData {
  const buf = Buffer.from(blob.buffer, blob.byteOffset, blob.byteLength);
  if (buf.length < HEADER) throw new TokenDataError(`tokenData: ${buf.length} bytes, shorter than its header`);
  const version = buf.readUInt8(0);
  if (version !== TOKEN_DATA_VERSION) throw new TokenDataError(`tokenData: unknown version ${version}`);
  const flags = buf.readUInt8(1);
  const n = buf.readUInt32LE(4);
  const nFloat = [F_LOGPROBS, F_ADVANTAGES, F_ENTROPIES].filter((f) => flags & f).length;
  const fixed = HEADER + 4 * n * (1 + nFloat) + (flags & F_TEXTS ? 4 * n : 0);
  if (buf.length < fixed) throw new TokenDataError(`tokenData: ${buf.length} bytes, ${n} tokens need at least ${fixed}`);
  let o = HEADER;
  const ids = new Array<number>(n);
  for (let i = 0; i < n; i++, o += 4) ids[i] = buf.readInt32LE(o);
  const floats = (flag: number): number[] | null => {
    if (!(flags & flag)) return null;
    const out = new Array<number>(n);
    for (let i = 0; i < n; i++, o += 4) out[i] = buf.readFloatLE(o);
    return out;
  };
  const logprobs = floats(F_LOGPROBS);
  const advantages = floats(F_ADVANTAGES);
  const entropies = floats(F_ENTROPIES);
  let texts: string[] | null = null;
  if (flags & F_TEXTS) {
    const base = o + 4 * n;
    texts = new Array<string>(n);
    let start = 0;
    for (let i = 0; i < n; i++, o += 4) {
      const end = buf.readUInt32LE(o);
      if (end < start || base + end > buf.length) throw new TokenDataError(`tokenData: text ${i} ends at byte ${end}, outside the BLOB`);
      texts[i] = buf.toString("utf8", base + start, base + end);
      start = end;
    }
  }
  return { ids, texts, logprobs, advantages, entropies };
}
