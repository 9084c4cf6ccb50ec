// The scrape client, in the bench's parent process: /metrics latency percentiles and size.
import { Agent, request } from "undici";

/** Latency percentiles (ms) and the body size of a run of scrapes. */
export interface ScrapeFigures {
  p50Ms: number;
  p99Ms: number;
  bytes: number;
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
  async get(gzip = false): Promise<{ ms: number; bytes: number }> {
    const t0 = performance.now();
    const res = await request(`${this.baseUrl}/metrics`, {
      dispatcher: this.agent,
      ...(gzip ? { headers: { "accept-encoding": "gzip" } } : {}),
    });
    let bytes = 0;
    for await (const chunk of res.body) bytes += (chunk as Buffer).byteLength;
    return { ms: performance.now() - t0, bytes };
  }

  /** GET /metrics as text (plain exposition). */
  async text(): Promise<string> {
    const res = await request(`${this.baseUrl}/metrics`, { dispatcher: this.agent });
    return res.body.text();
  }

  /** `warm` unmeasured scrapes (JIT, first render), then `n` measured ones. */
  async run(n: number, gzip: boolean, warm = 5): Promise<ScrapeFigures> {
    for (let i = 0; i < warm; i++) await this.get(gzip);
    const lat: number[] = [];
    let bytes = 0;
    for (let i = 0; i < n; i++) {
      const r = await this.get(gzip);
      lat.push(r.ms);
      bytes = r.bytes;
    }
    lat.sort((a, b) => a - b);
    return { p50Ms: pct(lat, 50), p99Ms: pct(lat, 99), bytes };
  }

  close(): Promise<void> {
    return this.agent.close();
  }
}
