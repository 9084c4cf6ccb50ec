// Phase exec: `echo <nonce>` through process.Process/Start, timing the envelope stream as it goes.
// Also the command runner the lifecycle phases share.
import { OutputCollector, wrapCommand } from "../../../platform/data/process-event.js";
import type { ProcessEvent } from "../../../platform/types.js";
import { type PhaseFn, type ProbeRun, probeSandbox, type StreamPoint } from "../../phase.js";
import { ProbeCheckError } from "../../probe-error.js";

/** The probe's commands print a few bytes; anything past this is wrong anyway. */
const MAX_OUTPUT_BYTES = 64 * 1024;
const SHOWN_OUTPUT_CHARS = 60;

type EndEvent = Extract<ProcessEvent, { type: "end" }>;

/** What one command run through the agent produced. */
export interface CommandResult {
  end: EndEvent;
  stdout: string;
}

/** The command with its nonce filled in. */
export function probeCommand(command: string, nonce: string): string {
  return command.replaceAll("{nonce}", nonce);
}

/**
 * Runs `command` through `/bin/bash -l -c` and collects its stdout; `onEvent` sees each event as
 * it arrives. Throws missing_end when the stream finishes without an end event.
 */
export async function runCommand(
  run: ProbeRun,
  command: string,
  signal: AbortSignal,
  budgetMs: number,
  onEvent?: (event: ProcessEvent) => void,
): Promise<CommandResult> {
  const out = new OutputCollector(MAX_OUTPUT_BYTES);
  let end: EndEvent | undefined;
  const stream = run.data.startProcess(probeSandbox(run), wrapCommand(command), {
    signal,
    // The agent kills the process at this deadline; never shorter than what the probe waits.
    deadlineMs: budgetMs,
    acceptGzip: true,
    ...(run.settings.keepaliveIntervalS !== undefined
      ? { keepaliveIntervalS: run.settings.keepaliveIntervalS }
      : {}),
  });
  for await (const { event } of stream) {
    onEvent?.(event);
    if (event.type === "data") out.add(event);
    else if (event.type === "end") end = event;
  }
  if (!end) throw new ProbeCheckError("missing_end", "exec stream finished without an end event");
  return { end, stdout: out.result().stdout };
}

/** Throws exit_code unless the command exited 0 without an error. */
export function expectCleanExit(what: string, end: EndEvent): void {
  if (end.exitCode === 0 && end.error === undefined) return;
  const detail = [end.status, end.error].filter(Boolean).join(", ");
  throw new ProbeCheckError(
    "exit_code",
    `${what} exited with code ${end.exitCode}${detail ? ` (${detail})` : ""}`,
  );
}

/** Throws wrong_output unless stdout is exactly `want` (echo's trailing newline allowed). */
export function expectOutput(what: string, stdout: string, want: string): void {
  if (stdout === want || stdout === `${want}\n`) return;
  throw new ProbeCheckError(
    "wrong_output",
    `${what} stdout is not the nonce: got ${JSON.stringify(stdout.slice(0, SHOWN_OUTPUT_CHARS))}`,
  );
}

/**
 * Runs the command and passes only when it exits 0 and stdout is exactly the nonce. Stream points
 * are stamped on arrival with the probe's own clock.
 */
export const execPhase: PhaseFn = async (run, signal, budgetMs) => {
  const command = probeCommand(run.settings.command, run.nonce);
  const sent = run.monotonic();
  const { end, stdout } = await runCommand(run, command, signal, budgetMs, (event) => {
    mark(run, "first_envelope", sent);
    if (event.type === "start") mark(run, "start", sent);
    else if (event.type === "keepalive") run.stream.keepalives++;
    else if (event.type === "data") {
      if (event.stdout || event.stderr || event.pty) mark(run, "first_data", sent);
    } else mark(run, "end", sent);
  });
  expectCleanExit("exec", end);
  expectOutput("exec", stdout, run.nonce);
};

/** Records the first time a point is reached, in seconds since the request was sent. */
function mark(run: ProbeRun, point: StreamPoint, sent: number): void {
  run.stream.points[point] ??= (run.monotonic() - sent) / 1000;
}
