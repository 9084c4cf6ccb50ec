// Why a probe phase failed: the check errors phases raise, and every error mapped to a `reason` label.
import { ConnectError, EnvelopeError } from "../platform/data/envelope.js";
import {
  DataPlaneError,
  isTimeout,
  PlatformBodyError,
  PlatformHttpError,
  PlatformNetworkError,
  PlatformNotFoundError,
  PlatformTimeoutError,
} from "../platform/http-errors.js";
import { ExporterError } from "../util/errors.js";

/** Characters of an error's message kept in the failure log and the trace. */
export const MAX_FAILURE_TEXT = 300;

/** Values of the `reason` label of sandbox_probe_failures_total. */
export type FailureReason =
  | "http_status"
  | "timeout"
  | "network"
  | "bad_body"
  | "malformed_stream"
  | "truncated"
  | "end_stream_error"
  | "missing_end"
  | "exit_code"
  | "wrong_output"
  | "mismatch"
  | "not_deleted"
  | "not_paused"
  | "not_resumed"
  /** The platform did not pause the sandbox at its timeout (killed it, or left it running). */
  | "not_auto_paused"
  | "not_found"
  /** The proxy's closed-port answer: the sandbox runs, nothing listens on the port. */
  | "port_closed"
  /** The service answered a status outside validStatusCodes. */
  | "bad_status"
  /**
   * allowPublicTraffic false, yet the port is public: create returned no traffic token, or the
   * proxy served a request without it.
   */
  | "not_restricted"
  /** The answer lacks the nonce or fails a failIfBodyNotMatchesRegexp. */
  | "body_mismatch"
  /** The answer's body is longer than the probe reads (64 KiB): it stopped reading there. */
  | "body_too_large"
  /** Traffic to the paused sandbox got the proxy's paused (or not-found) answer instead of a wake. */
  | "not_auto_resumed"
  /** The paused sandbox did not answer the waking request in time. */
  | "wake_timeout"
  | "file_lost"
  | "process_lost"
  | "aborted"
  /** No concurrency slot freed within an on-demand probe's time: create never ran. */
  | "slot"
  | "other";

/** A phase got an answer, but not the right one (wrong stdout, exit code, file content, ...). */
export class ProbeCheckError extends ExporterError {
  constructor(
    readonly reason: FailureReason,
    message: string,
  ) {
    super("ERR_PROBE_CHECK", message);
  }
}

/** The probe was stopped (shutdown) before it finished. */
export class ProbeAbortedError extends ExporterError {
  constructor() {
    super("ERR_PROBE_ABORTED", "probe aborted: the exporter is shutting down");
  }
}

/**
 * The reason label of a phase failure. An aborted phase signal wins over the error itself, since
 * an aborted request surfaces as whatever the HTTP client throws on abort.
 */
export function failureReason(err: unknown, signal?: AbortSignal): FailureReason {
  if (signal?.aborted) return isTimeout(signal.reason) ? "timeout" : "aborted";
  if (err instanceof ProbeCheckError) return err.reason;
  if (err instanceof ProbeAbortedError) return "aborted";
  if (err instanceof PlatformHttpError || err instanceof DataPlaneError) return "http_status";
  if (err instanceof PlatformNotFoundError) return "http_status";
  if (err instanceof PlatformTimeoutError || isTimeout(err)) return "timeout";
  if (err instanceof PlatformNetworkError) return "network";
  if (err instanceof PlatformBodyError) return "bad_body";
  // The agent ends the stream with deadline_exceeded when the Connect-Timeout-Ms we sent expires:
  // the phase's own limit, reached on the agent's clock before ours.
  if (err instanceof ConnectError)
    return err.connectCode === "deadline_exceeded" ? "timeout" : "end_stream_error";
  if (err instanceof EnvelopeError)
    return err.code === "ERR_ENVELOPE_TRUNCATED" ? "truncated" : "malformed_stream";
  return "other";
}
