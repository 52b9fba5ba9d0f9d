// Trajectory search over some runs, a project or every run: words and phrases in observations or
// actions, outcome, length, return, step, environment, task, and conditions one turn must meet
// (index, advantage, reward, validity, anchor).
//
// The index. Each stored trajectory has a row in "TrajectorySearch" (its integer key, and the
// columns searches filter and sort by) and one in the word index "TrajectoryText": the distinct
// words of its observations and of its actions, written with the step (writeRolloutStep; ingest
// right after its answer, lib/ingest/deferred.ts) or, for trajectories stored before the index
// existed or whose step's deferred work is not done yet, on the first search of their run. The word
// index keeps no positions and no text: on SQLite an FTS5 table (contentless, detail=column), on
// PostgreSQL two tsvector columns made with array_to_tsvector (no text parser: the words are ours)
// under GIN indexes. Both stores therefore hold exactly the words `searchWords` makes, and a word
// matches on either store exactly when it is one of a trajectory's words.
//
// A search. SQL narrows by the index and the copied columns, in sort order, by cursor; what an
// index cannot answer is checked on the candidates' packed turns: a phrase (its words in a row,
// within one turn's text) on their texts, the per-turn conditions on their credit columns. Such a
// page checks at most SCAN_LIMIT candidates for at most SCAN_BUDGET_MS, then answers the hits so far
// with `partial` and a cursor where it stopped (`next`). It gives the event loop back every
// SLICE_MS, so the server's other requests wait at most about that long for a search.
import { createHash } from "node:crypto";
import { InvalidInputError } from "../schemas/errors";
import { SEARCH_CURSOR, type TrajectoryHit, type TrajectorySearchQuery, type TrajectorySearchResult } from "../schemas/search";
import { getRawDb, insertRows, writeTransaction, type RawDb } from "./raw";
import { dialect } from "./dialect";
import { distinctWords, textWords } from "./search-words";
import { HAS_LABEL } from "./labels";
import { unpackTurnColumns, type TurnColumns, type TurnTexts } from "./trajectory-pack";
import { readTurnTexts } from "./trajectory-texts";

/** Longer runs of letters and digits are not words (a token blob, a hash): not indexed, not searchable. */
export const MAX_WORD = 64;
/** Candidates one page checks against phrases and per-turn conditions before it answers with a cursor. */
export const SCAN_LIMIT = 20_000;
/** Time one page spends checking candidates before it answers those found so far, `partial`, with a cursor. */
export const SCAN_BUDGET_MS = 500;
/** Work between two returns to the event loop: about the longest another request waits for a search. */
const SLICE_MS = 10;
/** Candidates a statement lists at most (keys and sort columns: sorting them leaves the packed turns out), and whose turns one statement reads. */
const KEY_CHUNK = 1000;
const TURN_CHUNK = 100;
/** Turn indices a hit lists. */
const MAX_MATCHED_TURNS = 100;

/** A text's lowercase runs of Unicode letters and digits, whatever their length. */
function allWords(text: string): string[] {
  return textWords(text);
}

/** A text's words as the index holds them: its words at most MAX_WORD long. */
export function searchWords(text: string): string[] {
  return allWords(text).filter((w) => w.length <= MAX_WORD);
}

/** A search text's terms: each bare word one term, each "quoted phrase" one term of its words in order. */
export function searchTerms(text: string): string[][] {
  const terms: string[][] = [];
  for (const m of text.matchAll(/"([^"]*)"?|[^\s"]+/g)) {
    // longer words are kept: no turn holds one (none is indexed), so such a query finds nothing
    const words = allWords(m[1] ?? m[0]);
    if (m[1] !== undefined) {
      if (words.length) terms.push(words);
    } else for (const w of words) terms.push([w]);
  }
  return terms;
}

/**
 * A term as a pattern on lowercased text: its words in order, whole, separated by anything that is
 * not a letter or digit (so on a turn's text exactly when its words are consecutive among the
 * turn's words). Searching the text this way is ~10x faster than splitting it into words.
 */
function termPattern(term: readonly string[]): RegExp {
  return new RegExp(`(?<![\\p{L}\\p{N}])${term.join("[^\\p{L}\\p{N}]+")}(?![\\p{L}\\p{N}])`, "u");
}

/** A trajectory as the index takes it. */
export interface IndexEntry {
  id: string;
  runId: string;
  step: number;
  success: boolean;
  reward: number;
  length: number;
  observations: readonly string[];
  actions: readonly string[];
  /** its turns' stored advantages (null: none), summed and counted for the task timeline */
  advantages: readonly (number | null | undefined)[];
}

/** Sum and count of the stored advantages (turns without one left out). */
export function advantageTotals(advantages: readonly (number | null | undefined)[]): [number, number] {
  let sum = 0;
  let n = 0;
  for (const a of advantages) if (a !== null && a !== undefined) (sum += a), n++;
  return [sum, n];
}

/**
 * A prompt's key in the index: sha256 (hex) of the text trimmed. A trajectory's prompt is its first
 * observation (the text a trainer such as verl or TRL gives the policy), so the task timeline finds a
 * task by its prompt across steps and runs with an indexed equality, never inflating stored texts.
 */
export function promptHash(text: string): string {
  return createHash("sha256").update(text.trim()).digest("hex");
}

// the index's words of a trajectory's texts: searchWords' words, each once (lib/db/search-words.ts)
const indexWords = (texts: readonly string[]) => distinctWords(texts, MAX_WORD).join(" ");

/** Adds trajectories to the index; inside the caller's write transaction (they must not be indexed yet). */
export function indexTrajectories(db: RawDb, entries: readonly IndexEntry[]): void {
  if (!entries.length) return;
  const inserted = insertRows(
    db,
    `INSERT INTO "TrajectorySearch" ("trajectoryId", "runId", "step", "success", "reward", "length", "advantageSum", "advantageCount", "promptHash")`,
    9,
    entries.flatMap((e) => [
      e.id,
      e.runId,
      e.step,
      e.success ? 1 : 0,
      e.reward,
      e.length,
      ...advantageTotals(e.advantages),
      promptHash(e.observations[0] ?? ""),
    ]),
    `RETURNING "key", "trajectoryId"`,
  ) as { key: number; trajectoryId: string }[];
  const keys = new Map(inserted.map((r) => [r.trajectoryId, r.key]));
  const d = dialect(db).wordIndex;
  insertRows(
    db,
    d.insert,
    3,
    entries.flatMap((e) => [keys.get(e.id), indexWords(e.observations), indexWords(e.actions)]),
    "",
    64,
    d.tuple,
  );
}

/** Removes a run's index entries (they are made again on its next search): a benchmark's and a test's tool. */
export function dropSearchIndex(runId: string, db: RawDb = getRawDb()): void {
  db.prepare(`DELETE FROM "TrajectorySearch" WHERE "runId" = ?`).run(runId);
  indexedRuns.delete(runId);
  hashedRuns.delete(runId);
}

/** Runs known to have every trajectory indexed (new ones are indexed as they are written). */
const indexedRuns = new Set<string>();

/** Indexes the trajectories of `runIds` stored before the index existed (or bulk-loaded without it). Returns how many. */
export function indexMissing(runIds: readonly string[], db: RawDb = getRawDb()): number {
  let done = 0;
  for (const runId of runIds) {
    if (indexedRuns.has(runId)) continue;
    // as many index rows as trajectories: none is missing (two index-only counts, where the search
    // for the missing ones reads every trajectory row: 1.5 s for 24,000 on SQLite)
    const count = (table: string) => db.prepare(`SELECT COUNT(*) FROM "${table}" WHERE "runId" = ?`).pluck().get(runId) as number;
    if (count("Trajectory") === count("TrajectorySearch")) {
      indexedRuns.add(runId);
      continue;
    }
    done += inBatches(runId, 1000, db, (db) => {
      const rows = db
        .prepare(
          `SELECT t."id", t."runId", s."step", t."success", t."reward", t."length", t."turnTexts", t."turnData"
             FROM "Trajectory" t JOIN "RolloutGroup" g ON g."id" = t."groupId" JOIN "RolloutStep" s ON s."id" = g."stepId"
             WHERE t."runId" = ? AND NOT EXISTS (SELECT 1 FROM "TrajectorySearch" x WHERE x."trajectoryId" = t."id")
             LIMIT 1000`,
        )
        .all(runId) as {
        id: string;
        runId: string;
        step: number;
        success: number;
        reward: number;
        length: number;
        turnTexts: Uint8Array;
        turnData: Uint8Array;
      }[];
      const texts = readTurnTexts(rows, db);
      indexTrajectories(
        db,
        rows.map((r, i) => ({
          ...r,
          success: r.success === 1,
          observations: texts[i].observation,
          actions: texts[i].action,
          advantages: unpackTurnColumns(r.turnData).advantage,
        })),
      );
      return rows.length;
    });
    indexedRuns.add(runId);
  }
  return done;
}

/**
 * Runs `fill` (one write transaction on the run, `batch` rows at most) until it handles fewer than
 * `batch`: a backfill in bounded transactions, so no write holds the store for a whole run.
 */
function inBatches(runId: string, batch: number, db: RawDb, fill: (db: RawDb) => number): number {
  let done = 0;
  for (;;) {
    const n = writeTransaction(null, fill, db, { runId });
    done += n;
    if (n < batch) return done;
  }
}

/** Runs known to have a prompt hash on every index row. */
const hashedRuns = new Set<string>();

/**
 * Fills the prompt hash of index rows written before that column (their first observation read
 * from the packed texts once); then every row of `runIds` is found by prompt with an index lookup.
 * Indexes missing trajectories first. Returns how many rows it filled.
 */
export function backfillPromptHashes(runIds: readonly string[], db: RawDb = getRawDb()): number {
  indexMissing(runIds, db);
  let done = 0;
  for (const runId of runIds) {
    if (hashedRuns.has(runId)) continue;
    done += inBatches(runId, 500, db, (db) => {
      const rows = db
        .prepare(
          `SELECT x."key", t."id", t."turnTexts" FROM "TrajectorySearch" x JOIN "Trajectory" t ON t."id" = x."trajectoryId"
               WHERE x."runId" = ? AND x."promptHash" IS NULL LIMIT 500`,
        )
        .all(runId) as { key: number; id: string; turnTexts: Uint8Array }[];
      // a group's texts may live in its first trajectory's row: readTurnTexts follows the reference
      const texts = readTurnTexts(rows, db);
      const set = db.prepare(`UPDATE "TrajectorySearch" SET "promptHash" = ? WHERE "key" = ?`);
      for (let i = 0; i < rows.length; i++) set.run(promptHash(texts[i].observation[0] ?? ""), rows[i].key);
      return rows.length;
    });
    hashedRuns.add(runId);
  }
  return done;
}

// ---- searching ----

/** The per-turn conditions of a query, or null when it has none. */
function turnTest(q: TrajectorySearchQuery): ((c: TurnColumns, i: number) => boolean) | null {
  const has = [q.minTurn, q.maxTurn, q.advantage, q.minAdvantage, q.maxAdvantage, q.minReward, q.maxReward, q.valid, q.anchor].some((v) => v !== undefined);
  if (!has) return null;
  const valid = q.valid === undefined ? undefined : q.valid === "true" ? 1 : 0;
  return (c, i) => {
    if (q.minTurn !== undefined && i < q.minTurn) return false;
    if (q.maxTurn !== undefined && i > q.maxTurn) return false;
    const a = c.advantage[i];
    if (q.advantage !== undefined || q.minAdvantage !== undefined || q.maxAdvantage !== undefined) {
      // a turn without a stored advantage meets no advantage condition
      if (a === null || a === undefined) return false;
      if (q.advantage === "positive" && !(a > 0)) return false;
      if (q.advantage === "negative" && !(a < 0)) return false;
      if (q.advantage === "zero" && a !== 0) return false;
      if (q.minAdvantage !== undefined && a < q.minAdvantage) return false;
      if (q.maxAdvantage !== undefined && a > q.maxAdvantage) return false;
    }
    if (q.minReward !== undefined && c.reward[i] < q.minReward) return false;
    if (q.maxReward !== undefined && c.reward[i] > q.maxReward) return false;
    if (valid !== undefined && (c.valid[i] ? 1 : 0) !== valid) return false;
    if (q.anchor !== undefined && c.anchor[i] !== q.anchor) return false;
    return true;
  };
}

/** The turns whose chosen fields hold every one of `terms`' words... per term: which turns hold it. */
function turnsHolding(texts: TurnTexts, terms: string[][], field: TrajectorySearchQuery["in"]): { all: boolean; turns: number[] } {
  const n = texts.action.length;
  const patterns = terms.map(termPattern);
  const found = terms.map(() => false);
  const turns: number[] = [];
  for (let i = 0; i < n; i++) {
    const fields: string[] = [];
    if (field !== "action") fields.push((texts.observation[i] ?? "").toLowerCase());
    if (field !== "observation") fields.push((texts.action[i] ?? "").toLowerCase());
    let any = false;
    patterns.forEach((p, k) => {
      if (fields.some((f) => p.test(f))) (found[k] = true), (any = true);
    });
    if (any) turns.push(i);
  }
  return { all: found.every(Boolean), turns };
}

const SORT_COLUMN = { step: `ts."step"`, return: `ts."reward"`, length: `ts."length"` } as const;

const INT_MAX = 2 ** 31 - 1;
const encodeCursor = (v: number, key: number) => `${v}_${key}`;
/** A cursor's position, values past a column's range clamped to its ends (the query schema checked the form). */
function decodeCursor(c: string, sort: TrajectorySearchQuery["sort"]): [number, number] {
  const m = SEARCH_CURSOR.exec(c);
  if (!m) throw new InvalidInputError("cursor must be the `next` of a previous page", [{ path: "query.cursor", message: "must look like SORTVALUE_KEY" }]);
  const v = Number(m[1]);
  const value = sort === "return" ? Math.max(-Number.MAX_VALUE, Math.min(Number.MAX_VALUE, v)) : Math.max(-INT_MAX - 1, Math.min(INT_MAX, Math.trunc(v)));
  return [value, Math.min(Number(m[2]), INT_MAX)];
}

interface Candidate {
  key: number;
  trajectoryId: string;
  runId: string;
  step: number;
  success: number;
  reward: number;
  length: number;
  turnData?: Uint8Array;
  turnTexts?: Uint8Array;
}

/** The run ids a query covers (unknown ones cover nothing). */
function scopeRuns(q: TrajectorySearchQuery, db: RawDb): string[] {
  const where: string[] = [];
  const args: unknown[] = [];
  if (q.runs) where.push(`r."id" IN (${q.runs.map(() => "?").join(",")})`), args.push(...q.runs);
  if (q.project !== undefined) where.push(`p."name" = ?`), args.push(q.project);
  return db
    .prepare(`SELECT r."id" FROM "Run" r JOIN "Project" p ON p."id" = r."projectId" ${where.length ? `WHERE ${where.join(" AND ")}` : ""}`)
    .pluck()
    .all(...args) as string[];
}

/**
 * One page of a search. Async: it gives the event loop back every SLICE_MS while it checks
 * candidates. `budgetMs` (default SCAN_BUDGET_MS) bounds the time it spends checking them.
 */
export async function searchTrajectories(q: TrajectorySearchQuery, db: RawDb = getRawDb(), opts: { budgetMs?: number } = {}): Promise<TrajectorySearchResult> {
  const terms = q.text ? searchTerms(q.text) : [];
  const runIds = scopeRuns(q, db);
  if (!runIds.length || terms.some((t) => t.some((w) => w.length > MAX_WORD))) return { trajectories: [], next: null, partial: false, scanned: 0 };
  indexMissing(runIds, db);

  // every run: no run condition (a store may hold more runs than a statement takes parameters)
  const everyRun = !q.runs && q.project === undefined;
  const where = everyRun ? ["1 = 1"] : [`ts."runId" IN (${runIds.map(() => "?").join(",")})`];
  const args: unknown[] = everyRun ? [] : [...runIds];
  const cond = (sql: string, ...v: unknown[]) => (where.push(sql), args.push(...v));
  if (q.outcome) cond(`ts."success" = ?`, q.outcome === "success" ? 1 : 0);
  if (q.minLength !== undefined) cond(`ts."length" >= ?`, q.minLength);
  if (q.maxLength !== undefined) cond(`ts."length" <= ?`, q.maxLength);
  if (q.minReturn !== undefined) cond(`ts."reward" >= ?`, q.minReturn);
  if (q.maxReturn !== undefined) cond(`ts."reward" <= ?`, q.maxReturn);
  if (q.step !== undefined) cond(`ts."step" = ?`, q.step);
  if (q.minStep !== undefined) cond(`ts."step" >= ?`, q.minStep);
  if (q.maxStep !== undefined) cond(`ts."step" <= ?`, q.maxStep);
  if (q.envId !== undefined || q.task !== undefined) {
    const g: string[] = [];
    const gArgs: unknown[] = [];
    if (q.envId !== undefined) g.push(`g."envId" = ?`), gArgs.push(q.envId);
    if (q.task !== undefined) g.push(`g."uid" = ?`), gArgs.push(q.task);
    cond(
      `EXISTS (SELECT 1 FROM "Trajectory" t JOIN "RolloutGroup" g ON g."id" = t."groupId" WHERE t."id" = ts."trajectoryId" AND ${g.join(" AND ")})`,
      ...gArgs,
    );
  }
  if (q.label !== undefined)
    cond(
      `EXISTS (SELECT 1 FROM "Trajectory" t JOIN "RolloutGroup" g ON g."id" = t."groupId" JOIN "RolloutStep" s ON s."id" = g."stepId" WHERE t."id" = ts."trajectoryId" AND ${HAS_LABEL})`,
      q.label,
    );
  if (terms.length) {
    const fields: ("obs" | "act")[] = q.in === "observation" ? ["obs"] : q.in === "action" ? ["act"] : ["obs", "act"];
    const m = dialect(db).wordIndex.match(terms.flat(), fields);
    cond(`ts."key" IN (${m.sql})`, ...m.args);
  }

  const perTurn = turnTest(q);
  const phrases = terms.some((t) => t.length > 1);
  const col = SORT_COLUMN[q.sort];
  const desc = q.order === "desc";
  const select = [`ts."key"`, `ts."trajectoryId"`, `ts."runId"`, `ts."step"`, `ts."success"`, `ts."reward"`, `ts."length"`];
  const sortValue = (c: Candidate) => (q.sort === "step" ? c.step : q.sort === "return" ? c.reward : c.length);
  const candidates = (after: [number, number] | null, limit: number) => {
    const w = [...where];
    const a = [...args];
    if (after) w.push(`(${col}, ts."key") ${desc ? "<" : ">"} (?, ?)`), a.push(after[0], after[1]);
    return db
      .prepare(
        `SELECT ${select.join(", ")} FROM "TrajectorySearch" ts WHERE ${w.join(" AND ")} ORDER BY ${col} ${desc ? "DESC" : "ASC"}, ts."key" ${desc ? "DESC" : "ASC"} LIMIT ${limit}`,
      )
      .all(...a) as Candidate[];
  };
  let after = q.cursor ? decodeCursor(q.cursor, q.sort) : null;
  const slices = new Slices();

  if (!(perTurn || phrases)) {
    // SQL answers it all: the page, plus one row that says there is more
    const rows = candidates(after, q.pageSize + 1);
    const hits = rows.slice(0, q.pageSize).map((c) => ({ c, turns: null }));
    const last = hits[hits.length - 1]?.c;
    const next = rows.length > q.pageSize ? encodeCursor(sortValue(last), last.key) : null;
    return { trajectories: await describeHits(hits, terms, q.in, db, slices), next, partial: false, scanned: rows.length };
  }

  // Candidates in sort order, their packed turns read a few at a time, until the page is full, the
  // candidates run out, or the page has checked SCAN_LIMIT of them or spent its time budget.
  const turnColumn = [perTurn ? `"turnData"` : "", phrases ? `"turnTexts"` : ""].filter(Boolean).join(", ");
  const budgetEnd = performance.now() + (opts.budgetMs ?? SCAN_BUDGET_MS);
  const hits: { c: Candidate; turns: number[] | null }[] = [];
  let scanned = 0;
  let exhausted = false;
  let stopped = false;
  let chunk = 2 * TURN_CHUNK; // grows: a page whose hits come early lists few candidates
  while (!stopped && scanned < SCAN_LIMIT) {
    const limit = Math.min(chunk, SCAN_LIMIT - scanned);
    chunk = Math.min(5 * chunk, KEY_CHUNK);
    const rows = candidates(after, limit);
    let checked = 0;
    for (let i = 0; i < rows.length && !stopped; i += TURN_CHUNK) {
      const batch = rows.slice(i, i + TURN_CHUNK);
      const ids = batch.map((c) => c.trajectoryId);
      // a trajectory deleted since its key was listed (its run deleted meanwhile) matches nothing
      const read = db.prepare(`SELECT "id", ${turnColumn} FROM "Trajectory" WHERE "id" IN (${ids.map(() => "?").join(",")})`).all(...ids) as {
        id: string;
        turnData?: Uint8Array;
        turnTexts?: Uint8Array | TurnTexts;
      }[];
      if (phrases) {
        const texts = readTurnTexts(read as { id: string; turnTexts: Uint8Array }[], db);
        read.forEach((r, k) => {
          r.turnTexts = texts[k];
        });
      }
      const packed = new Map(read.map((r) => [r.id, r]));
      for (const c of batch) {
        scanned++;
        checked++;
        after = [sortValue(c), c.key];
        const turns = matchingTurns(c, packed.get(c.trajectoryId), terms, phrases, perTurn, q.in);
        if (turns) hits.push({ c, turns });
        // at least one candidate a page, so a page always moves the cursor on
        if (hits.length === q.pageSize || performance.now() >= budgetEnd) {
          stopped = true;
          break;
        }
        await slices.pause();
      }
    }
    if (rows.length < limit && checked === rows.length) {
      exhausted = true;
      break;
    }
  }
  // a full page stopped at its last hit: either way the next page starts after the last candidate checked
  const next = !exhausted && after ? encodeCursor(after[0], after[1]) : null;
  return { trajectories: await describeHits(hits, terms, q.in, db, slices), next, partial: next !== null && hits.length < q.pageSize, scanned };
}

/** The turns a candidate matches on (those holding the text, unless per-turn conditions name others), or null when it does not match. */
function matchingTurns(
  c: Candidate,
  packed: { turnData?: Uint8Array; turnTexts?: Uint8Array | TurnTexts } | undefined,
  terms: string[][],
  phrases: boolean,
  perTurn: ((c: TurnColumns, i: number) => boolean) | null,
  field: TrajectorySearchQuery["in"],
): number[] | null {
  if (!packed) return null;
  let turns: number[] | null = null;
  if (phrases) {
    const held = turnsHolding(packed.turnTexts as TurnTexts, terms, field);
    if (!held.all) return null;
    turns = held.turns;
  }
  if (perTurn) {
    const cols = unpackTurnColumns(packed.turnData!);
    turns = [];
    for (let i = 0; i < c.length; i++) if (perTurn(cols, i)) turns.push(i);
    if (!turns.length) return null;
  }
  return turns;
}

/** Gives the event loop back once SLICE_MS of work has passed since it last had it. */
class Slices {
  private since = performance.now();
  async pause(): Promise<void> {
    if (performance.now() - this.since < SLICE_MS) return;
    await new Promise((resolve) => setImmediate(resolve));
    this.since = performance.now();
  }
}

/** The page's hits with their run, group and matched turns. */
async function describeHits(
  hits: { c: Candidate; turns: number[] | null }[],
  terms: string[][],
  field: TrajectorySearchQuery["in"],
  db: RawDb,
  slices: Slices,
): Promise<TrajectoryHit[]> {
  if (!hits.length) return [];
  const ids = hits.map((h) => h.c.trajectoryId);
  const rows = db
    .prepare(
      `SELECT t."id", t."groupId", t."index", g."uid", g."envId", r."name" AS "runName"${terms.length && hits.some((h) => !h.turns) ? `, t."turnTexts"` : ""}
       FROM "Trajectory" t JOIN "RolloutGroup" g ON g."id" = t."groupId" JOIN "Run" r ON r."id" = t."runId"
       WHERE t."id" IN (${ids.map(() => "?").join(",")})`,
    )
    .all(...ids) as { id: string; groupId: string; index: number; uid: string; envId: string; runName: string; turnTexts?: Uint8Array }[];
  const withTexts = rows.filter((r): r is (typeof rows)[number] & { turnTexts: Uint8Array } => r.turnTexts !== undefined);
  const texts = new Map(readTurnTexts(withTexts, db).map((x, i) => [withTexts[i].id, x]));
  const byId = new Map(rows.map((r) => [r.id, r]));
  const out: TrajectoryHit[] = [];
  for (const { c, turns } of hits) {
    const r = byId.get(c.trajectoryId);
    if (!r) continue; // deleted (its run deleted) while the page was being made
    const own = texts.get(r.id);
    const matched = turns ?? (terms.length && own ? turnsHolding(own, terms, field).turns : []);
    out.push({
      id: c.trajectoryId,
      runId: c.runId,
      runName: r.runName,
      step: c.step,
      groupId: r.groupId,
      task: r.uid,
      envId: r.envId,
      index: r.index,
      reward: c.reward,
      success: c.success === 1,
      length: c.length,
      matchedTurns: matched.slice(0, MAX_MATCHED_TURNS),
    });
    await slices.pause();
  }
  return out;
}
