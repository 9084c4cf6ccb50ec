import { gzipSync } from "node:zlib";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  ConnectError,
  decodeEnvelopeStream,
  type Envelope,
  EnvelopeDecoder,
  EnvelopeError,
  encodeEndStream,
  encodeEnvelope,
  encodeJsonEnvelope,
  FLAG_COMPRESSED,
  FLAG_END_STREAM,
  parseEndStream,
  parseEnvelopeJson,
} from "../../../src/platform/data/envelope.js";

async function* chunksOf(...chunks: Uint8Array[]): AsyncGenerator<Uint8Array> {
  for (const chunk of chunks) yield chunk;
}

/** Splits a buffer at the given (unsorted, possibly repeated) cut points. */
function splitAt(bytes: Buffer, cuts: number[]): Buffer[] {
  const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  const parts: Buffer[] = [];
  let from = 0;
  for (const p of points) {
    parts.push(bytes.subarray(from, p));
    from = p;
  }
  parts.push(bytes.subarray(from));
  return parts;
}

function decodeAll(parts: Uint8Array[]): Envelope[] {
  const decoder = new EnvelopeDecoder();
  const out = parts.flatMap((p) => decoder.push(p));
  decoder.finish();
  return out;
}

async function collect(source: AsyncIterable<Uint8Array>): Promise<Envelope[]> {
  const out: Envelope[] = [];
  for await (const env of decodeEnvelopeStream(source)) out.push(env);
  return out;
}

function catchError(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  throw new Error("expected a throw");
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error("expected a rejection");
    },
    (err: unknown) => err,
  );
}

const jsonValue = fc.jsonValue({ maxDepth: 2 });
const message = fc.record({ value: jsonValue, compress: fc.boolean() });

describe("EnvelopeDecoder", () => {
  it("decodes the same frames however the stream is cut, down to 1-byte chunks", () => {
    fc.assert(
      fc.property(
        fc.array(message, { maxLength: 6 }),
        fc.boolean(),
        fc.array(fc.nat(), { maxLength: 20 }),
        (messages, compressEnd, cuts) => {
          const frames = messages.map((m) => encodeJsonEnvelope(m.value, { compress: m.compress }));
          frames.push(encodeEndStream(undefined, { k: ["v"] }, { compress: compressEnd }));
          const stream = Buffer.concat(frames);
          const whole = decodeAll([stream]);
          const bytewise = decodeAll([...stream].map((b) => Uint8Array.of(b)));
          const cut = decodeAll(splitAt(stream, cuts));
          expect(bytewise).toEqual(whole);
          expect(cut).toEqual(whole);
          expect(whole.map((e) => JSON.parse(e.payload.toString("utf8")))).toEqual([
            ...messages.map((m) => JSON.parse(JSON.stringify(m.value))),
            { metadata: { k: ["v"] } },
          ]);
          let offset = 0;
          whole.forEach((env, i) => {
            expect(env.offset).toBe(offset);
            offset += frames[i]!.length;
          });
        },
      ),
    );
  });

  it("completes a frame whose header arrives split inside its 5 bytes", () => {
    const frame = encodeJsonEnvelope({ a: 1 });
    const decoder = new EnvelopeDecoder();
    expect(decoder.push(frame.subarray(0, 2))).toEqual([]);
    expect(decoder.push(frame.subarray(2, 4))).toEqual([]);
    const [env] = decoder.push(frame.subarray(4));
    expect(env).toEqual({ flags: 0, payload: Buffer.from('{"a":1}'), offset: 0 });
    expect(decoder.bytesRead).toBe(frame.length);
  });

  it("gunzips payloads flagged 0x01 and keeps the flag", () => {
    const payload = Buffer.from('{"hello":"world"}');
    const [env] = decodeAll([encodeEnvelope(FLAG_COMPRESSED, gzipSync(payload))]);
    expect(env?.flags).toBe(FLAG_COMPRESSED);
    expect(env?.payload).toEqual(payload);
  });

  it("reassembles a 512 KiB frame pushed one byte at a time", () => {
    // Speed of this path is a benchmark concern; here only the result is specified.
    const payload = Buffer.alloc(512 * 1024, 7);
    const frame = encodeEnvelope(0, payload);
    const decoder = new EnvelopeDecoder();
    const out: Envelope[] = [];
    for (let i = 0; i < frame.length; i++) out.push(...decoder.push(frame.subarray(i, i + 1)));
    expect(out).toHaveLength(1);
    expect(out[0]?.payload.equals(payload)).toBe(true);
  });

  it("rejects a declared length above the limit from the 5-byte header alone", () => {
    const decoder = new EnvelopeDecoder();
    const err = catchError(() => decoder.push(Uint8Array.of(0, 0xff, 0xff, 0xff, 0xff)));
    expect(err).toBeInstanceOf(EnvelopeError);
    expect(err).toMatchObject({ code: "ERR_ENVELOPE_TOO_LARGE", offset: 0 });
    expect((err as Error).message).toContain("4294967295");
  });

  it("names the offset of an oversize frame that follows valid ones", () => {
    const first = encodeJsonEnvelope({ ok: true });
    const decoder = new EnvelopeDecoder({ maxMessageBytes: 16 });
    expect(decoder.push(first)).toHaveLength(1);
    const err = catchError(() => decoder.push(encodeEnvelope(0, Buffer.alloc(17))));
    expect(err).toMatchObject({ code: "ERR_ENVELOPE_TOO_LARGE", offset: first.length });
    expect(
      new EnvelopeDecoder({ maxMessageBytes: 17 }).push(encodeEnvelope(0, Buffer.alloc(17))),
    ).toHaveLength(1);
  });

  it("bounds a decompression bomb by maxDecompressedBytes", () => {
    const bomb = gzipSync(Buffer.alloc(8 * 1024 * 1024));
    expect(bomb.length).toBeLessThan(64 * 1024);
    const decoder = new EnvelopeDecoder({ maxDecompressedBytes: 1024 * 1024 });
    const err = catchError(() => decoder.push(encodeEnvelope(FLAG_COMPRESSED, bomb)));
    expect(err).toMatchObject({ code: "ERR_ENVELOPE_DECOMPRESS", offset: 0 });
    expect((err as Error).message).toContain("more than 1048576 bytes");
  });

  it("reports gzip that does not inflate", () => {
    const err = catchError(() =>
      new EnvelopeDecoder().push(encodeEnvelope(FLAG_COMPRESSED, Buffer.from("not gzip"))),
    );
    expect(err).toMatchObject({ code: "ERR_ENVELOPE_DECOMPRESS", offset: 0 });
  });

  it("rejects flag bits other than 0x01 and 0x02", () => {
    const err = catchError(() =>
      new EnvelopeDecoder().push(encodeEnvelope(0x80, Buffer.from("{}"))),
    );
    expect(err).toMatchObject({ code: "ERR_ENVELOPE_UNKNOWN_FLAGS", offset: 0 });
    expect((err as Error).message).toContain("0x80");
  });

  it("reports a stream that stops inside a payload with the frame offset and byte counts", () => {
    const first = encodeJsonEnvelope({ n: 1 });
    const second = encodeEnvelope(0, Buffer.alloc(100, 0x20));
    const decoder = new EnvelopeDecoder();
    decoder.push(Buffer.concat([first, second.subarray(0, 5 + 40)]));
    const err = catchError(() => decoder.finish());
    expect(err).toMatchObject({ code: "ERR_ENVELOPE_TRUNCATED", offset: first.length });
    expect((err as Error).message).toMatch(/100 bytes expected, 40 present/);
  });

  it("reports a stream that stops inside a header", () => {
    const first = encodeJsonEnvelope({ n: 1 });
    const decoder = new EnvelopeDecoder();
    decoder.push(Buffer.concat([first, Uint8Array.of(0, 0, 0)]));
    const err = catchError(() => decoder.finish());
    expect(err).toMatchObject({ code: "ERR_ENVELOPE_TRUNCATED", offset: first.length });
    expect((err as Error).message).toMatch(/5 bytes expected, 3 present/);
  });

  it("returns the frames before a fault and raises the fault on the next call", () => {
    const good = encodeJsonEnvelope({ n: 1 });
    const decoder = new EnvelopeDecoder();
    const out = decoder.push(Buffer.concat([good, encodeEnvelope(0x40, Buffer.alloc(0))]));
    expect(out).toHaveLength(1);
    expect(() => decoder.push(Buffer.alloc(0))).toThrow(/unknown flags/);
    expect(() => decoder.finish()).toThrow(/unknown flags/);
  });

  it("rejects bytes after the end-of-stream frame", () => {
    const end = encodeEndStream();
    const decoder = new EnvelopeDecoder();
    expect(decoder.push(end)).toHaveLength(1);
    expect(decoder.ended).toBe(true);
    const err = catchError(() => decoder.push(Uint8Array.of(0)));
    expect(err).toMatchObject({ code: "ERR_ENVELOPE_TRAILING_DATA", offset: end.length });
  });
});

describe("parseEndStream", () => {
  const frame = (payload: string): Envelope => ({
    flags: FLAG_END_STREAM,
    payload: Buffer.from(payload),
    offset: 9,
  });

  it("treats {} and an empty payload as success", () => {
    expect(parseEndStream(frame("{}"))).toEqual({ metadata: {} });
    expect(parseEndStream(frame(""))).toEqual({ metadata: {} });
  });

  it("reads the error and metadata, tolerating loose shapes", () => {
    const parsed = parseEndStream(
      frame('{"error":{"message":"boom"},"metadata":{"a":["1","2"],"b":"3","c":4}}'),
    );
    expect(parsed).toEqual({
      error: { code: "unknown", message: "boom" },
      metadata: { a: ["1", "2"], b: ["3"] },
    });
  });

  it("names the offset of a trailer that is not JSON", () => {
    expect(catchError(() => parseEndStream(frame("{oops")))).toMatchObject({
      code: "ERR_ENVELOPE_BAD_JSON",
      offset: 9,
    });
    expect(catchError(() => parseEnvelopeJson(frame("[")))).toMatchObject({
      code: "ERR_ENVELOPE_BAD_JSON",
      offset: 9,
    });
  });
});

describe("decodeEnvelopeStream", () => {
  it("yields message frames and returns the trailer", async () => {
    const body = Buffer.concat([
      encodeJsonEnvelope({ i: 1 }),
      encodeJsonEnvelope({ i: 2 }, { compress: true }),
      encodeEndStream(undefined, { "x-trace": ["abc"] }),
    ]);
    const frames = decodeEnvelopeStream(chunksOf(...splitAt(body, [3, 11, 20])));
    const seen: unknown[] = [];
    let step = await frames.next();
    for (let i = 0; !step.done && i < 10; i++) {
      seen.push(parseEnvelopeJson(step.value));
      step = await frames.next();
    }
    expect(seen).toEqual([{ i: 1 }, { i: 2 }]);
    expect(step).toEqual({ done: true, value: { metadata: { "x-trace": ["abc"] } } });
  });

  it("throws ConnectError carrying the trailer's code, message and metadata", async () => {
    const body = Buffer.concat([
      encodeJsonEnvelope({ i: 1 }),
      encodeEndStream(
        { code: "deadline_exceeded", message: "too slow" },
        { a: ["b"] },
        {
          compress: true,
        },
      ),
    ]);
    const seen: Envelope[] = [];
    const err = await rejection(
      (async () => {
        for await (const env of decodeEnvelopeStream(chunksOf(body))) seen.push(env);
      })(),
    );
    expect(seen).toHaveLength(1);
    expect(err).toBeInstanceOf(ConnectError);
    expect(err).toMatchObject({
      code: "ERR_CONNECT_END_STREAM",
      connectCode: "deadline_exceeded",
      connectMessage: "too slow",
      metadata: { a: ["b"] },
      offset: encodeJsonEnvelope({ i: 1 }).length,
    });
  });

  it("fails a stream that ends cleanly between frames but without an end-of-stream frame", async () => {
    const body = Buffer.concat([encodeJsonEnvelope({ i: 1 }), encodeJsonEnvelope({ i: 2 })]);
    const err = await rejection(collect(chunksOf(body)));
    expect(err).toMatchObject({ code: "ERR_ENVELOPE_TRUNCATED", offset: body.length });
    expect((err as Error).message).toContain("without an end-of-stream frame");
  });

  it("fails a stream cut inside a frame, naming that frame's offset", async () => {
    const first = encodeJsonEnvelope({ i: 1 });
    const body = Buffer.concat([first, encodeJsonEnvelope({ i: 2 })]);
    const err = await rejection(collect(chunksOf(body.subarray(0, body.length - 2))));
    expect(err).toMatchObject({ code: "ERR_ENVELOPE_TRUNCATED", offset: first.length });
  });

  it("fails when data follows a successful end-of-stream frame", async () => {
    const end = encodeEndStream();
    const err = await rejection(collect(chunksOf(end, encodeJsonEnvelope({ late: true }))));
    expect(err).toMatchObject({ code: "ERR_ENVELOPE_TRAILING_DATA", offset: end.length });
  });

  it("still yields the frames that precede a fault in the same chunk", async () => {
    const first = encodeJsonEnvelope({ i: 1 });
    const body = Buffer.concat([first, encodeEnvelope(0x10, Buffer.alloc(0))]);
    const seen: Envelope[] = [];
    const err = await rejection(
      (async () => {
        for await (const env of decodeEnvelopeStream(chunksOf(body))) seen.push(env);
      })(),
    );
    expect(seen).toHaveLength(1);
    expect(err).toMatchObject({ code: "ERR_ENVELOPE_UNKNOWN_FLAGS", offset: first.length });
  });
});

describe("encodeEndStream", () => {
  it("writes {} for success and the error object otherwise, flagged 0x02", () => {
    const ok = encodeEndStream();
    expect(ok[0]).toBe(FLAG_END_STREAM);
    expect(ok.subarray(5).toString()).toBe("{}");
    const [env] = decodeAll([
      encodeEndStream({ code: "internal", message: "x" }, undefined, { compress: true }),
    ]);
    expect(env?.flags).toBe(FLAG_END_STREAM | FLAG_COMPRESSED);
    expect(parseEndStream(env!)).toEqual({
      error: { code: "internal", message: "x" },
      metadata: {},
    });
  });
});
