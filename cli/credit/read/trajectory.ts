// The trajectory reader: `{ "id", "turns", "truncated"?, "envTag"? }` in any order, its turns
// through the turn reader. Declines name the field (a duplicate, an empty id, an unknown field).
import type { AnchorTable } from "./anchors";
import type { ColumnsBuilder, TrajectoryExtra } from "./columns";
import type { Cursor } from "./scan";
import { readTurns } from "./turn";

interface TrajectoryFields {
  /** The decoded id; undefined when plain (its bytes idText..idEnd) or not read yet. */
  id: string | undefined;
  /** Where the id's bytes start and end when they are its JSON text without the quotes, else -1. */
  idText: number;
  idEnd: number;
  turnsStart: number;
  extra: TrajectoryExtra | undefined;
}

/** One trajectory object at `cur.p` into `cols`. */
export function readTrajectory(cur: Cursor, cols: ColumnsBuilder, anchors: AnchorTable): void {
  cur.expect(0x7b);
  const f: TrajectoryFields = { id: undefined, idText: -1, idEnd: -1, turnsStart: -1, extra: undefined };
  do {
    cur.key();
    readMember(cur, cols, anchors, f);
    cur.at.field = "";
  } while (cur.more(0x7d));
  if (f.id === undefined && f.idText < 0) cur.decline("missing", "id");
  if (f.turnsStart < 0) cur.decline("missing", "turns");
  cols.addTrajectory(f.id, f.idText, f.idEnd, f.turnsStart, f.extra);
}

function readMember(cur: Cursor, cols: ColumnsBuilder, anchors: AnchorTable, f: TrajectoryFields): void {
  // each branch names its field first: a decline inside the value names it
  if (cur.keyIs("id")) {
    cur.at.field = "id";
    if (f.id !== undefined || f.idText >= 0) cur.decline("a duplicate key", "id");
    // a plain id stays bytes: 10^6 turns are ~10^5 trajectories, a string each otherwise
    const decoded = cur.stringSpan();
    if (decoded === "" || (decoded === null && cur.strEnd === cur.strStart)) cur.decline("an empty id", "id");
    if (decoded === null) {
      f.idText = cur.strStart;
      f.idEnd = cur.strEnd;
    } else f.id = decoded;
  } else if (cur.keyIs("turns")) {
    cur.at.field = "turns";
    if (f.turnsStart >= 0) cur.decline("a duplicate key", "turns");
    f.turnsStart = cols.row;
    readTurns(cur, cols, anchors);
  } else if (cur.keyIs("truncated")) {
    cur.at.field = "truncated";
    f.extra ??= {};
    if (f.extra.truncated !== undefined) cur.decline("a duplicate key", "truncated");
    f.extra.truncated = cur.literalBool();
  } else if (cur.keyIs("envTag")) {
    cur.at.field = "envTag";
    f.extra ??= {};
    if (f.extra.envTag !== undefined) cur.decline("a duplicate key", "envTag");
    f.extra.envTag = cur.string();
  } else cur.decline("unknown field", cur.keyText());
}
