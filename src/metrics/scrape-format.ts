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

/** One gzip member of several Buffers, compressed on the zlib thread pool. */
export function gzipChunks(chunks: readonly Buffer[]): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const z = createGzip({ level: GZIP_LEVEL });
    const out: Buffer[] = [];
    z.on("data", (c: Buffer) => out.push(c));
    z.on("end", () => resolve(Buffer.concat(out)));
    z.on("error", reject);
    for (const c of chunks) z.write(c);
    z.end();
  });
}
