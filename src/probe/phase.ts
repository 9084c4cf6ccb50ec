// What every probe phase shares: the run state they read and fill, and their signature.
import type { ControlClient, CreatedSandbox } from "../platform/control/control.js";
import type { DataClient, SandboxRef } from "../platform/data/data.js";
import type { ProbeHttpConfig } from "./http-settings.js";

/** Points of the exec stream, timed from sending the Start request. */
export const STREAM_POINTS = ["first_envelope", "start", "first_data", "end"] as const;
export type StreamPoint = (typeof STREAM_POINTS)[number];

/** The control-channel calls a probe makes. */
export type ProbeControl = Pick<
  ControlClient,
  | "createSandbox"
  | "getSandbox"
  | "deleteSandbox"
  | "listSandboxes"
  | "pauseSandbox"
  | "resumeSandbox"
>;

/** The data-channel calls a probe makes. */
export type ProbeData = Pick<DataClient, "startProcess" | "readFile" | "writeFile" | "requestPort">;

/** The http and autoresume steps' service and request (the config's `http`). */
export type ProbeHttpSettings = ProbeHttpConfig;

/** What a probe does, fixed for its whole life. */
export interface ProbeSettings {
  template: string;
  /** Shell command run by exec; `{nonce}` is replaced by the run's nonce. */
  command: string;
  /** Path of the file written and read back. */
  filePath: string;
  /** Metadata of the probe sandbox (carries the instance's probe tag). */
  metadata: Record<string, string>;
  /** Time to live asked for at create (and at each resume), so a probe lost to SIGKILL is reaped. */
  sandboxTtlS: number;
  /** Sent as Keepalive-Ping-Interval on the exec stream when set. */
  keepaliveIntervalS?: number;
  /**
   * The names of the optional steps that run (given by the caller from the registry,
   * probe-steps.ts; they run in its order). `lifecycle` is meant to come with `file` (the config
   * refuses it without); alone, it writes the nonce file itself.
   */
  steps: ReadonlyArray<string>;
  /** Pause/resume rounds of the lifecycle step, at least 1. */
  lifecycleRounds: number;
  /**
   * The autopause step's sandbox timeout, seconds: create (and each resume but the last) asks for
   * it, with auto-pause on. Required by that step (the config's autoPauseTimeoutMs).
   */
  autoPauseTimeoutS?: number;
  /** Ms between two reads of the sandbox while waiting for it to be paused or running; default 200. */
  statePollMs?: number;
  /** States a read of a paused and of a running sandbox may report; default the config's defaults. */
  states?: LifecycleStates;
  /** The http and autoresume steps' service and request; required when either step runs. */
  http?: ProbeHttpSettings;
}

/** The sandbox states the lifecycle waits for (compared in lower case). */
export interface LifecycleStates {
  running: ReadonlyArray<string>;
  paused: ReadonlyArray<string>;
}

/** Exec stream timings: seconds from sending the request to each point reached, and keepalives. */
export interface StreamTimings {
  points: Partial<Record<StreamPoint, number>>;
  keepalives: number;
}

/** The mutable state of one probe run, shared by its phases. */
export interface ProbeRun {
  /** The control client; the steps' create hooks wrap it before create runs. */
  control: ProbeControl;
  readonly data: ProbeData;
  readonly settings: ProbeSettings;
  readonly nonce: string;
  /** Monotonic milliseconds. */
  readonly monotonic: () => number;
  /** Waits `ms` (the pause between two state reads); rejects when `signal` aborts. */
  readonly sleep: (ms: number, signal: AbortSignal) => Promise<void>;
  /** The probe sandbox once create answered; cleared when terminate confirmed it gone. */
  sandbox?: SandboxRef;
  /** Id of the probe sandbox once known; kept after terminate, for the result and logs. */
  sandboxId?: string;
  /** A create call still on the wire after create gave up on it; terminate awaits and deletes it. */
  pendingCreate?: Promise<CreatedSandbox>;
  /** Pid of the background process the lifecycle started; it must survive every pause. */
  markerPid?: number;
  /** Whether create asked the platform for auto-pause (the autopause step); false: not supported. */
  autoPauseAsked?: boolean;
  /** Whether create asked the platform for auto-resume (the autoresume step); false: not supported. */
  autoResumeAsked?: boolean;
  /** The proxy's traffic token of a sandbox created with allowPublicTraffic false. */
  trafficToken?: string;
  /** Pid of the HTTP service the http or autoresume step started. */
  servicePid?: number;
  /** Seconds from sending the request to its status line and to its whole body, last HTTP request. */
  http?: { firstByte: number; total: number };
  /** Seconds the request that woke the paused sandbox took (the autoresume step). */
  wakeSeconds?: number;
  /** Monotonic ms the create or resume that (re)started the auto-pause timeout was sent. */
  autoPauseTimerFrom?: number;
  stream: StreamTimings;
}

/** One phase: resolves when it passed, throws when it failed (ProbeCheckError or a platform error). */
export type PhaseFn = (run: ProbeRun, signal: AbortSignal, budgetMs: number) => Promise<void>;

/** The sandbox a data-plane phase works on; create must have passed. */
export function probeSandbox(run: ProbeRun): SandboxRef {
  if (!run.sandbox) throw new Error("probe phase ran before create produced a sandbox");
  return run.sandbox;
}
