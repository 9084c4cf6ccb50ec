// Connect streaming envelope codec: 1 flags byte, 4-byte big-endian length, payload.
import { gunzipSync, gzipSync } from "node:zlib";
import { ExporterError } from "../../util/errors.js";

/** Flag bit: the payload is compressed (gzip). */
export const FLAG_COMPRESSED = 0x01;
/** Flag bit: end-of-stream message (JSON trailer with optional error and metadata). */
export const FLAG_END_STREAM = 0x02;

const HEADER_BYTES = 5;
const KNOWN_FLAGS = FLAG_COMPRESSED | FLAG_END_STREAM;
const DEFAULT_LIMIT_BYTES = 4 * 1024 * 1024;
// Dropping consumed chunks from the front of the queue is batched so it stays amortised O(1).
const COMPACT_AFTER_CHUNKS = 1024;
const EMPTY = Buffer.alloc(0);

/** Bounds on what one frame may cost; both default to 4 MiB. */
export interface DecoderLimits {
  maxMessageBytes?: number;
  maxDecompressedBytes?: number;
}

/** One decoded frame. */
export interface Envelope {
  flags: number;
  /** Payload, already decompressed when the frame was flagged 0x01. */
  payload: Buffer;
  /** Stream byte offset of the frame's flags byte. */
  offset: number;
}

/** Parsed end-of-stream trailer. */
export interface EndStream {
  error?: { code: string; message: string };
  metadata: Record<string, string[]>;
}

export type EnvelopeErrorCode =
  | "ERR_ENVELOPE_TOO_LARGE"
  | "ERR_ENVELOPE_TRUNCATED"
  | "ERR_ENVELOPE_DECOMPRESS"
  | "ERR_ENVELOPE_BAD_JSON"
  | "ERR_ENVELOPE_UNKNOWN_FLAGS"
  | "ERR_ENVELOPE_TRAILING_DATA"
  | "ERR_PROCESS_EVENT";

/** A malformed or over-limit envelope stream; `offset` is the stream byte offset at fault. */
export class EnvelopeError extends ExporterError {
  readonly offset: number;
  constructor(
    code: EnvelopeErrorCode,
    message: string,
    offset: number,
    options?: { cause?: unknown },
  ) {
    super(code, message, options);
    this.offset = offset;
  }
}

/** The server ended the stream with a Connect error in its end-of-stream frame. */
export class ConnectError extends ExporterError {
  readonly connectCode: string;
  readonly connectMessage: string;
  readonly metadata: Record<string, string[]>;
  /** Stream byte offset of the end-of-stream frame. */
  readonly offset: number;
  constructor(
    connectCode: string,
    connectMessage: string,
    metadata: Record<string, string[]>,
    offset: number,
  ) {
    super(
      "ERR_CONNECT_END_STREAM",
      `stream ended with Connect error "${connectCode}" (end-of-stream frame at byte offset ${offset})${connectMessage ? `: ${connectMessage}` : ""}`,
    );
    this.connectCode = connectCode;
    this.connectMessage = connectMessage;
    this.metadata = metadata;
    this.offset = offset;
  }
}

/** Frames one payload with the given flags. */
export function encodeEnvelope(flags: number, payload: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(5 + payload.byteLength);
  out.writeUInt8(flags, 0);
  out.writeUInt32BE(payload.byteLength, 1);
  out.set(payload, 5);
  return out;
}

/** Frames a JSON value, gzip-compressing it (and setting 0x01) when asked. */
export function encodeJsonEnvelope(
  value: unknown,
  options: { compress?: boolean; endStream?: boolean } = {},
): Buffer {
  let payload: Uint8Array = Buffer.from(JSON.stringify(value), "utf8");
  let flags = options.endStream ? FLAG_END_STREAM : 0;
  if (options.compress) {
    payload = gzipSync(payload);
    flags |= FLAG_COMPRESSED;
  }
  return encodeEnvelope(flags, payload);
}

/** Frames an end-of-stream trailer: `{}` on success, else `{"error":{code,message}}`, plus metadata. */
export function encodeEndStream(
  error?: { code: string; message: string },
  metadata?: Record<string, string[]>,
  options: { compress?: boolean } = {},
): Buffer {
  const trailer: Record<string, unknown> = {};
  if (error) trailer.error = { code: error.code, message: error.message };
  if (metadata) trailer.metadata = metadata;
  return encodeJsonEnvelope(trailer, { compress: options.compress ?? false, endStream: true });
}

/** Incremental decoder: feed chunks split anywhere, get whole frames back. */
export class EnvelopeDecoder {
  private readonly maxMessageBytes: number;
  private readonly maxDecompressedBytes: number;
  // Pending chunks are kept as a queue (read from `first`/`head`) so no push re-copies the backlog.
  private chunks: Buffer[] = [];
  private first = 0;
  private head = 0;
  private buffered = 0;
  /** Stream offset of the next byte not yet consumed into a frame. */
  private consumed = 0;
  private header: { flags: number; length: number; offset: number } | undefined;
  private failure: EnvelopeError | undefined;
  private read = 0;
  private endSeen = false;

  constructor(limits: DecoderLimits = {}) {
    this.maxMessageBytes = positiveLimit(limits.maxMessageBytes, "maxMessageBytes");
    this.maxDecompressedBytes = positiveLimit(limits.maxDecompressedBytes, "maxDecompressedBytes");
  }

  /** Total bytes pushed so far. */
  get bytesRead(): number {
    return this.read;
  }

  /** True once an end-of-stream frame (flag 0x02) has been decoded. */
  get ended(): boolean {
    return this.endSeen;
  }

  /**
   * Adds a chunk and returns the frames it completed. A fault is thrown only after every frame
   * before it has been returned: when this push already completed frames, the error is thrown by
   * the next push() or finish(). Pushed chunks are referenced, not copied, until consumed.
   */
  push(chunk: Uint8Array): Envelope[] {
    if (this.failure) throw this.failure;
    if (chunk.byteLength > 0) {
      this.chunks.push(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
      this.buffered += chunk.byteLength;
      this.read += chunk.byteLength;
    }
    const out: Envelope[] = [];
    try {
      this.drain(out);
    } catch (err) {
      if (!(err instanceof EnvelopeError)) throw err;
      this.failure = err;
      if (out.length === 0) throw err;
    }
    return out;
  }

  /** Declares the stream over; throws ERR_ENVELOPE_TRUNCATED if it stopped inside a frame. */
  finish(): void {
    if (this.failure) throw this.failure;
    if (this.header) {
      const { length, offset } = this.header;
      this.failure = new EnvelopeError(
        "ERR_ENVELOPE_TRUNCATED",
        `stream ended inside the payload of the frame at byte offset ${offset}: ${length} bytes expected, ${this.buffered} present`,
        offset,
      );
    } else if (this.buffered > 0) {
      this.failure = new EnvelopeError(
        "ERR_ENVELOPE_TRUNCATED",
        `stream ended inside the header of the frame at byte offset ${this.consumed}: ${HEADER_BYTES} bytes expected, ${this.buffered} present`,
        this.consumed,
      );
    }
    if (this.failure) throw this.failure;
  }

  private drain(out: Envelope[]): void {
    // Every pass consumes a header or a payload, or leaves; the buffered byte count bounds it.
    for (;;) {
      if (this.endSeen && this.buffered > 0) {
        throw new EnvelopeError(
          "ERR_ENVELOPE_TRAILING_DATA",
          `${this.buffered} bytes follow the end-of-stream frame, starting at byte offset ${this.consumed}`,
          this.consumed,
        );
      }
      if (!this.header) {
        if (this.buffered < HEADER_BYTES) return;
        this.header = this.readHeader();
      }
      const { flags, length, offset } = this.header;
      if (this.buffered < length) return;
      const raw = this.take(length);
      this.header = undefined;
      const payload = flags & FLAG_COMPRESSED ? this.gunzip(raw, offset) : raw;
      out.push({ flags, payload, offset });
      if (flags & FLAG_END_STREAM) this.endSeen = true;
    }
  }

  private readHeader(): { flags: number; length: number; offset: number } {
    const offset = this.consumed;
    const bytes = this.take(HEADER_BYTES);
    const flags = bytes.readUInt8(0);
    const length = bytes.readUInt32BE(1);
    if (flags & ~KNOWN_FLAGS) {
      throw new EnvelopeError(
        "ERR_ENVELOPE_UNKNOWN_FLAGS",
        `frame at byte offset ${offset} has unknown flags 0x${flags.toString(16).padStart(2, "0")}`,
        offset,
      );
    }
    // Checked from the header alone, so a hostile length never makes us buffer or allocate.
    if (length > this.maxMessageBytes) {
      throw new EnvelopeError(
        "ERR_ENVELOPE_TOO_LARGE",
        `frame at byte offset ${offset} declares ${length} payload bytes, above the limit of ${this.maxMessageBytes}`,
        offset,
      );
    }
    return { flags, length, offset };
  }

  private gunzip(raw: Buffer, offset: number): Buffer {
    if (raw.length === 0) return raw;
    try {
      return gunzipSync(raw, { maxOutputLength: this.maxDecompressedBytes });
    } catch (err) {
      const tooBig = (err as { code?: unknown }).code === "ERR_BUFFER_TOO_LARGE";
      throw new EnvelopeError(
        "ERR_ENVELOPE_DECOMPRESS",
        tooBig
          ? `frame at byte offset ${offset} decompresses to more than ${this.maxDecompressedBytes} bytes`
          : `frame at byte offset ${offset} is not valid gzip: ${(err as Error).message}`,
        offset,
        { cause: err },
      );
    }
  }

  /** Removes exactly n buffered bytes (n <= buffered) into a fresh buffer. */
  private take(n: number): Buffer {
    const out = Buffer.allocUnsafe(n);
    let filled = 0;
    while (filled < n) {
      const chunk = this.chunks[this.first]!;
      const count = Math.min(chunk.length - this.head, n - filled);
      chunk.copy(out, filled, this.head, this.head + count);
      filled += count;
      this.head += count;
      if (this.head === chunk.length) {
        this.chunks[this.first] = EMPTY;
        this.first += 1;
        this.head = 0;
      }
    }
    if (this.first === this.chunks.length) {
      this.chunks = [];
      this.first = 0;
    } else if (this.first >= COMPACT_AFTER_CHUNKS && this.first * 2 >= this.chunks.length) {
      this.chunks = this.chunks.slice(this.first);
      this.first = 0;
    }
    this.buffered -= n;
    this.consumed += n;
    return out;
  }
}

/** Parses a frame's payload as JSON; throws ERR_ENVELOPE_BAD_JSON naming the frame's offset. */
export function parseEnvelopeJson(env: Envelope): unknown {
  try {
    return JSON.parse(env.payload.toString("utf8"));
  } catch (err) {
    throw new EnvelopeError(
      "ERR_ENVELOPE_BAD_JSON",
      `payload of the frame at byte offset ${env.offset} (${env.payload.length} bytes) is not JSON`,
      env.offset,
      { cause: err },
    );
  }
}

/** Reads an end-of-stream trailer tolerantly: an empty payload or `{}` is success. */
export function parseEndStream(env: Envelope): EndStream {
  if (env.payload.length === 0) return { metadata: {} };
  const json = parseEnvelopeJson(env);
  if (!isObject(json)) {
    throw new EnvelopeError(
      "ERR_ENVELOPE_BAD_JSON",
      `end-of-stream payload at byte offset ${env.offset} is not a JSON object`,
      env.offset,
    );
  }
  const result: EndStream = { metadata: parseMetadata(json.metadata) };
  const error = json.error;
  if (isObject(error)) {
    result.error = {
      code: typeof error.code === "string" && error.code !== "" ? error.code : "unknown",
      message: typeof error.message === "string" ? error.message : "",
    };
  } else if (error !== undefined && error !== null) {
    result.error = { code: "unknown", message: String(error) };
  }
  return result;
}

/**
 * Decodes a response body into its message frames (the end-of-stream frame is not yielded, its
 * trailer is the return value). Throws ConnectError for an error trailer, and
 * ERR_ENVELOPE_TRUNCATED when the body ends without one.
 */
export async function* decodeEnvelopeStream(
  source: AsyncIterable<Uint8Array>,
  limits?: DecoderLimits,
): AsyncGenerator<Envelope, EndStream, undefined> {
  const decoder = new EnvelopeDecoder(limits);
  let trailer: EndStream | undefined;
  for await (const chunk of source) {
    for (const env of decoder.push(chunk)) {
      if (!(env.flags & FLAG_END_STREAM)) {
        yield env;
        continue;
      }
      trailer = parseEndStream(env);
      if (trailer.error) {
        throw new ConnectError(
          trailer.error.code,
          trailer.error.message,
          trailer.metadata,
          env.offset,
        );
      }
    }
  }
  decoder.finish();
  if (!trailer) {
    throw new EnvelopeError(
      "ERR_ENVELOPE_TRUNCATED",
      `stream ended at byte offset ${decoder.bytesRead} without an end-of-stream frame`,
      decoder.bytesRead,
    );
  }
  return trailer;
}

function parseMetadata(raw: unknown): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  if (!isObject(raw)) return out;
  for (const [key, value] of Object.entries(raw)) {
    // A "__proto__" key from JSON.parse would re-prototype `out` if assigned.
    if (key === "__proto__") continue;
    if (typeof value === "string") out[key] = [value];
    else if (Array.isArray(value))
      out[key] = value.filter((v): v is string => typeof v === "string");
  }
  return out;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function positiveLimit(value: number | undefined, name: string): number {
  if (value === undefined) return DEFAULT_LIMIT_BYTES;
  if (!Number.isSafeInteger(value) || value <= 0) {
    throw new RangeError(`${name} must be a positive integer, got ${value}`);
  }
  return value;
}
