// A trajectory's turns, packed into three columns of its Trajectory row: one row per trajectory,
// not one per turn. An ALFWorld step is 6,400 turns of 1-2 KB observations that repeat each other
// (the room, the task, the history); a row per turn costs its keys, its indexes and the text again
// each turn (~1,280 bytes a turn), while a trajectory's texts compressed together cost ~50.
//
//   turnData    what credit reads (rewards, flags, anchors, advantages, entropies, info's credit
//               inputs): columns as JSON arrays, deflated. Small: a step's credit loads without texts.
//   turnTexts   observations, actions and info, as JSON arrays: read only to show a turn. A group's
//               trajectories share one Brotli stream (TEXTS_SHARED) in the row of the first of them,
//               the others hold a reference to it (TEXTS_REF): a group's trajectories repeat each
//               other (the same task, room and actions), so together they compress to half of what
//               each does alone (26.6 against 52.6 bytes a turn of ALFWorld-like texts, for the same
//               time as deflate level 6). A shared stream holds at most SHARED_RAW_BYTES of JSON, so
//               showing one trajectory never inflates more than that. lib/db/trajectory-texts.ts
//               reads them, references resolved.
//   turnTokens  per-token data (lib/db/token-data.ts), one record a turn: a 4-byte big-endian
//               length, then the BLOB (length 0: none). Not compressed: token ids and floats are
//               noise to deflate, and a turn's tokens are sliced out without inflating the rest.
//
// The one encoder and decoder of the three. A column written as JSON text (not deflated: it starts
// with "{") is read the same way: that is what the migration from one row per turn wrote. A
// turnTexts column that is one trajectory's texts deflated (a zlib stream: its first byte's low
// four bits are 8, never a codec byte below) is read too: what ingest wrote before texts were shared.
import type { Hash } from "node:crypto";
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

/** turnTexts codec bytes: Brotli of a JSON array of trajectories' TurnTexts; a reference to one. */
const TEXTS_SHARED = 0x02;
const TEXTS_REF = 0x03;
/** A shared stream's JSON at most (its trajectories' texts together): 1 MiB, inside the 2 MiB window below. */
export const SHARED_RAW_BYTES = 1 << 20;
/** Quality 6: 26.6 bytes a turn of ALFWorld-like group texts for 40 ms a 6,400-turn step; 5: 32.6 for 44; 7: 22.8 for 79. */
const BROTLI = {
  params: {
    [zlib.constants.BROTLI_PARAM_QUALITY]: 6,
    [zlib.constants.BROTLI_PARAM_LGWIN]: 21,
    [zlib.constants.BROTLI_PARAM_MODE]: zlib.constants.BROTLI_MODE_TEXT,
  },
};

function unpack<T>(blob: Uint8Array): T {
  const buf = Buffer.from(blob.buffer, blob.byteOffset, blob.byteLength);
  return JSON.parse((buf[0] === 0x7b ? buf : zlib.inflateSync(buf)).toString("utf8")) as T;
}

/**
 * A group's trajectory columns before compression: each trajectory's turnData JSON and token
 * column, and its texts' JSON in runs that share one stream (at most SHARED_RAW_BYTES of JSON
 * each, held by the run's first trajectory; the others refer to it). The step's content hash is
 * made from this JSON (hashGroupPlan) before packGroup compresses it.
 */
export interface GroupPlan {
  ids: readonly string[];
  turnData: string[];
  /** each stream's JSON and the trajectories it holds: [first, first + count) */
  streams: { json: string; first: number; count: number }[];
  turnTokens: (Buffer | null)[];
}

/** A group's three columns for each trajectory, in order. */
export interface PackedGroup {
  turnData: Buffer[];
  turnTexts: Buffer[];
  turnTokens: (Buffer | null)[];
}

/** Plans a group's columns (`ids` its trajectories' row ids, in order). Throws TokenDataError naming a bad token array. */
export function planGroup(trajectories: readonly (readonly TurnInput[])[], ids: readonly string[]): GroupPlan {
  const turnData: string[] = [];
  const turnTokens: (Buffer | null)[] = [];
  // each trajectory's texts as JSON, put together into streams below
  const json: string[] = [];
  for (const turns of trajectories) {
    const t: TurnTexts = { observation: [], action: [], info: [] };
    const tokens: Buffer[] = [];
    // a turn's token entropies, decoded once for its token blob and its turn entropy
    const tokenEntropy: (number | null)[] = [];
    let anyTokens = false;
    for (const u of turns) {
      const entropies = tokenValues(u.tokenEntropies);
      tokenEntropy.push(turnEntropy(null, entropies));
      t.observation.push(u.observation);
      t.action.push(u.action);
      t.info.push(u.info ?? null);
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
    turnData.push(JSON.stringify(turnColumns(turns, { tokenEntropy })));
    turnTokens.push(anyTokens ? Buffer.concat(tokens) : null);
    json.push(JSON.stringify(t));
  }
  const streams: GroupPlan["streams"] = [];
  for (let a = 0; a < json.length; ) {
    let raw = json[a].length;
    let b = a + 1;
    for (; b < json.length && b - a < 0xffff && raw + json[b].length + 1 <= SHARED_RAW_BYTES; b++) raw += json[b].length + 1;
    streams.push({ json: `[${json.slice(a, b).join(",")}]`, first: a, count: b - a });
    a = b;
  }
  return { ids, turnData, streams, turnTokens };
}

/**
 * Adds a plan's content to a step's content hash: its columns' JSON and token bytes, each with its
 * length (no two contents run together the same way). The ids are not part of it.
 */
export function hashGroupPlan(hash: Hash, plan: GroupPlan): void {
  const add = (x: string | Buffer | null) => {
    if (x === null) return hash.update("-");
    hash.update(`${x.length}:`);
    hash.update(x);
  };
  for (const j of plan.turnData) add(j);
  for (const s of plan.streams) add(s.json);
  for (const b of plan.turnTokens) add(b);
}

function brotliOptions(json: string): zlib.BrotliOptions {
  return { params: { ...BROTLI.params, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: json.length } };
}

/** The turnTexts columns of a plan, given each stream's compressed bytes: the holder's stream, the others' references. */
function textColumns(plan: GroupPlan, compressed: readonly Buffer[]): Buffer[] {
  const out: Buffer[] = [];
  plan.streams.forEach((s, k) => {
    out.push(Buffer.concat([Buffer.of(TEXTS_SHARED), compressed[k]]));
    const holder = plan.ids[s.first];
    for (let i = 1; i < s.count; i++) {
      const ref = Buffer.alloc(3 + Buffer.byteLength(holder));
      ref[0] = TEXTS_REF;
      ref.writeUInt16BE(i, 1);
      ref.write(holder, 3, "utf8");
      out.push(ref);
    }
  });
  return out;
}

/** A plan compressed: turnData deflated, each text stream in Brotli (~7 and ~25 ms of a 6,400-turn ALFWorld step). */
export function packGroup(plan: GroupPlan): PackedGroup {
  return {
    turnData: plan.turnData.map((j) => zlib.deflateSync(j, DEFLATE)),
    turnTexts: textColumns(
      plan,
      plan.streams.map((s) => compressStream(s.json)),
    ),
    turnTokens: plan.turnTokens,
  };
}

/** One text stream in Brotli, as packGroup writes it (lib/ingest/compress-thread.ts runs it on a thread of its own). */
export function compressStream(json: string): Buffer {
  return zlib.brotliCompressSync(json, brotliOptions(json));
}

/** Compresses text streams elsewhere (another thread), each as compressStream does. */
export type StreamCompressor = (jsons: string[]) => Promise<Buffer[]>;

/** packGroup with the text streams handed to `compress`: this thread deflates turnData meanwhile. */
export async function packGroupWith(plan: GroupPlan, compress: StreamCompressor): Promise<PackedGroup> {
  const texts = compress(plan.streams.map((s) => s.json));
  const turnData = plan.turnData.map((j) => zlib.deflateSync(j, DEFLATE));
  return { turnData, turnTexts: textColumns(plan, await texts), turnTokens: plan.turnTokens };
}

/** A turnTexts column that refers to another row's: that row's id and the place in its stream; null: it holds its own. */
export function turnTextsRef(blob: Uint8Array): { holder: string; place: number } | null {
  if (blob[0] !== TEXTS_REF) return null;
  const buf = Buffer.from(blob.buffer, blob.byteOffset, blob.byteLength);
  return { holder: buf.toString("utf8", 3), place: buf.readUInt16BE(1) };
}

/** Every trajectory's texts in a turnTexts column (one, unless it is a shared stream). Throws for a reference (turnTextsRef). */
export function unpackTextsStream(blob: Uint8Array): TurnTexts[] {
  if (blob[0] === TEXTS_REF) throw new Error("a turnTexts reference: read it through lib/db/trajectory-texts.ts");
  if (blob[0] !== TEXTS_SHARED) return [unpack<TurnTexts>(blob)];
  return JSON.parse(zlib.brotliDecompressSync(blob.subarray(1)).toString("utf8")) as TurnTexts[];
}

export function unpackTurnColumns(blob: Uint8Array): TurnColumns {
  return unpack<TurnColumns>(blob);
}

/** The texts of the row holding `blob` (not a reference: lib/db/trajectory-texts.ts resolves those). */
export function unpackTurnTexts(blob: Uint8Array): TurnTexts {
  return unpackTextsStream(blob)[0];
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

/** A trajectory row's turns, unpacked into the API's turn shape (`turnTexts`: its column, or its texts read already). */
export function unpackTurns(
  trajectoryId: string,
  firstSeq: number,
  length: number,
  turnData: Uint8Array,
  turnTexts: Uint8Array | TurnTexts,
  turnTokens: Uint8Array | null,
): TurnOut[] {
  const c = unpackTurnColumns(turnData);
  const x = turnTexts instanceof Uint8Array ? unpackTurnTexts(turnTexts) : turnTexts;
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
