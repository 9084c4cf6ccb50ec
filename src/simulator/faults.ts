// Fault and latency injection, switched on and off by tests at runtime.
import { deriveSeed, Prng } from "./prng.js";

/** A fault applied to every request of one route. */
export interface RouteFault {
  /** Answer with this status (always, or at `errorRate` when that is set). */
  status?: number;
  /** Fraction 0..1 of requests that fail (deterministic PRNG); status defaults to 500. */
  errorRate?: number;
  /** Delay before answering. */
  latencyMs?: number;
  /** Answer 200 with a body that is not valid JSON. */
  malformed?: boolean;
}

/** Knobs of the process.Process/Start stream. */
export interface StreamFaults {
  /** Delay from request arrival to the `start` event. */
  startDelayMs?: number;
  /** Delay from `start` to the first command output. */
  firstDataDelayMs?: number;
  /** Delay from the last output to the `end` event. */
  endDelayMs?: number;
  /** Keepalive period; overrides the Keepalive-Ping-Interval request header. */
  keepaliveIntervalMs?: number;
  /** true: always gzip frames; false: never; unset: honour Connect-Accept-Encoding. */
  compress?: boolean;
  /** End the stream with this error (and no `end` event). */
  endStreamError?: { code: string; message: string };
  /** Close the response without the end-of-stream frame. */
  truncate?: boolean;
  /** Send a frame header declaring a 4 GiB payload, then close. */
  malformedEnvelope?: boolean;
  /** Replace every stdout chunk with unexpected text. */
  wrongStdout?: boolean;
}

/** Knobs of pause and resume (E2B: connect). Delays run on the simulator's clock. */
export interface LifecycleFaults {
  /** A resume empties the sandbox's files. */
  loseFilesOnResume?: boolean;
  /** A resume ends every background process of the sandbox. */
  loseProcessesOnResume?: boolean;
  /** The Nth resume of a sandbox (1-based) and every later one answer 500, leaving it paused. */
  failResumeFrom?: number;
  /** A resume failed by `failResumeFrom` also kills the sandbox, recorded as `resume_failed`. */
  killOnFailedResume?: boolean;
  /** Pause answers 204, and the sandbox is gone: every later call about it answers 404. */
  notFoundAfterPause?: boolean;
  /** After a pause, reads of the sandbox keep reporting "running" for this long. */
  pauseDelayMs?: number;
  /** After a resume, reads of the sandbox keep reporting "paused" for this long. */
  resumeDelayMs?: number;
  /** Pause answers 204 but the sandbox keeps running. */
  stayRunningAfterPause?: boolean;
  /**
   * Time to live enforced (see expiry.ts): at the next request, a running sandbox whose end passed
   * is paused (created with auto-pause) or killed with reason "timeout". Off by default.
   */
  expireSandboxes?: boolean;
  /** An auto-pause drops the files written this long before the timeout or later (E2B#1104). */
  autoPauseLosesFilesWrittenWithinMs?: number;
  /** A sandbox created with auto-pause is killed at its timeout, not paused. */
  autoPauseKillsInstead?: boolean;
  /**
   * From the Nth resume (1-based) on, the sandbox comes back with the files it had when first
   * paused: changes made since are lost (E2B#884, "file changes lost after the second resume").
   */
  filesFromFirstPauseFromResume?: number;
  /** Each resume (E2B: connect of a paused sandbox) issues a new agent access token. */
  rotateTokenOnResume?: boolean;
  /**
   * For this long after a pause (simulator clock), traffic to a sandbox created with auto-resume
   * gets the proxy's 502 "not found" instead of waking it: traffic routed to a sandbox still
   * pausing, before infra#2196. `loseProcessesOnResume` also ends the services a wake should keep.
   */
  autoResumeNotFoundForMs?: number;
  /** A wake by traffic holds the request this long (simulator timers) before resuming the sandbox. */
  wakeDelayMs?: number;
}

/** What the dispatcher must do to one request because of faults. */
export interface FaultDecision {
  latencyMs: number;
  status?: number;
  malformed: boolean;
}

/** The mutable fault switchboard of a simulator; everything is off by default. */
export class SimFaults {
  /** Every list page returns the same next token. */
  repeatNextToken = false;
  /** List pages come back empty but still carry a next token. */
  emptyPageWithToken = false;
  /** Stream knobs for process.Process/Start. */
  stream: StreamFaults = {};
  /** Sandbox creation fails with this HTTP status. */
  createFails: number | undefined = undefined;
  /** Sandbox deletion fails with this HTTP status. */
  deleteFails: number | undefined = undefined;
  /** GET /health answers 503. */
  healthDown = false;
  /** Pause and resume knobs. */
  lifecycle: LifecycleFaults = {};
  /**
   * Create takes `network.allowPublicTraffic: false` and the sandbox stays public anyway:
   * "no_token" answers without a traffic token (an API that drops `network`), "not_enforced"
   * hands one out that the proxy never asks for.
   */
  publicTraffic: "no_token" | "not_enforced" | undefined = undefined;

  private readonly routes = new Map<string, RouteFault>();
  private rng: Prng;
  private readonly seed: number;

  constructor(seed = 1) {
    this.seed = seed;
    this.rng = new Prng(deriveSeed(seed, "faults"));
  }

  /** Sets (replaces) the fault of one route, e.g. route("GET /nodes", { status: 503 }). */
  route(route: string, fault: RouteFault): void {
    this.routes.set(route, { ...fault });
  }

  /** Turns every fault off and restarts the error-rate PRNG. */
  clear(): void {
    this.routes.clear();
    this.repeatNextToken = false;
    this.emptyPageWithToken = false;
    this.stream = {};
    this.createFails = undefined;
    this.deleteFails = undefined;
    this.healthDown = false;
    this.lifecycle = {};
    this.publicTraffic = undefined;
    this.rng = new Prng(deriveSeed(this.seed, "faults"));
  }

  /** Decides the fault treatment of one request of `route`. */
  decide(route: string): FaultDecision {
    const f = this.routes.get(route);
    if (!f) return { latencyMs: 0, malformed: false };
    const decision: FaultDecision = {
      latencyMs: f.latencyMs ?? 0,
      malformed: f.malformed ?? false,
    };
    if (f.errorRate !== undefined) {
      if (this.rng.next() < f.errorRate) decision.status = f.status ?? 500;
    } else if (f.status !== undefined) {
      decision.status = f.status;
    }
    return decision;
  }
}
