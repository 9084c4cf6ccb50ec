// What a scrape asks for and gets: the format its Accept header prefers, the content types, and
// the gzip the snapshot part is compressed with (speed over ratio, off the event loop).
import { createGzip } from "node:zlib";
import type { Format } from "./exposition/text.js";

export const PROMETHEUS_TYPE = "text/plain; version=0.0.4; charset=utf-8";
export const OPENMETRICS_TYPE = "application/openmetrics-text; version=1.0.0; charset=utf-8";
/** Speed over ratio: the big snapshot part is compressed once per snapshot, off the event loop. */
export const GZIP_LEVEL = 1;

/** Picks OpenMetrics when the Accept header prefers it at least as much as the text format. */
export function negotiateFormat(accept: string | undefined): Format {
  if (!accept) return "prometheus";
  let openMetrics = 0;
  let text = 0;
  for (const range of accept.split(",")) {
    const [type = "", ...params] = range.split(";").map((p) => p.trim().toLowerCase());
    const qParam = params.find((p) => p.startsWith("q="));
    const q = qParam === undefined ? 1 : Number(qParam.slice(2));
    if (!Number.isFinite(q)) continue;
    if (type === "application/openmetrics-text") openMetrics = Math.max(openMetrics, q);
    else if (type === "text/plain" || type === "*/*" || type === "text/*") text = Math.max(text, q);
  }
  return openMetrics > 0 && openMetrics >= text ? "openmetrics" : "prometheus";
}

/**
 * One gzip member fed piece by piece, e.g. while the Buffer it compresses is still being written:
 * each piece is compressed on the zlib thread pool as it arrives. Pieces must not change after
 * they are written.
 */
export class GzipMember {
  private readonly z = createGzip({ level: GZIP_LEVEL });
  /** The member's bytes once ended; rejects when zlib failed or the member was dropped. */
  readonly done: Promise<Buffer>;

  constructor() {
    const out: Buffer[] = [];
    this.done = new Promise((resolve, reject) => {
      this.z.on("data", (c: Buffer) => out.push(c));
      this.z.on("end", () => resolve(Buffer.concat(out)));
      this.z.on("error", reject);
      this.z.on("close", () => reject(new Error("gzip member dropped before its end")));
    });
    // Whoever ends the member awaits `done`; a dropped member's rejection is nobody's error.
    this.done.catch(() => undefined);
  }

  write(piece: Buffer): void {
    if (piece.length > 0) this.z.write(piece);
  }

  /** No more pieces: resolves to the member. */
  end(): Promise<Buffer> {
    this.z.end();
    return this.done;
  }

  /** Abandons the member (a render that did not finish): its zlib stream is freed. */
  drop(): void {
    this.z.destroy();
  }
}

/** One gzip member of several Buffers, compressed on the zlib thread pool. */
export function gzipChunks(chunks: readonly Buffer[]): Promise<Buffer> {
  const member = new GzipMember();
  for (const c of chunks) member.write(c);
  return member.end();
}
