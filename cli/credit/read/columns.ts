// The request as flat columns, filled by the readers: one row per turn (reward, invalid, anchor
// id), one entry per trajectory and per group, grown by doubling.
import type { AnchorValue } from "../../../lib/credit/types";
import type { AnchorTable } from "./anchors";

function grow<T extends Int32Array | Uint8Array | Float64Array>(a: T, n: number): T {
  const b = new (a.constructor as new (n: number) => T)(n);
  b.set(a);
  return b;
}

/** Trajectory fields other than id and turns (usually none). */
export interface TrajectoryExtra {
  truncated?: boolean;
  envTag?: string;
}

/** The request as flat columns; `head` holds every top-level field but `groups`. */
export interface ParsedColumns {
  head: Record<string, unknown>;
  nGroups: number;
  nTraj: number;
  nTurns: number;
  uids: string[];
  groupTrajStart: Int32Array;
  trajTurnStart: Int32Array;
  trajGroup: Int32Array;
  /** The trajectory ids as strings, made on first use (a plain id is kept as bytes until then). */
  readonly trajIds: string[];
  /** The decoded ids, undefined where the id is plain: its bytes trajIdText..trajIdEnd. */
  trajIdDecoded: (string | undefined)[];
  /** Where each trajectory id's bytes start and end when they are its JSON text without the quotes (plain ASCII), else -1. */
  trajIdText: Int32Array;
  trajIdEnd: Int32Array;
  trajExtra: Map<number, TrajectoryExtra>;
  reward: Float64Array;
  invalid: Uint8Array;
  /** Turns carrying `invalid` / `anchor` (a needed field must be on every turn). */
  invalidCount: number;
  anchorCount: number;
  /** Dense anchor id per row, by first appearance; equal iff same JSON type and value. */
  anchorId: Int32Array;
  anchors: AnchorTable;
  /** Non-string anchors as sent, by row (key order and number spelling kept for `flat.batch`). */
  rowValues: Map<number, AnchorValue>;
  buf: Buffer;
}

/** Growable columns the readers write into; `finish` trims them into ParsedColumns. */
export class ColumnsBuilder {
  cap: number;
  reward: Float64Array;
  invalid: Uint8Array;
  anchorId: Int32Array;
  row = 0;
  invalidCount = 0;
  anchorCount = 0;
  readonly rowValues = new Map<number, AnchorValue>();

  private trajCap: number;
  trajTurnStart: Int32Array;
  trajGroup: Int32Array;
  trajIdText: Int32Array;
  trajIdEnd: Int32Array;
  readonly trajIdDecoded: (string | undefined)[] = [];
  readonly trajExtra = new Map<number, TrajectoryExtra>();
  nTraj = 0;

  private groupCap: number;
  groupTrajStart: Int32Array;
  readonly uids: string[] = [];
  nGroups = 0;

  constructor(bytes: number) {
    this.cap = Math.max(16, (bytes / 48) | 0); // a turn is about 48 bytes of JSON or more
    this.reward = new Float64Array(this.cap);
    this.invalid = new Uint8Array(this.cap);
    this.anchorId = new Int32Array(this.cap);
    this.trajCap = Math.max(16, (this.cap / 8) | 0);
    this.trajTurnStart = new Int32Array(this.trajCap + 1);
    this.trajGroup = new Int32Array(this.trajCap);
    this.trajIdText = new Int32Array(this.trajCap);
    this.trajIdEnd = new Int32Array(this.trajCap);
    this.groupCap = Math.max(16, (this.trajCap / 4) | 0);
    this.groupTrajStart = new Int32Array(this.groupCap + 1);
  }

  /** Room for one more turn row. */
  growRows(): void {
    this.cap *= 2;
    this.reward = grow(this.reward, this.cap);
    this.invalid = grow(this.invalid, this.cap);
    this.anchorId = grow(this.anchorId, this.cap);
  }

  /** A trajectory: its decoded id, or undefined and the id's bytes [idText, idEnd). */
  addTrajectory(id: string | undefined, idText: number, idEnd: number, turnsStart: number, extra: TrajectoryExtra | undefined): void {
    const t = this.nTraj;
    if (t === this.trajCap) {
      this.trajCap *= 2;
      this.trajTurnStart = grow(this.trajTurnStart, this.trajCap + 1);
      this.trajGroup = grow(this.trajGroup, this.trajCap);
      this.trajIdText = grow(this.trajIdText, this.trajCap);
      this.trajIdEnd = grow(this.trajIdEnd, this.trajCap);
    }
    this.trajTurnStart[t] = turnsStart;
    this.trajGroup[t] = this.nGroups;
    this.trajIdText[t] = idText;
    this.trajIdEnd[t] = idEnd;
    this.trajIdDecoded.push(id);
    if (extra) this.trajExtra.set(t, extra);
    this.nTraj++;
  }

  addGroup(uid: string, trajStart: number): void {
    if (this.nGroups === this.groupCap) {
      this.groupCap *= 2;
      this.groupTrajStart = grow(this.groupTrajStart, this.groupCap + 1);
    }
    this.groupTrajStart[this.nGroups] = trajStart;
    this.uids.push(uid);
    this.nGroups++;
  }

  finish(head: Record<string, unknown>, anchors: AnchorTable, buf: Buffer): ParsedColumns {
    const { nGroups, nTraj, row } = this;
    this.groupTrajStart[nGroups] = nTraj;
    this.trajTurnStart[nTraj] = row;
    const decoded = this.trajIdDecoded;
    const text = this.trajIdText;
    const end = this.trajIdEnd;
    let ids: string[] | null = null;
    return {
      get trajIds(): string[] {
        ids ??= decoded.map((id, i) => id ?? buf.toString("latin1", text[i], end[i]));
        return ids;
      },
      head,
      nGroups,
      nTraj,
      nTurns: row,
      uids: this.uids,
      groupTrajStart: this.groupTrajStart.subarray(0, nGroups + 1),
      trajTurnStart: this.trajTurnStart.subarray(0, nTraj + 1),
      trajGroup: this.trajGroup.subarray(0, nTraj),
      trajIdDecoded: decoded,
      trajIdText: text.subarray(0, nTraj),
      trajIdEnd: end.subarray(0, nTraj),
      trajExtra: this.trajExtra,
      reward: this.reward.subarray(0, row),
      invalid: this.invalid.subarray(0, row),
      invalidCount: this.invalidCount,
      anchorCount: this.anchorCount,
      anchorId: this.anchorId.subarray(0, row),
      anchors,
      rowValues: this.rowValues,
      buf,
    };
  }
}
