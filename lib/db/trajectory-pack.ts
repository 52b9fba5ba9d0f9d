// A trajectory's turns, packed into three columns of its Trajectory row: one row per trajectory,
// not one per turn. An ALFWorld step is 6,400 turns of 1-2 KB observations that repeat each other
// (the room, the task, the history); a row per turn costs its keys, its indexes and the text again
// each turn (~1,280 bytes a turn), while a trajectory's texts compressed together cost ~50.
//
//   turnData    what credit reads (rewards, flags, anchors, advantages, entropies, info's credit
//               inputs): columns as JSON arrays, deflated. Small: a step's credit loads without texts.
//   turnTexts   observations, actions and info, as JSON arrays, deflated: read only to show a turn.
//   turnTokens  per-token data (lib/db/token-data.ts), one record a turn: a 4-byte big-endian
//               length, then the BLOB (length 0: none). Not compressed: token ids and floats are
//               noise to deflate, and a turn's tokens are sliced out without inflating the rest.
//
// The one encoder and decoder of the three. A column written as JSON text (not deflated: it starts
// with "{") is read the same way: that is what the migration from one row per turn wrote.
import zlib from "node:zlib";
import { tokenValues, type TurnInput, type TurnOut } from "../schemas/rollouts";
import { readTurnColumns, turnColumns, type TurnColumns } from "../schemas/turn-columns";
import { turnEntropy } from "../schemas/step-summary";
import { decodeTokenData, encodeTokenData } from "./token-data";

export type { TurnColumns };

/** Level 6: 52 bytes a turn of ALFWorld-like texts against 83 at level 1, for 50 ms a 6,400-turn step against 27. */
const DEFLATE = { level: 6 };

export interface TurnTexts {
  observation: string[];
  action: string[];
  info: (Record<string, unknown> | null)[];
}

export interface PackedTurns {
  turnData: Buffer;
  turnTexts: Buffer;
  turnTokens: Buffer | null;
}

function pack(v: unknown): Buffer {
  return zlib.deflateSync(JSON.stringify(v), DEFLATE);
}

function unpack<T>(blob: Uint8Array): T {
  const buf = Buffer.from(blob.buffer, blob.byteOffset, blob.byteLength);
  return JSON.parse((buf[0] === 0x7b ? buf : zlib.inflateSync(buf)).toString("utf8")) as T;
}

/** Packs one trajectory's turns (ingest's validated shape). Throws TokenDataError naming a bad token array. */
export function packTurns(turns: readonly TurnInput[]): PackedTurns {
  const texts: TurnTexts = { observation: [], action: [], info: [] };
  const tokens: Buffer[] = [];
  // a turn's token entropies, decoded once for its token blob and its turn entropy
  const tokenEntropy: (number | null)[] = [];
  let anyTokens = false;
  for (const u of turns) {
    const entropies = tokenValues(u.tokenEntropies);
    tokenEntropy.push(turnEntropy(null, entropies));
    texts.observation.push(u.observation);
    texts.action.push(u.action);
    texts.info.push(u.info ?? null);
    const len = Buffer.alloc(4);
    if (u.tokenIds) {
      const blob = encodeTokenData({
        ids: tokenValues(u.tokenIds)!,
        texts: u.tokenTexts ?? null,
        logprobs: tokenValues(u.tokenLogprobs),
        advantages: tokenValues(u.tokenAdvantages),
        entropies,
      });
      len.writeUInt32BE(blob.length);
      tokens.push(len, blob);
      anyTokens = true;
    } else tokens.push(len);
  }
  return { turnData: pack(turnColumns(turns, { tokenEntropy })), turnTexts: pack(texts), turnTokens: anyTokens ? Buffer.concat(tokens) : null };
}

export function unpackTurnColumns(blob: Uint8Array): TurnColumns {
  return unpack<TurnColumns>(blob);
}

export function unpackTurnTexts(blob: Uint8Array): TurnTexts {
  return unpack<TurnTexts>(blob);
}

/** Each turn's token BLOB (null where the turn has none), `n` turns; null column: none at all. */
export function unpackTurnTokens(blob: Uint8Array | null, n: number): (Uint8Array | null)[] {
  const out = new Array<Uint8Array | null>(n).fill(null);
  if (!blob) return out;
  const buf = Buffer.from(blob.buffer, blob.byteOffset, blob.byteLength);
  let o = 0;
  for (let i = 0; i < n && o + 4 <= buf.length; i++) {
    const len = buf.readUInt32BE(o);
    o += 4;
    if (len > 0) out[i] = buf.subarray(o, o + len);
    o += len;
  }
  return out;
}

/** A trajectory row's turns, unpacked into the API's turn shape. */
export function unpackTurns(
  trajectoryId: string,
  firstSeq: number,
  length: number,
  turnData: Uint8Array,
  turnTexts: Uint8Array,
  turnTokens: Uint8Array | null,
): TurnOut[] {
  const c = unpackTurnColumns(turnData);
  const x = unpackTurnTexts(turnTexts);
  const tokens = unpackTurnTokens(turnTokens, length);
  return Array.from({ length }, (_, i) => {
    const tok = tokens[i];
    return {
      seq: firstSeq + i,
      trajectoryId,
      index: i,
      observation: x.observation?.[i] ?? "",
      action: x.action?.[i] ?? "",
      ...readTurnColumns(c, i),
      info: x.info?.[i] ?? null,
      tokens: tok ? decodeTokenData(tok) : null,
    };
  });
}
