// Test helpers: a hand-written envelope reader (independent of src/platform) and request builders.
import { gunzipSync } from "node:zlib";
import { request } from "undici";
import type { Simulator } from "../../src/simulator/index.js";

export const PREFIX = "/sandboxapi/v1";

/** One decoded frame of a Connect stream. */
export interface Frame {
  flags: number;
  json: unknown;
}

/** Splits a whole response body into frames; throws on a partial frame. */
export function parseFrames(body: Buffer): Frame[] {
  const frames: Frame[] = [];
  let off = 0;
  for (let guard = 0; off < body.byteLength && guard < 10_000; guard++) {
    if (off + 5 > body.byteLength) throw new Error(`partial header at ${off}`);
    const flags = body.readUInt8(off);
    const len = body.readUInt32BE(off + 1);
    if (off + 5 + len > body.byteLength) throw new Error(`partial payload at ${off}`);
    let payload = body.subarray(off + 5, off + 5 + len);
    if (flags & 0x01) payload = gunzipSync(payload);
    frames.push({ flags, json: JSON.parse(payload.toString("utf8")) });
    off += 5 + len;
  }
  return frames;
}

/** Frames one JSON request message (flags 0). */
export function requestEnvelope(value: unknown): Buffer {
  const payload = Buffer.from(JSON.stringify(value));
  const header = Buffer.alloc(5);
  header.writeUInt32BE(payload.byteLength, 1);
  return Buffer.concat([header, payload]);
}

/** A JSON GET against the management API. */
export async function getJson(sim: Simulator, path: string, headers: Record<string, string> = {}) {
  const res = await request(`${sim.apiUrl}${PREFIX}${path}`, { headers });
  const text = await res.body.text();
  return { status: res.statusCode, headers: res.headers, text, json: safeJson(text) };
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** Creates a sandbox over the control channel; returns the 201 body. */
export async function createSandbox(sim: Simulator, templateID = "base") {
  const res = await request(`${sim.apiUrl}/sandboxes`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ templateID }),
  });
  if (res.statusCode !== 201) throw new Error(`create answered ${res.statusCode}`);
  return (await res.body.json()) as { sandboxID: string; envdAccessToken: string; domain: string };
}

/** Runs `bash -l -c cmd` through process.Process/Start and returns status, headers and frames. */
export async function runCommand(
  sim: Simulator,
  sandboxId: string,
  cmd: string,
  headers: Record<string, string> = {},
) {
  const token = sim.state.sandboxes.get(sandboxId)?.accessToken;
  const res = await request(`${sim.dataUrl}/process.Process/Start`, {
    method: "POST",
    headers: {
      host: sim.sandboxHost(sandboxId),
      "content-type": "application/connect+json",
      "connect-protocol-version": "1",
      ...(token && { "x-access-token": token }),
      ...headers,
    },
    body: requestEnvelope({ process: { cmd: "/bin/bash", args: ["-l", "-c", cmd], envs: {} } }),
  });
  const body = Buffer.from(await res.body.arrayBuffer());
  return { status: res.statusCode, headers: res.headers, body };
}

/** Concatenates the base64 `field` of every data event. */
export function output(frames: Frame[], field: "stdout" | "stderr"): string {
  const parts: Buffer[] = [];
  for (const f of frames) {
    const data = (f.json as { event?: { data?: Record<string, string> } }).event?.data;
    if (data?.[field]) parts.push(Buffer.from(data[field], "base64"));
  }
  return Buffer.concat(parts).toString("utf8");
}

/** The names of the events in order ("start", "data", "end", "keepalive", or "END_STREAM"). */
export function eventKinds(frames: Frame[]): string[] {
  return frames.map((f) =>
    f.flags & 0x02 ? "END_STREAM" : (Object.keys((f.json as { event: object }).event)[0] ?? "?"),
  );
}
