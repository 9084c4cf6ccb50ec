// Domain types produced by normalize.ts; everything downstream trusts them.

/** One sandbox as the management API describes it. */
export interface Sandbox {
  id: string;
  /** Template the sandbox was made from; "" when the record does not say. */
  templateId: string;
  /** Lower-cased free-text lifecycle state; "unknown" when absent. */
  state: string;
  cpuCount?: number;
  memoryMB?: number;
  /** Start time, epoch milliseconds. */
  startedAt?: number;
  /** Scheduled end time, epoch milliseconds. */
  endAt?: number;
  domain?: string;
  metadata: Record<string, string>;
  /** Numeric fields we did not map, by snake_case name. */
  extra: Record<string, number>;
}

/** A node of the platform cluster. */
export interface PlatformNode {
  id: string;
  /** Lower-cased status; "unknown" when absent. */
  status: string;
  /** Numeric fields (snake_case name -> value), e.g. cpu_count, memory_used_bytes. */
  numeric: Record<string, number>;
  /** String fields worth an info label (snake_case name -> value). */
  info: Record<string, string>;
}

/** A template (sandbox image). */
export interface Template {
  id: string;
  status: string;
  version?: string;
  replicas?: number;
  error?: string;
  numeric: Record<string, number>;
  info: Record<string, string>;
}

/** Cluster resource totals; every numeric field the platform sends, snake_case. */
export interface ClusterOverview {
  numeric: Record<string, number>;
}

/** Result of GET /health. */
export interface Health {
  /** True only for a 2xx answer that is empty or says healthy; never with status `unknown`. */
  up: boolean;
  /**
   * Lower-cased status text when the body carries one; `unknown` when a 2xx body could not be
   * read as a health answer (an HTML page, JSON without a status).
   */
  status?: string;
}

/** One structured log entry of a sandbox. */
export interface LogEntry {
  /** Epoch milliseconds, when the entry carries a timestamp. */
  timestamp?: number;
  message?: string;
  raw: Record<string, unknown>;
}

/** One page of a paged list. */
export interface Page<T> {
  items: T[];
  /** Token or cursor of the next page; undefined on the last page. */
  nextToken?: string;
}

/** Events of the process.Process/Start stream. */
export type ProcessEvent =
  | { type: "start"; pid: number }
  | { type: "data"; stdout?: Buffer; stderr?: Buffer; pty?: Buffer }
  | { type: "end"; exitCode: number; exited: boolean; status?: string; error?: string }
  | { type: "keepalive" };

/** Metadata key marking a probe sandbox; its value is the exporter instance. */
export const PROBE_TAG_KEY = "sandbox-exporter/probe";

/** Resource use of a sandbox at one moment (E2B's SandboxMetric). */
export interface SandboxUsage {
  /** Epoch ms of the sample. */
  at: number;
  cpuPct: number;
  cpuCount: number | undefined;
  memUsedBytes: number | undefined;
  memTotalBytes: number | undefined;
  diskUsedBytes: number | undefined;
  diskTotalBytes: number | undefined;
}
