// The group reader: `{ "uid", "trajectories" }` in any order, each trajectory through the
// trajectory reader. Declines name the field.
import type { AnchorTable } from "./anchors";
import type { ColumnsBuilder } from "./columns";
import type { Cursor } from "./scan";
import { readTrajectory } from "./trajectory";

/** One group object at `cur.p` into `cols`. */
export function readGroup(cur: Cursor, cols: ColumnsBuilder, anchors: AnchorTable): void {
  cur.expect(0x7b);
  let uid: string | undefined;
  let trajStart = -1;
  do {
    cur.key();
    // each branch names its field first: a decline inside the value names it
    if (cur.keyIs("uid")) {
      cur.at.field = "uid";
      if (uid !== undefined) cur.decline("a duplicate key", "uid");
      uid = cur.string();
      if (uid === "") cur.decline("an empty uid", "uid");
    } else if (cur.keyIs("trajectories")) {
      cur.at.field = "trajectories";
      if (trajStart >= 0) cur.decline("a duplicate key", "trajectories");
      trajStart = cols.nTraj;
      readTrajectories(cur, cols, anchors);
    } else cur.decline("unknown field", cur.keyText());
    cur.at.field = "";
  } while (cur.more(0x7d));
  if (uid === undefined) cur.decline("missing", "uid");
  if (trajStart < 0) cur.decline("missing", "trajectories");
  cols.addGroup(uid, trajStart);
}

function readTrajectories(cur: Cursor, cols: ColumnsBuilder, anchors: AnchorTable): void {
  cur.expect(0x5b);
  cur.ws();
  if (cur.buf[cur.p] === 0x5d) cur.decline("no trajectories", "trajectories");
  const first = cols.nTraj;
  cur.at.field = "";
  do {
    cur.at.t = cols.nTraj - first;
    readTrajectory(cur, cols, anchors);
  } while (cur.more(0x5d));
  cur.at.t = -1;
}
