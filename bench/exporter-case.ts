// One benchmark case in its own process (so RSS is its own): poll cycle vs a bare undici loop,
// then /metrics scrape latency and size. Prints one JSON line.
import { pino } from "pino";
import { Agent, request } from "undici";
import { startExporter } from "../src/app.js";
import { loadConfig } from "../src/config/load.js";
import { systemClock } from "../src/util/clock.js";

const [apiUrl, perSandbox, scrapesArg] = process.argv.slice(2);
const SCRAPES = Number(scrapesArg ?? 50);
const PAGE = 100;

/** The baseline: fetch every page with undici and only parse it. */
async function bareLoop(): Promise<{ ms: number; items: number }> {
  const agent = new Agent();
  const t0 = performance.now();
  let token: string | undefined;
  let items = 0;
  for (let page = 0; page < 100_000; page++) {
    const url = `${apiUrl}/sandboxapi/v1/v2/sandboxes?limit=${PAGE}${token ? `&nextToken=${encodeURIComponent(token)}` : ""}`;
    const res = await request(url, { dispatcher: agent });
    const body = (await res.body.json()) as unknown[];
    items += body.length;
    const next = res.headers["x-next-token"];
    token = typeof next === "string" && next ? next : undefined;
    if (!token) break;
  }
  const ms = performance.now() - t0;
  await agent.close();
  return { ms, items };
}

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? Number.NaN;
}

const { config } = loadConfig({
  argv: [
    "--listen",
    "127.0.0.1:0",
    "--page-limit",
    String(PAGE),
    ...(perSandbox === "on" ? ["--per-sandbox-metrics", "--max-sandbox-series", "200000"] : []),
  ],
  env: { SANDBOX_API_URL: apiUrl },
});
const exporter = await startExporter(config, {
  logger: pino({ level: "silent" }),
  clock: systemClock,
  manual: true,
});
// Warm both paths once, then measure each three times and keep the median.
await bareLoop();
await exporter.runCycle();
const bare: number[] = [];
const cycle: number[] = [];
const pollOnly: number[] = [];
for (let i = 0; i < 3; i++) {
  bare.push((await bareLoop()).ms);
  const t0 = performance.now();
  await exporter.runCycle();
  cycle.push(performance.now() - t0);
  const s = exporter.poller.latest;
  if (s) pollOnly.push(s.finishedAt - s.startedAt);
}
const snap = exporter.poller.latest;
global.gc?.();
const rssBytes = process.memoryUsage.rss();
const agent = new Agent();
const lat: number[] = [];
let bytes = 0;
// Prometheus scrapes continuously: warm the path (JIT, first gzip/render) before measuring.
for (let i = 0; i < 5; i++)
  await (await request(`${exporter.server.url}/metrics`, { dispatcher: agent })).body.arrayBuffer();
for (let i = 0; i < SCRAPES; i++) {
  const t0 = performance.now();
  const res = await request(`${exporter.server.url}/metrics`, { dispatcher: agent });
  const body = await res.body.arrayBuffer();
  lat.push(performance.now() - t0);
  bytes = body.byteLength;
}
lat.sort((a, b) => a - b);
// The same with Accept-Encoding: gzip, as Prometheus scrapes.
const gz: number[] = [];
let gzBytes = 0;
for (let i = 0; i < SCRAPES; i++) {
  const t0 = performance.now();
  const res = await request(`${exporter.server.url}/metrics`, {
    dispatcher: agent,
    headers: { "accept-encoding": "gzip" },
  });
  const body = await res.body.arrayBuffer();
  gz.push(performance.now() - t0);
  gzBytes = body.byteLength;
}
gz.sort((a, b) => a - b);
await agent.close();
await exporter.stop();
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[1] ?? Number.NaN;
process.stdout.write(
  `${JSON.stringify({
    perSandbox,
    sandboxes: snap?.sandboxes?.length ?? 0,
    pages: snap?.collectors.sandboxes.requests ?? 0,
    cycleMs: median(cycle),
    walkMs: median(pollOnly),
    bareLoopMs: median(bare),
    scrapeP50Ms: pct(lat, 50),
    scrapeP99Ms: pct(lat, 99),
    scrapeBytes: bytes,
    gzipP50Ms: pct(gz, 50),
    gzipP99Ms: pct(gz, 99),
    gzipBytes: gzBytes,
    rssMB: rssBytes / 1048576,
  })}\n`,
);
process.exit(0);
