// process.Process/Start in protobuf canonical JSON: the request we send and the events we read.

import type { ProcessEvent } from "../types.js";
import {
  type DecoderLimits,
  decodeEnvelopeStream,
  type EndStream,
  EnvelopeError,
  parseEnvelopeJson,
} from "./envelope.js";

const EVENT_KINDS = ["start", "data", "end", "keepalive"] as const;
const UINT32_MAX = 0xffff_ffff;
const INT32_MIN = -0x8000_0000;
const INT32_MAX = 0x7fff_ffff;
const DEFAULT_MAX_OUTPUT_BYTES = 1024 * 1024;
const LOGIN_SHELL = "/bin/bash";

/** The StartRequest message in protobuf JSON. */
export interface StartRequestJson {
  process: { cmd: string; args: string[]; envs: Record<string, string>; cwd?: string };
  stdin?: boolean;
}

/** What to run: an executable and its arguments, environment and working directory. */
export interface StartInput {
  cmd: string;
  args?: string[];
  envs?: Record<string, string>;
  cwd?: string;
  stdin?: boolean;
}

/** Builds the protobuf-JSON StartRequest body (send it as one envelope with flags 0). */
export function buildStartRequest(input: StartInput): StartRequestJson {
  const process: StartRequestJson["process"] = {
    cmd: input.cmd,
    args: [...(input.args ?? [])],
    envs: { ...(input.envs ?? {}) },
  };
  if (input.cwd !== undefined) process.cwd = input.cwd;
  const request: StartRequestJson = { process };
  if (input.stdin !== undefined) request.stdin = input.stdin;
  return request;
}

/** Wraps a shell command the way the client library does: a login bash, so env and pipes work. */
export function wrapCommand(cmd: string): { cmd: string; args: string[] } {
  return { cmd: LOGIN_SHELL, args: ["-l", "-c", cmd] };
}

/**
 * Reads one StartResponse, wrapped (`{"event":{...}}`) or bare (`{...}`), in protobuf canonical
 * JSON: omitted fields are zero, integers may be strings, bytes are base64 (standard or URL-safe).
 */
export function parseProcessEvent(json: unknown, offset: number): ProcessEvent {
  if (!isObject(json)) fail(offset, `event at byte offset ${offset} is not a JSON object`);
  const wrapped = isObject(json.event);
  const event = wrapped ? (json.event as Record<string, unknown>) : json;
  const prefix = wrapped ? "event." : "";
  const kinds = EVENT_KINDS.filter((k) => event[k] !== undefined && event[k] !== null);
  if (kinds.length !== 1) {
    const seen = Object.keys(event).join(", ") || "none";
    const what = kinds.length === 0 ? "no known event kind" : "more than one event kind";
    fail(offset, `process event at byte offset ${offset} has ${what} (keys seen: ${seen})`);
  }
  const kind = kinds[0]!;
  const path = `${prefix}${kind}`;
  const body = event[kind];
  if (!isObject(body)) fail(offset, `${path} at byte offset ${offset} is not an object`);
  const field = (name: string): Field => ({ path: `${path}.${name}`, offset });
  switch (kind) {
    case "start":
      return { type: "start", pid: readInt(body.pid, 0, UINT32_MAX, field("pid")) };
    case "data": {
      const out: Extract<ProcessEvent, { type: "data" }> = { type: "data" };
      for (const stream of ["stdout", "stderr", "pty"] as const) {
        const value = body[stream];
        if (value !== undefined && value !== null) out[stream] = readBytes(value, field(stream));
      }
      return out;
    }
    case "end":
      return readEnd(body, field);
    case "keepalive":
      return { type: "keepalive" };
  }
}

/** Decodes a Start response body into process events; the end-of-stream trailer is returned. */
export async function* decodeProcessEvents(
  source: AsyncIterable<Uint8Array>,
  limits?: DecoderLimits,
): AsyncGenerator<ProcessEvent, EndStream, undefined> {
  const frames = decodeEnvelopeStream(source, limits);
  // Bounded by the source: each step consumes at least one frame or ends the stream.
  for (;;) {
    const step = await frames.next();
    if (step.done) return step.value;
    yield parseProcessEvent(parseEnvelopeJson(step.value), step.value.offset);
  }
}

/** True for an end event that reports success: exit code 0 and no error text. */
export function isCleanExit(event: Extract<ProcessEvent, { type: "end" }>): boolean {
  return event.exitCode === 0 && event.error === undefined;
}

/**
 * Accumulates output bytes and decodes UTF-8 once at the end, since chunks may split a character.
 * PTY output is the terminal's merged stream and is counted as stdout.
 */
export class OutputCollector {
  private readonly stdout: Buffer[] = [];
  private readonly stderr: Buffer[] = [];
  private stdoutBytes = 0;
  private stderrBytes = 0;
  private clipped = false;

  /** Keeps at most maxBytes of each stream; the rest is dropped and reported as truncated. */
  constructor(private readonly maxBytes = DEFAULT_MAX_OUTPUT_BYTES) {}

  /** Records the output of a data event; other events are ignored. */
  add(event: ProcessEvent): void {
    if (event.type !== "data") return;
    if (event.stdout) this.stdoutBytes = this.keep(this.stdout, this.stdoutBytes, event.stdout);
    if (event.pty) this.stdoutBytes = this.keep(this.stdout, this.stdoutBytes, event.pty);
    if (event.stderr) this.stderrBytes = this.keep(this.stderr, this.stderrBytes, event.stderr);
  }

  /** The collected output as text. */
  result(): { stdout: string; stderr: string; truncated: boolean } {
    return {
      stdout: Buffer.concat(this.stdout).toString("utf8"),
      stderr: Buffer.concat(this.stderr).toString("utf8"),
      truncated: this.clipped,
    };
  }

  private keep(into: Buffer[], held: number, bytes: Buffer): number {
    const room = this.maxBytes - held;
    if (bytes.length > room) this.clipped = true;
    if (room <= 0) return held;
    const kept = bytes.length > room ? bytes.subarray(0, room) : bytes;
    into.push(kept);
    return held + kept.length;
  }
}

interface Field {
  path: string;
  offset: number;
}

function readEnd(
  body: Record<string, unknown>,
  field: (name: string) => Field,
): Extract<ProcessEvent, { type: "end" }> {
  // Protobuf JSON parsers accept the proto field name as well as the lowerCamelCase one.
  const rawCode = body.exitCode ?? body.exit_code;
  const exitName = body.exitCode !== undefined ? "exitCode" : "exit_code";
  const out: Extract<ProcessEvent, { type: "end" }> = {
    type: "end",
    exitCode: readInt(rawCode, INT32_MIN, INT32_MAX, field(exitName)),
    exited: readBool(body.exited, field("exited")),
  };
  const status = readString(body.status, field("status"));
  if (status) out.status = status;
  if (body.error !== undefined && body.error !== null) {
    out.error = readString(body.error, field("error"));
  }
  return out;
}

function readInt(value: unknown, min: number, max: number, at: Field): number {
  if (value === undefined || value === null) return 0;
  let n: number | undefined;
  if (typeof value === "number") n = value;
  else if (typeof value === "string" && /^-?\d+$/.test(value)) n = Number(value);
  if (n === undefined || !Number.isInteger(n) || n < min || n > max) {
    fail(
      at.offset,
      `${at.path} at byte offset ${at.offset} is not an integer in [${min}, ${max}]: ${show(value)}`,
    );
  }
  return n;
}

function readBool(value: unknown, at: Field): boolean {
  if (value === undefined || value === null) return false;
  if (typeof value !== "boolean") {
    fail(at.offset, `${at.path} at byte offset ${at.offset} is not a boolean: ${show(value)}`);
  }
  return value;
}

function readString(value: unknown, at: Field): string {
  if (value === undefined || value === null) return "";
  if (typeof value !== "string") {
    fail(at.offset, `${at.path} at byte offset ${at.offset} is not a string: ${show(value)}`);
  }
  return value;
}

function readBytes(value: unknown, at: Field): Buffer {
  // Buffer.from(..., "base64") skips junk silently, so the alphabet and length are checked first.
  const body = typeof value === "string" ? value.replace(/={1,2}$/, "") : undefined;
  if (body === undefined || !/^[A-Za-z0-9+/_-]*$/.test(body) || body.length % 4 === 1) {
    fail(at.offset, `${at.path} at byte offset ${at.offset} is not base64: ${show(value)}`);
  }
  return Buffer.from(body, "base64");
}

function show(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 40 ? `${text.slice(0, 40)}…` : text;
}

function fail(offset: number, message: string): never {
  throw new EnvelopeError("ERR_PROCESS_EVENT", message, offset);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
