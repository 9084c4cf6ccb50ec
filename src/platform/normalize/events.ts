// E2B's sandbox lifecycle events (GET /events/sandboxes and the webhook deliveries) to
// LifecycleEvent. The events API spells fields in camelCase (`sandboxId`, `eventData`); the Go
// struct E2B delivers from (packages/shared/pkg/events) has snake_case JSON tags (`sandbox_id`,
// `event_data`): both are read. Kill reason and execution come from the orchestrator's eventData
// (`kill_reason`, `execution.execution_time` in milliseconds).
import { epochMs, parseIsoTime } from "../../util/time.js";
import {
  type ExecutionSpan,
  KILL_REASONS,
  type KillReason,
  type LifecycleEvent,
} from "../events.js";
import type { InvalidValues } from "./invalid-values.js";
import { isRecord, NormalizeError } from "./values.js";

/** The prefix E2B puts on every lifecycle event type. */
const TYPE_PREFIX = "sandbox.lifecycle.";
/** The resource under which dropped optional fields are counted in InvalidValues. */
const RESOURCE = "event";
/** Longest id or label value kept from an event; longer ones are not ids. */
const MAX_ID_CHARS = 256;
/** Metadata entries kept from one event at most (E2B's metadata is small). */
const MAX_METADATA_KEYS = 64;

const KNOWN_REASONS: ReadonlySet<string> = new Set(KILL_REASONS);

type Json = Record<string, unknown>;

/** The value under the first of `keys` that is present (not undefined). */
function pick(raw: Json, keys: readonly string[]): unknown {
  for (const k of keys) {
    const v = raw[k];
    if (v !== undefined) return v;
  }
  return undefined;
}

function requiredString(raw: Json, keys: readonly string[], field: string, what: string): string {
  const v = pick(raw, keys);
  if (typeof v !== "string" || v === "" || v.length > MAX_ID_CHARS)
    throw new NormalizeError(`event.${field}`, what, v);
  return v;
}

/** An optional id: a non-empty string is kept, null/absent/"" is nothing, anything else counted. */
function optionalString(
  raw: Json,
  keys: readonly string[],
  field: string,
  invalid: InvalidValues | undefined,
): string | undefined {
  const v = pick(raw, keys);
  if (v === undefined || v === null || v === "") return undefined;
  if (typeof v === "string" && v.length <= MAX_ID_CHARS) return v;
  invalid?.add(RESOURCE, field);
  return undefined;
}

function parseTimestamp(v: unknown): number | undefined {
  if (typeof v === "string") return parseIsoTime(v);
  if (typeof v === "number") return epochMs(v);
  return undefined;
}

/** A kill reason of E2B's list; an absent or unlisted one is `unknown`, as E2B defaults it. */
function killReasonOf(data: Json | undefined, invalid: InvalidValues | undefined): KillReason {
  const v = data === undefined ? undefined : pick(data, ["kill_reason", "killReason"]);
  if (typeof v === "string") {
    const r = v.toLowerCase();
    if (KNOWN_REASONS.has(r)) return r as KillReason;
  }
  if (v !== undefined && v !== null) invalid?.add(RESOURCE, "kill_reason");
  return "unknown";
}

/** `execution.execution_time` (ms, E2B's orchestrator) in seconds, when it is a number >= 0. */
function executionSecondsOf(
  data: Json | undefined,
  invalid: InvalidValues | undefined,
): number | undefined {
  const exec = data?.execution;
  if (exec === undefined || exec === null) return undefined;
  const ms = isRecord(exec) ? pick(exec, ["execution_time", "executionTime"]) : exec;
  if (ms === undefined || ms === null) return undefined;
  if (typeof ms === "number" && Number.isFinite(ms) && ms >= 0) return ms / 1000;
  invalid?.add(RESOURCE, "execution_time");
  return undefined;
}

/**
 * Reads one lifecycle event in either spelling. `id`, `type`, `sandboxId` and `timestamp` are
 * required (a NormalizeError, code ERR_NORMALIZE, names the field); an optional field that does
 * not parse is left out and counted in `invalid` under resource `event`.
 */
export function normalizeLifecycleEvent(raw: unknown, invalid?: InvalidValues): LifecycleEvent {
  if (!isRecord(raw)) throw new NormalizeError("event", "a lifecycle event object", raw);
  const id = requiredString(raw, ["id"], "id", "an event id");
  const rawType = requiredString(raw, ["type"], "type", "an event type");
  const lower = rawType.toLowerCase();
  const type = lower.startsWith(TYPE_PREFIX) ? lower.slice(TYPE_PREFIX.length) : lower;
  if (type === "") throw new NormalizeError("event.type", "an event type", rawType);
  const sandboxId = requiredString(raw, ["sandboxId", "sandbox_id"], "sandboxId", "a sandbox id");
  const ts = pick(raw, ["timestamp"]);
  const timestamp = parseTimestamp(ts);
  if (timestamp === undefined) throw new NormalizeError("event.timestamp", "an RFC 3339 time", ts);

  const event: LifecycleEvent = {
    id,
    type,
    sandboxId,
    templateId:
      optionalString(raw, ["sandboxTemplateId", "sandbox_template_id"], "template_id", invalid) ??
      "",
    timestamp,
  };
  const executionId = optionalString(
    raw,
    ["sandboxExecutionId", "sandbox_execution_id"],
    "execution_id",
    invalid,
  );
  if (executionId !== undefined) event.executionId = executionId;
  const buildId = optionalString(raw, ["sandboxBuildId", "sandbox_build_id"], "build_id", invalid);
  if (buildId !== undefined) event.buildId = buildId;
  const teamId = optionalString(raw, ["sandboxTeamId", "sandbox_team_id"], "team_id", invalid);
  if (teamId !== undefined) event.teamId = teamId;

  const rawData = pick(raw, ["eventData", "event_data"]);
  let data: Json | undefined;
  if (isRecord(rawData)) data = rawData;
  else if (rawData !== undefined && rawData !== null) invalid?.add(RESOURCE, "event_data");
  if (type === "killed") event.killReason = killReasonOf(data, invalid);
  const seconds = executionSecondsOf(data, invalid);
  if (seconds !== undefined) event.executionSeconds = seconds;
  const span = executionSpanOf(data, seconds, invalid);
  if (span !== undefined) event.execution = span;
  const metadata = metadataOf(data, invalid);
  if (metadata !== undefined) event.metadata = metadata;
  return event;
}

/** A count (vCPUs, MB) as E2B writes it: a finite number >= 0. */
function count(v: unknown): number | undefined {
  return typeof v === "number" && Number.isFinite(v) && v >= 0 ? v : undefined;
}

/** `execution` whole: its start, resources and duration; a part missing or bad drops it, counted. */
function executionSpanOf(
  data: Json | undefined,
  seconds: number | undefined,
  invalid: InvalidValues | undefined,
): ExecutionSpan | undefined {
  const exec = data?.execution;
  if (seconds === undefined || !isRecord(exec)) return undefined;
  const startedAt = parseTimestamp(pick(exec, ["started_at", "startedAt"]));
  const vcpuCount = count(pick(exec, ["vcpu_count", "vcpuCount"]));
  const memoryMB = count(pick(exec, ["memory_mb", "memoryMB", "memoryMb"]));
  if (startedAt === undefined || vcpuCount === undefined || memoryMB === undefined) {
    invalid?.add(RESOURCE, "execution");
    return undefined;
  }
  return { startedAt, vcpuCount, memoryMB, durationMs: seconds * 1000 };
}

/** `sandbox_metadata`: string values only, bounded in count and length; anything else counted. */
function metadataOf(
  data: Json | undefined,
  invalid: InvalidValues | undefined,
): Record<string, string> | undefined {
  const raw = data === undefined ? undefined : pick(data, ["sandbox_metadata", "sandboxMetadata"]);
  if (raw === undefined || raw === null) return undefined;
  if (!isRecord(raw)) {
    invalid?.add(RESOURCE, "sandbox_metadata");
    return undefined;
  }
  const out: Record<string, string> = {};
  let n = 0;
  for (const [k, v] of Object.entries(raw)) {
    if (typeof v !== "string" || k.length > MAX_ID_CHARS || v.length > MAX_ID_CHARS) {
      invalid?.add(RESOURCE, "sandbox_metadata");
      continue;
    }
    if (++n > MAX_METADATA_KEYS) break;
    out[k] = v;
  }
  return out;
}

/** One page of GET /events/sandboxes: one slot per record received, undefined for a bad one. */
export interface SandboxEventPage {
  /** In the order received; a record that did not normalize is an undefined slot, so offsets stay true. */
  readonly items: readonly (LifecycleEvent | undefined)[];
}

/**
 * Reads an events API answer (a JSON array). A record that does not normalize is left out (its
 * slot kept) and counted in `invalid` under resource `event` and the field that failed.
 */
export function normalizeLifecycleEventPage(
  raw: unknown,
  invalid: InvalidValues | undefined,
): SandboxEventPage {
  if (!Array.isArray(raw)) throw new NormalizeError("events", "a list of lifecycle events", raw);
  const items = raw.map((r: unknown) => {
    try {
      return normalizeLifecycleEvent(r, invalid);
    } catch (err) {
      if (!(err instanceof NormalizeError)) throw err;
      invalid?.add(RESOURCE, err.path === "event" ? "record" : snake(err.path.slice(6)));
      return undefined;
    }
  });
  return { items };
}

function snake(field: string): string {
  return field.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}
