// Phase exec: `echo <nonce>` through process.Process/Start, timing the envelope stream as it goes.
import { OutputCollector, wrapCommand } from "../platform/data/process-event.js";
import type { ProcessEvent } from "../platform/types.js";
import { type PhaseFn, type ProbeRun, probeSandbox, type StreamPoint } from "./phase.js";
import { ProbeCheckError } from "./probe-error.js";

/** The probe's command prints a few bytes; anything past this is wrong anyway. */
const MAX_OUTPUT_BYTES = 64 * 1024;
const SHOWN_OUTPUT_CHARS = 60;

/** The command with its nonce filled in. */
export function probeCommand(command: string, nonce: string): string {
  return command.replaceAll("{nonce}", nonce);
}

/**
 * Runs the command and passes only when it exits 0 and stdout is exactly the nonce (echo's
 * trailing newline allowed). Stream points are stamped on arrival with the probe's own clock.
 */
export const execPhase: PhaseFn = async (run, signal, budgetMs) => {
  const sb = probeSandbox(run);
  const out = new OutputCollector(MAX_OUTPUT_BYTES);
  let end: Extract<ProcessEvent, { type: "end" }> | undefined;
  const stream = run.data.startProcess(
    sb,
    wrapCommand(probeCommand(run.settings.command, run.nonce)),
    {
      signal,
      // The agent kills the process at this deadline; never shorter than what the probe waits.
      deadlineMs: budgetMs,
      acceptGzip: true,
      ...(run.settings.keepaliveIntervalS !== undefined
        ? { keepaliveIntervalS: run.settings.keepaliveIntervalS }
        : {}),
    },
  );
  const sent = run.monotonic();
  for await (const { event } of stream) {
    mark(run, "first_envelope", sent);
    if (event.type === "start") mark(run, "start", sent);
    else if (event.type === "keepalive") run.stream.keepalives++;
    else if (event.type === "data") {
      if (event.stdout || event.stderr || event.pty) mark(run, "first_data", sent);
      out.add(event);
    } else {
      mark(run, "end", sent);
      end = event;
    }
  }
  if (!end) throw new ProbeCheckError("missing_end", "exec stream finished without an end event");
  if (end.exitCode !== 0 || end.error !== undefined) {
    const detail = [end.status, end.error].filter(Boolean).join(", ");
    throw new ProbeCheckError(
      "exit_code",
      `exec exited with code ${end.exitCode}${detail ? ` (${detail})` : ""}`,
    );
  }
  const { stdout } = out.result();
  if (stdout !== run.nonce && stdout !== `${run.nonce}\n`) {
    throw new ProbeCheckError(
      "wrong_output",
      `exec stdout is not the nonce: got ${JSON.stringify(stdout.slice(0, SHOWN_OUTPUT_CHARS))}`,
    );
  }
};

/** Records the first time a point is reached, in seconds since the request was sent. */
function mark(run: ProbeRun, point: StreamPoint, sent: number): void {
  run.stream.points[point] ??= (run.monotonic() - sent) / 1000;
}
