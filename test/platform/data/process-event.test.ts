import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { encodeEndStream, encodeJsonEnvelope } from "../../../src/platform/data/envelope.js";
import {
  buildStartRequest,
  decodeProcessEvents,
  isCleanExit,
  OutputCollector,
  parseProcessEvent,
  wrapCommand,
} from "../../../src/platform/data/process-event.js";
import type { ProcessEvent } from "../../../src/platform/types.js";

async function* chunksOf(...chunks: Uint8Array[]): AsyncGenerator<Uint8Array> {
  for (const chunk of chunks) yield chunk;
}

function catchError(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  throw new Error("expected a throw");
}

async function readAll(source: AsyncIterable<Uint8Array>): Promise<ProcessEvent[]> {
  const out: ProcessEvent[] = [];
  for await (const event of decodeProcessEvents(source)) out.push(event);
  return out;
}

describe("parseProcessEvent", () => {
  it("accepts the event wrapped in StartResponse and bare", () => {
    expect(parseProcessEvent({ event: { start: { pid: 42 } } }, 0)).toEqual({
      type: "start",
      pid: 42,
    });
    expect(parseProcessEvent({ start: { pid: 42 } }, 0)).toEqual({ type: "start", pid: 42 });
  });

  it("reads integers sent as strings", () => {
    expect(parseProcessEvent({ start: { pid: "4294967295" } }, 0)).toEqual({
      type: "start",
      pid: 4294967295,
    });
    expect(parseProcessEvent({ end: { exitCode: "-9", status: "signal: killed" } }, 0)).toEqual({
      type: "end",
      exitCode: -9,
      exited: false,
      status: "signal: killed",
    });
  });

  it("reads an end without exitCode as a clean exit with code 0", () => {
    const event = parseProcessEvent({ event: { end: { exited: true } } }, 0);
    expect(event).toEqual({ type: "end", exitCode: 0, exited: true });
    expect(event.type === "end" && isCleanExit(event)).toBe(true);
    expect(parseProcessEvent({ end: {} }, 0)).toEqual({ type: "end", exitCode: 0, exited: false });
  });

  it("keeps an error text, which makes the exit unclean", () => {
    const event = parseProcessEvent({ end: { exit_code: 0, error: "exec failed" } }, 0);
    expect(event).toEqual({ type: "end", exitCode: 0, exited: false, error: "exec failed" });
    expect(event.type === "end" && isCleanExit(event)).toBe(false);
  });

  it("decodes standard, URL-safe and unpadded base64 output", () => {
    expect(parseProcessEvent({ data: { stdout: "aGk=" } }, 0)).toEqual({
      type: "data",
      stdout: Buffer.from("hi"),
    });
    expect(parseProcessEvent({ data: { stderr: "-_8" } }, 0)).toEqual({
      type: "data",
      stderr: Buffer.from([0xfb, 0xff]),
    });
    expect(parseProcessEvent({ event: { data: { pty: "+/8=" } } }, 0)).toEqual({
      type: "data",
      pty: Buffer.from([0xfb, 0xff]),
    });
  });

  it("reads a keepalive", () => {
    expect(parseProcessEvent({ event: { keepalive: {} } }, 0)).toEqual({ type: "keepalive" });
  });

  it("rejects an unknown event kind, naming the offset and the keys seen", () => {
    const err = catchError(() => parseProcessEvent({ event: { restart: {} } }, 123));
    expect(err).toMatchObject({ code: "ERR_PROCESS_EVENT", offset: 123 });
    expect((err as Error).message).toMatch(/byte offset 123.*keys seen: restart/);
    expect(catchError(() => parseProcessEvent({ start: {}, end: {} }, 0))).toMatchObject({
      code: "ERR_PROCESS_EVENT",
    });
    expect(catchError(() => parseProcessEvent([1], 0))).toMatchObject({
      code: "ERR_PROCESS_EVENT",
    });
  });

  it("names the path of a malformed field", () => {
    const cases: [unknown, string][] = [
      [{ event: { end: { exitCode: "abc" } } }, "event.end.exitCode"],
      [{ end: { exitCode: 2 ** 31 } }, "end.exitCode"],
      [{ event: { end: { exited: "yes" } } }, "event.end.exited"],
      [{ event: { start: { pid: -1 } } }, "event.start.pid"],
      [{ event: { data: { stdout: "a b" } } }, "event.data.stdout"],
      [{ data: { stderr: "abcde" } }, "data.stderr"],
      [{ event: { start: 5 } }, "event.start"],
    ];
    for (const [json, path] of cases) {
      const err = catchError(() => parseProcessEvent(json, 7));
      expect(err, path).toMatchObject({ code: "ERR_PROCESS_EVENT", offset: 7 });
      expect((err as Error).message, path).toContain(`${path} `);
    }
  });
});

describe("OutputCollector", () => {
  it("decodes UTF-8 split across chunks at any byte", () => {
    fc.assert(
      fc.property(fc.string({ unit: "grapheme" }), fc.array(fc.nat()), (text, cuts) => {
        const bytes = Buffer.from(text, "utf8");
        const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
        const collector = new OutputCollector();
        let from = 0;
        for (const p of [...points, bytes.length]) {
          collector.add({ type: "data", stdout: bytes.subarray(from, p) });
          collector.add({ type: "data", stderr: bytes.subarray(from, p) });
          from = p;
        }
        expect(collector.result()).toEqual({ stdout: text, stderr: text, truncated: false });
      }),
    );
  });

  it("keeps at most maxBytes per stream and says so", () => {
    const collector = new OutputCollector(4);
    collector.add({ type: "data", stdout: Buffer.from("abc") });
    collector.add({ type: "data", stdout: Buffer.from("def") });
    collector.add({ type: "data", stderr: Buffer.from("xy") });
    collector.add({ type: "keepalive" });
    expect(collector.result()).toEqual({ stdout: "abcd", stderr: "xy", truncated: true });
  });
});

describe("decodeProcessEvents", () => {
  it("reads the same events and text however the envelope stream is cut", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.string({ unit: "grapheme", minLength: 1 }),
        fc.array(fc.nat(), { maxLength: 8 }),
        fc.array(fc.nat(), { maxLength: 30 }),
        fc.boolean(),
        async (text, outputCuts, streamCuts, compress) => {
          const out = Buffer.from(text, "utf8");
          const points = [...new Set(outputCuts.map((c) => c % out.length))].sort((a, b) => a - b);
          const pieces: Buffer[] = [];
          let from = 0;
          for (const p of [...points, out.length]) {
            pieces.push(out.subarray(from, p));
            from = p;
          }
          const body = Buffer.concat([
            encodeJsonEnvelope({ event: { start: { pid: "17" } } }, { compress }),
            ...pieces.map((p) =>
              encodeJsonEnvelope(
                { event: { data: { stdout: p.toString("base64") } } },
                { compress },
              ),
            ),
            encodeJsonEnvelope({ event: { keepalive: {} } }, { compress }),
            encodeJsonEnvelope({ event: { end: { exited: true, status: "exit status 0" } } }),
            encodeEndStream(),
          ]);
          const cuts = [...new Set(streamCuts.map((c) => c % (body.length + 1)))].sort(
            (a, b) => a - b,
          );
          const chunks: Buffer[] = [];
          let at = 0;
          for (const c of [...cuts, body.length]) {
            chunks.push(body.subarray(at, c));
            at = c;
          }
          const events = await readAll(chunksOf(...chunks));
          const collector = new OutputCollector();
          for (const e of events) collector.add(e);
          expect(collector.result().stdout).toBe(text);
          expect(events[0]).toEqual({ type: "start", pid: 17 });
          expect(events.at(-1)).toEqual({
            type: "end",
            exitCode: 0,
            exited: true,
            status: "exit status 0",
          });
        },
      ),
      { numRuns: 50 },
    );
  });

  it("fails a stream that has an end event but no end-of-stream frame", async () => {
    const body = encodeJsonEnvelope({ event: { end: {} } });
    const seen: ProcessEvent[] = [];
    const err = await (async () => {
      for await (const e of decodeProcessEvents(chunksOf(body))) seen.push(e);
    })().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(seen).toEqual([{ type: "end", exitCode: 0, exited: false }]);
    expect(err).toMatchObject({ code: "ERR_ENVELOPE_TRUNCATED", offset: body.length });
  });

  it("names the offset of an event that is not JSON", async () => {
    const first = encodeJsonEnvelope({ start: { pid: 1 } });
    const bad = Buffer.from([0, 0, 0, 0, 2, 0x7b, 0x7b]);
    const err = await readAll(chunksOf(first, bad, encodeEndStream())).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toMatchObject({ code: "ERR_ENVELOPE_BAD_JSON", offset: first.length });
  });
});

describe("buildStartRequest", () => {
  it("builds the protobuf-JSON StartRequest of a wrapped shell command", () => {
    expect(buildStartRequest({ ...wrapCommand("echo hi | tr a-z A-Z"), envs: { A: "1" } })).toEqual(
      {
        process: { cmd: "/bin/bash", args: ["-l", "-c", "echo hi | tr a-z A-Z"], envs: { A: "1" } },
      },
    );
  });

  it("adds cwd and stdin only when given", () => {
    expect(buildStartRequest({ cmd: "ls", cwd: "/tmp", stdin: false })).toEqual({
      process: { cmd: "ls", args: [], envs: {}, cwd: "/tmp" },
      stdin: false,
    });
  });
});
