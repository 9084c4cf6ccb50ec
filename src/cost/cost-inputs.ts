// What cost accounting takes in and what it refuses: a walk's rows, the reasons an input is dropped,
// and the bounds a sandbox's resources and an event's execution must keep.
import type { ExecutionSpan } from "../platform/events.js";

/** Most vCPUs and MB of RAM one sandbox is believed to have; more is a bad record. */
const MAX_VCPUS = 1024;
const MAX_MEMORY_MB = 16 * 1024 * 1024;
/** How far ahead of `now` a start or an event may lie (clock skew) before it is refused. */
export const FUTURE_SLACK_MS = 60_000;
/** Longest one execution (one run, create or resume to pause or kill) is believed to last. */
const MAX_EXECUTION_MS = 7 * 24 * 3_600_000;

/** Why an input was dropped; the `reason` label of the dropped-inputs counter. */
export type DropReason =
  | "bad_execution"
  | "bad_resources"
  | "missing_resources"
  | "future_start"
  | "future_event"
  | "time_backwards"
  | "unknown_sandbox";
export const DROP_REASONS: readonly DropReason[] = [
  "bad_execution",
  "bad_resources",
  "missing_resources",
  "future_start",
  "future_event",
  "time_backwards",
  "unknown_sandbox",
];

/** One sandbox of a walk, as the poller's list holds it. */
export interface WalkRow {
  id: string;
  templateId: string;
  state: string;
  cpuCount: number | undefined;
  memoryMB: number | undefined;
  startedAt: number | undefined;
  endAt: number | undefined;
  metadata: Readonly<Record<string, string>> | undefined;
}

/** One sandbox of a walk as arguments (WalkRow's fields in order). */
export type WalkRowVisitor = (
  id: string,
  templateId: string,
  state: string,
  cpuCount: number | undefined,
  memoryMB: number | undefined,
  startedAt: number | undefined,
  endAt: number | undefined,
  metadata: Readonly<Record<string, string>> | undefined,
) => void;

/** An execution that ends at its event (E2B writes both at once) and lasts no longer than a run can. */
export function executionOk(exec: ExecutionSpan, ts: number): boolean {
  const end = exec.startedAt + exec.durationMs;
  return (
    Math.abs(end - ts) <= FUTURE_SLACK_MS &&
    exec.durationMs >= 0 &&
    exec.durationMs <= MAX_EXECUTION_MS
  );
}

/** Resources a sandbox can have: none negative, none past the bounds above. */
export function resourcesOk(cpu: number, memMB: number): boolean {
  return cpu >= 0 && cpu <= MAX_VCPUS && memMB >= 0 && memMB <= MAX_MEMORY_MB;
}
