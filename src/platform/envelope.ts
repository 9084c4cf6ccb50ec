// Connect streaming envelope codec: 1 flags byte, 4-byte big-endian length, payload.
import { gzipSync } from "node:zlib";

/** Flag bit: the payload is compressed (gzip). */
export const FLAG_COMPRESSED = 0x01;
/** Flag bit: end-of-stream message (JSON trailer with optional error and metadata). */
export const FLAG_END_STREAM = 0x02;

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
