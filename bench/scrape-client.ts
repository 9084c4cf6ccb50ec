// The scrape client, in the bench's parent process: /metrics latency percentiles and size.
import { setTimeout as sleep } from "node:timers/promises";
import { Agent, request } from "undici";
import { epochMs } from "./ipc.js";

/**
 * The Accept header of Prometheus 2.x's default scrape (2.42 sends this one): OpenMetrics first,
 * then the text format.
 */
export const PROMETHEUS_ACCEPT =
  "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";

/** Latency percentiles (ms) and the body size of a run of scrapes. */
export interface ScrapeFigures {
  p50Ms: number;
  p99Ms: number;
  /** Scrapes measured (the percentiles are of these). */
  n: number;
  bytes: number;
}

/** One scrape of a timed run: start and end on the epoch clock shared with the exporter child. */
export interface TimedScrape {
  startAt: number;
  endAt: number;
  ms: number;
  bytes: number;
}

/** What a scrape sends: as Prometheus (its Accept header and gzip) or a bare GET. */
export interface ScrapeStyle {
  gzip: boolean;
  accept?: string;
}

/** Nearest-rank percentile of an ascending array (p99 of 100 samples is the 99th, not the max). */
export function pct(sorted: number[], p: number): number {
  const rank = Math.max(1, Math.ceil((sorted.length * p) / 100));
  return sorted[Math.min(sorted.length, rank) - 1] ?? Number.NaN;
}

/** The median of any array. */
export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  if (s.length === 0) return Number.NaN;
  return s.length % 2 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

/** Keeps one connection to the exporter, as Prometheus does. */
export class ScrapeClient {
  private readonly agent = new Agent({ connections: 1 });

  constructor(private readonly baseUrl: string) {}

  /**
   * GET /metrics once: ms until the last byte arrived and the byte count. The body is counted, not
   * kept, so the client's own allocations and GC stay out of the exporter's latency.
   */
  async get(style: ScrapeStyle = { gzip: false }): Promise<TimedScrape> {
    const headers: Record<string, string> = {};
    if (style.gzip) headers["accept-encoding"] = "gzip";
    if (style.accept) headers.accept = style.accept;
    const startAt = epochMs();
    const res = await request(`${this.baseUrl}/metrics`, { dispatcher: this.agent, headers });
    let bytes = 0;
    for await (const chunk of res.body) bytes += (chunk as Buffer).byteLength;
    const endAt = epochMs();
    return { startAt, endAt, ms: endAt - startAt, bytes };
  }

  /** GET /metrics as text (plain exposition). */
  async text(): Promise<string> {
    const res = await request(`${this.baseUrl}/metrics`, { dispatcher: this.agent });
    return res.body.text();
  }

  /** `warm` unmeasured scrapes (JIT, first render), then `n` measured ones, back to back. */
  async run(n: number, gzip: boolean, warm = 5): Promise<ScrapeFigures> {
    for (let i = 0; i < warm; i++) await this.get({ gzip });
    const lat: number[] = [];
    let bytes = 0;
    for (let i = 0; i < n; i++) {
      const r = await this.get({ gzip });
      lat.push(r.ms);
      bytes = r.bytes;
    }
    return { ...percentiles(lat), bytes };
  }

  /**
   * Scrapes every `everyMs` for `forMs`, never two at once (as Prometheus scrapes one target): a
   * scrape slower than the interval starts the next one at once.
   */
  async every(everyMs: number, forMs: number, style: ScrapeStyle): Promise<TimedScrape[]> {
    const out: TimedScrape[] = [];
    const end = epochMs() + forMs;
    let due = epochMs();
    while (due < end) {
      const wait = due - epochMs();
      if (wait > 0) await sleep(wait);
      out.push(await this.get(style));
      due = Math.max(due + everyMs, epochMs());
    }
    return out;
  }

  close(): Promise<void> {
    return this.agent.close();
  }
}

/** p50, p99 and n of latencies in ms (any order). */
export function percentiles(ms: number[]): { p50Ms: number; p99Ms: number; n: number } {
  const s = [...ms].sort((a, b) => a - b);
  return { p50Ms: pct(s, 50), p99Ms: pct(s, 99), n: s.length };
}
