// The stored turn, field by field: what a trajectory's packed credit columns hold (lib/db/trajectory-pack.ts
// turnData), each column made from the ingest turn and read back into the API's turn and into the
// turn lib/credit reads. The one list of a turn's stored fields: the packer, the reader and the
// credit adapter derive from TURN_COLUMNS.
import type { Turn } from "../credit";
import { creditTurn, INFO_CREDIT_FIELDS, type StoredCreditTurn } from "./credit";
import type { TurnInput, TurnOut } from "./rollouts";
import { inputTurnEntropy, turnEntropy } from "./step-summary";

/** The turn's info reduced to the fields credit reads (INFO_CREDIT_FIELDS), null without any. */
function creditInfo(info: Record<string, unknown> | null | undefined): Record<string, unknown> | null {
  if (!info) return null;
  let out: Record<string, unknown> | null = null;
  for (const f of INFO_CREDIT_FIELDS)
    if (f in info) {
      out ??= {};
      out[f] = info[f];
    }
  return out;
}

const orNull = <T>(v: T | null | undefined): T | null => v ?? null;

/**
 * Each stored column: `from` makes its value from the ingest turn; `read`, for the columns the API's
 * turn shows under the same name, makes that field from the stored value (undefined where an older
 * row lacks the column). Columns without `read` serve credit only.
 */
export const TURN_COLUMNS = {
  reward: { from: (u: TurnInput): number => u.reward, read: (v: number | undefined): number => v ?? 0 },
  valid: { from: (u: TurnInput): number => (u.valid === false ? 0 : 1), read: (v: number | undefined): boolean => v !== 0 },
  done: { from: (u: TurnInput): number => (u.done ? 1 : 0), read: (v: number | undefined): boolean => v === 1 },
  anchor: { from: (u: TurnInput): string | null => u.anchor ?? null, read: orNull<string> },
  agent: { from: (u: TurnInput): number | null => u.agent ?? null, read: orNull<number> },
  tokenCount: { from: (u: TurnInput): number | null => u.tokenCount ?? null, read: orNull<number> },
  logprob: { from: (u: TurnInput): number | null => u.logprob ?? null, read: orNull<number> },
  entropy: { from: (u: TurnInput): number | null => u.entropy ?? null, read: orNull<number> },
  /** mean of the turn's token entropies (null without them); missing in columns migrated from per-turn rows */
  tokenEntropy: { from: (u: TurnInput): number | null => (u.tokenEntropies ? inputTurnEntropy({ tokenEntropies: u.tokenEntropies }) : null) },
  advantage: { from: (u: TurnInput): number | null => u.advantage ?? null, read: orNull<number> },
  /** the turn's info reduced to the fields credit reads */
  creditInfo: { from: (u: TurnInput): Record<string, unknown> | null => creditInfo(u.info) },
};

type Columns = typeof TURN_COLUMNS;
type ColumnName = keyof Columns;

/** What credit and the turn lists read, one array per column, one entry per turn. */
export type TurnColumns = { [K in Exclude<ColumnName, "tokenEntropy">]: ReturnType<Columns[K]["from"]>[] } & {
  tokenEntropy?: (number | null)[];
};

const NAMES = Object.keys(TURN_COLUMNS) as ColumnName[];
type Readable = { [K in ColumnName]: Columns[K] extends { read: unknown } ? K : never }[ColumnName];
const READABLE = NAMES.filter((k) => "read" in TURN_COLUMNS[k]) as Readable[];

/** One trajectory's turns as columns (the packer's input); `known`: columns the caller made already (the packer's token entropies, decoded once). */
export function turnColumns(turns: readonly TurnInput[], known: Partial<TurnColumns> = {}): Required<TurnColumns> {
  const out = {} as Record<ColumnName, unknown[]>;
  for (const k of NAMES) {
    const given = known[k];
    if (given) {
      out[k] = given;
      continue;
    }
    const from = TURN_COLUMNS[k].from as (u: TurnInput) => unknown;
    const col = new Array(turns.length);
    for (let i = 0; i < turns.length; i++) col[i] = from(turns[i]);
    out[k] = col;
  }
  return out as Required<TurnColumns>;
}

/** The API turn's fields that come from the columns, of turn `i`. */
export type TurnColumnFields = Pick<TurnOut, Readable>;

export function readTurnColumns(c: TurnColumns, i: number): TurnColumnFields {
  const out = {} as Record<Readable, unknown>;
  for (const k of READABLE) out[k] = (TURN_COLUMNS[k].read as (v: unknown) => unknown)((c[k] as unknown[] | undefined)?.[i]);
  return out as TurnColumnFields;
}

/** Turn `i` of stored columns as lib/credit reads it (through creditTurn, as training's turns are). */
export function storedCreditTurn(c: TurnColumns, i: number): Turn {
  const f = readTurnColumns(c, i);
  const stored: StoredCreditTurn = {
    reward: f.reward,
    valid: f.valid,
    anchor: f.anchor,
    agent: f.agent,
    tokenCount: f.tokenCount,
    info: c.creditInfo?.[i] ?? null,
  };
  return creditTurn(stored);
}

/** Turn `i`'s entropy from stored columns: the turn's own, else its stored token entropies' mean (`tokenEntropies`: decoded from its tokens where the columns lack it). */
export function storedTurnEntropy(c: TurnColumns, i: number, tokenEntropies?: ArrayLike<number> | null): number | null {
  return turnEntropy(c.entropy?.[i] ?? c.tokenEntropy?.[i], tokenEntropies);
}
