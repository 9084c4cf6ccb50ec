// What a scrape asks for and gets: the format its Accept header prefers, the content types, and
// the gzip the snapshot part is compressed with (speed over ratio, off the event loop).
import { createGzip } from "node:zlib";
import type { Format } from "../exposition/text.js";

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
 * Bodies at least this big are compressed as two gzip members side by side (GZIP_LANES): on the
 * pool's threads at once, the 40 MB body of 100,000 sandboxes is compressed in about half the
 * time (docs/benchmark.md, #40). Below it, one member: a split would save little.
 */
export const GZIP_SPLIT_BYTES = 4 * 1024 * 1024;
/**
 * Members compressed at once: two, as measured on two cores; more would only take turns with the
 * event loop and the scrapes for the same cores (the pool has four threads).
 */
const GZIP_LANES = 2;

/**
 * The gzip of several Buffers, concatenated in order, as Buffers to write in order: concatenated
 * gzip members decompress to the concatenated bodies (RFC 1952, section 2.2).
 */
export async function gzipChunks(chunks: readonly Buffer[]): Promise<Buffer[]> {
  const parts = splitBytes(chunks, GZIP_LANES, GZIP_SPLIT_BYTES);
  return Promise.all(parts.map(gzipMember));
}

/**
 * `chunks` cut into at most `lanes` runs of about equal bytes (a Buffer cut where a run ends,
 * never copied), or one run when they hold fewer than `minBytes`. Never no run: an empty body is
 * one empty member still.
 */
export function splitBytes(chunks: readonly Buffer[], lanes: number, minBytes: number): Buffer[][] {
  let total = 0;
  for (const c of chunks) total += c.length;
  if (lanes <= 1 || total === 0 || total < minBytes) return [[...chunks]];
  const share = Math.ceil(total / lanes);
  let run: Buffer[] = [];
  const runs = [run];
  let room = share;
  for (const chunk of chunks) {
    let c = chunk;
    // A run is only started for bytes left over, so none is empty.
    while (c.length > room) {
      if (room > 0) run.push(c.subarray(0, room));
      c = c.subarray(room);
      run = [];
      runs.push(run);
      room = share;
    }
    if (c.length > 0) run.push(c);
    room -= c.length;
  }
  return runs;
}

/** One gzip member of several Buffers, compressed on the zlib thread pool. */
function gzipMember(chunks: readonly Buffer[]): Promise<Buffer> {
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
