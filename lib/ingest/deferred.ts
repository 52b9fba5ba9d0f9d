// A stored step's deferred work: its search index and its credit summary, which no reader needs the
// moment the step is stored (a search indexes what it finds missing, credit over training
// summarises a step it finds unsummarised), so ingest answers first and does them next, from the
// step it still holds in memory. The step was written with a pending mark in its own transaction
// (lib/db/credit-summary.ts); this work replaces the mark in one transaction of its own. Should the
// process die in between, the mark stays and the server finds and does the work at its next start
// (lib/runs/pending-steps.ts). The run's alert rules are evaluated after that work (lib/db/alerts.ts).
import { evaluateRunAlerts } from "../db/alerts";
import { stepPending } from "../db/credit-summary";
import { getRawDb, writeTransaction, type RawDb } from "../db/raw";
import { completeStoredStep } from "../db/rollouts";
import type { RolloutStepInput } from "../schemas/rollouts";
import { summarizeStepInput, type StepSummary } from "../schemas/step-summary";

interface Deferred {
  runId: string;
  stepId: string;
  input: RolloutStepInput;
}

/**
 * Steps held for their deferred work at most: a writer faster than the work does it before its next
 * step is stored, so the held steps (a few MB each) stay bounded.
 */
const MAX_HELD = 4;

const queue: Deferred[] = [];

/** Holds a step just written (inside its write transaction) for its deferred work. */
export function deferStepWork(runId: string, stepId: string, input: RolloutStepInput): void {
  queue.push({ runId, stepId, input: withoutTokens(input) });
}

/**
 * The step as its deferred work reads it: without its turns' token arrays (most of a step with
 * tokens, and not read by the index or the summary), except the token entropies of a turn without
 * an entropy of its own (its turn entropy is their mean).
 */
function withoutTokens(input: RolloutStepInput): RolloutStepInput {
  if (!input.groups.some((g) => g.trajectories.some((t) => t.turns.some((u) => u.tokenIds || u.tokenEntropies)))) return input;
  return {
    ...input,
    groups: input.groups.map((g) => ({
      ...g,
      trajectories: g.trajectories.map((t) => ({
        ...t,
        turns: t.turns.map(({ tokenIds: _i, tokenTexts: _t, tokenLogprobs: _l, tokenAdvantages: _a, tokenEntropies, ...u }) =>
          tokenEntropies && (u.entropy === null || u.entropy === undefined) ? { ...u, tokenEntropies } : u,
        ),
      })),
    })),
  };
}

/** Does one stored step's deferred work; nothing when it is not pending (done elsewhere, or its write rolled back). */
export function finishStep(runId: string, stepId: string, input: RolloutStepInput, db: RawDb = getRawDb()): void {
  if (!stepPending(stepId, db)) return; // its write rolled back, or another process did the work
  // credit over training's summary of the step; should it fail, the mark goes and the summary is made on first read
  let summary: StepSummary | null = null;
  try {
    summary = summarizeStepInput(input);
  } catch {
    /* made on read */
  }
  writeTransaction(
    null,
    (db) => {
      if (stepPending(stepId, db)) completeStoredStep(runId, stepId, input, summary, db); // still, under the write lock
    },
    db,
    { runId },
  );
  noteAlertCheck(runId);
}

// Runs whose alert rules have points to read (a metric batch or a step's summary stored): evaluated
// after the held steps' work, one run a turn of the event loop (lib/db/alerts.ts reads only what is new).
const alertChecks = new Set<string>();

/** Marks a run's alert rules for evaluation after the current answer (scheduleDeferred). */
export function noteAlertCheck(runId: string): void {
  alertChecks.add(runId);
}

/** Evaluates one marked run's alert rules; false when none is marked. A failure is logged, never thrown into ingest. */
export function checkOneRunAlerts(db: RawDb = getRawDb()): boolean {
  const runId = alertChecks.values().next().value;
  if (runId === undefined) return false;
  alertChecks.delete(runId);
  try {
    evaluateRunAlerts(runId, db);
  } catch (e) {
    console.error(`ingest: alert rules of run ${runId} could not be evaluated (${(e as Error).message}); the next batch tries again`);
  }
  return true;
}

/** Does the oldest held step's work; false when none is held. */
export function finishOneDeferred(db: RawDb = getRawDb()): boolean {
  const d = queue.shift();
  if (!d) return false;
  try {
    finishStep(d.runId, d.stepId, d.input, db);
  } catch (e) {
    // the mark stays: done at the next start, or by the reads that need it
    console.error(`ingest: deferred work of step ${d.input.step} of run ${d.runId} failed (${(e as Error).message}); done at the next start`);
  }
  return true;
}

/** Before storing another step: the held steps' work down to fewer than MAX_HELD. */
export function makeRoomForDeferred(db: RawDb = getRawDb()): void {
  while (queue.length >= MAX_HELD) finishOneDeferred(db);
}

let scheduled = false;

/** Does the held steps' work after the current answer is sent, one step a turn of the event loop (a new request goes first). */
export function scheduleDeferred(db: RawDb = getRawDb()): void {
  if (scheduled || (!queue.length && !alertChecks.size)) return;
  scheduled = true;
  setImmediate(function next() {
    scheduled = false;
    // the held steps first (their summaries are what the step rules read), then the alert rules
    if ((finishOneDeferred(db) || checkOneRunAlerts(db)) && (queue.length || alertChecks.size)) {
      scheduled = true;
      setImmediate(next);
    }
  });
}
