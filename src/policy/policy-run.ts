// What one policy run did: its decisions with their results, and why a run did nothing.
import type { IdleEstimate, PolicyDecision } from "./evaluate.js";
import type { PolicyResult } from "./executor.js";
import type { SnapshotRulesState } from "./retention.js";

/** Why a run acted on nothing at all. */
export type BlockReason = "incomplete" | "stale" | "health_down";

/** One decision with what came of it. */
export type PolicyOutcome = PolicyDecision & {
  /** Undefined while pending. */
  result?: PolicyResult;
  detail?: string;
};

/** What one run did; `blocked` says why it did nothing. */
export interface PolicyRun {
  at: number;
  cycle: number;
  blocked?: BlockReason;
  outcomes: PolicyOutcome[];
  candidates: Record<string, number>;
  blastRadius: string[];
  logReads: number;
  /** Wall time of the run: idle-signal reads, evaluation and actions. */
  durationMs: number;
  /** The run's time budget, ms. */
  budgetMs: number;
  /** The budget ran out: reads or actions were left undone. */
  overBudget: boolean;
  /** Per idle rule, the blast-radius sample and what it found. */
  estimates: Record<string, IdleEstimate>;
  /** How the retention rules stood; absent without any. */
  snapshots?: SnapshotRulesState;
}
