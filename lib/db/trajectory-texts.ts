// Trajectories' turn texts as stored (lib/db/trajectory-pack.ts), references resolved: a row whose
// turnTexts refers to its group's shared stream is read from the row holding that stream, fetched
// when the caller's rows do not include it, and each stream is inflated once however many of the
// caller's rows it holds.
import { getRawDb, type RawDb } from "./raw";
import { turnTextsRef, unpackTextsStream, type TurnTexts } from "./trajectory-pack";

/** Rows' ids to fetch a statement: well inside SQLite's and PostgreSQL's parameter limits. */
const FETCH_CHUNK = 500;

/** The texts of each row, in order. */
export function readTurnTexts(rows: readonly { id: string; turnTexts: Uint8Array }[], db: RawDb = getRawDb()): TurnTexts[] {
  const blobs = new Map<string, Uint8Array>();
  for (const r of rows) blobs.set(r.id, r.turnTexts);
  const missing = new Set<string>();
  for (const r of rows) {
    const ref = turnTextsRef(r.turnTexts);
    if (ref && !blobs.has(ref.holder)) missing.add(ref.holder);
  }
  const ids = [...missing];
  for (let i = 0; i < ids.length; i += FETCH_CHUNK) {
    const chunk = ids.slice(i, i + FETCH_CHUNK);
    const held = db.prepare(`SELECT "id", "turnTexts" FROM "Trajectory" WHERE "id" IN (${chunk.map(() => "?").join(",")})`).all(...chunk) as {
      id: string;
      turnTexts: Uint8Array;
    }[];
    for (const h of held) blobs.set(h.id, h.turnTexts);
  }
  const streams = new Map<string, TurnTexts[]>();
  const stream = (id: string): TurnTexts[] => {
    let s = streams.get(id);
    if (!s) {
      const blob = blobs.get(id);
      // the holder is deleted with its run, which the caller's rows belong to: a run deleted meanwhile
      s = blob ? unpackTextsStream(blob) : [];
      streams.set(id, s);
    }
    return s;
  };
  return rows.map((r) => {
    const ref = turnTextsRef(r.turnTexts);
    return (ref ? stream(ref.holder)[ref.place] : stream(r.id)[0]) ?? { observation: [], action: [], info: [] };
  });
}

/** One row's texts. */
export function readTrajectoryTexts(id: string, turnTexts: Uint8Array, db: RawDb = getRawDb()): TurnTexts {
  return readTurnTexts([{ id, turnTexts }], db)[0];
}
