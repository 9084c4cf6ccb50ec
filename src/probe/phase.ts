// What every probe phase shares: the phase names, the run state they read and fill, and their signature.
import type { ControlClient, CreatedSandbox } from "../platform/control/control.js";
import type { DataClient, SandboxRef } from "../platform/data/data.js";

/** The phases of one probe, in the order they run; terminate always runs. */
export const PROBE_PHASES = ["create", "exec", "file_write", "file_read", "terminate"] as const;
export type ProbePhase = (typeof PROBE_PHASES)[number];

/** Points of the exec stream, timed from sending the Start request. */
export const STREAM_POINTS = ["first_envelope", "start", "first_data", "end"] as const;
export type StreamPoint = (typeof STREAM_POINTS)[number];

/** The control-channel calls a probe makes. */
export type ProbeControl = Pick<
  ControlClient,
  "createSandbox" | "getSandbox" | "deleteSandbox" | "listSandboxes"
>;

/** The data-channel calls a probe makes. */
export type ProbeData = Pick<DataClient, "startProcess" | "readFile" | "writeFile">;

/** What a probe does, fixed for its whole life. */
export interface ProbeSettings {
  template: string;
  /** Shell command run by exec; `{nonce}` is replaced by the run's nonce. */
  command: string;
  /** Path of the file written and read back. */
  filePath: string;
  /** Metadata of the probe sandbox (carries the instance's probe tag). */
  metadata: Record<string, string>;
  /** Time to live asked for at create, so a probe lost to SIGKILL is reaped by the platform too. */
  sandboxTtlS: number;
  /** Sent as Keepalive-Ping-Interval on the exec stream when set. */
  keepaliveIntervalS?: number;
}

/** Exec stream timings: seconds from sending the request to each point reached, and keepalives. */
export interface StreamTimings {
  points: Partial<Record<StreamPoint, number>>;
  keepalives: number;
}

/** The mutable state of one probe run, shared by its phases. */
export interface ProbeRun {
  readonly control: ProbeControl;
  readonly data: ProbeData;
  readonly settings: ProbeSettings;
  readonly nonce: string;
  /** Monotonic milliseconds. */
  readonly monotonic: () => number;
  /** The probe sandbox once create answered; cleared when terminate confirmed it gone. */
  sandbox?: SandboxRef;
  /** Id of the probe sandbox once known; kept after terminate, for the result and logs. */
  sandboxId?: string;
  /** A create call still on the wire after create gave up on it; terminate awaits and deletes it. */
  pendingCreate?: Promise<CreatedSandbox>;
  stream: StreamTimings;
}

/** One phase: resolves when it passed, throws when it failed (ProbeCheckError or a platform error). */
export type PhaseFn = (run: ProbeRun, signal: AbortSignal, budgetMs: number) => Promise<void>;

/** The sandbox a data-plane phase works on; create must have passed. */
export function probeSandbox(run: ProbeRun): SandboxRef {
  if (!run.sandbox) throw new Error("probe phase ran before create produced a sandbox");
  return run.sandbox;
}
