// Lifecycle events (issue 24), in process like the policy case: the simulator, the exporter, the
// delivery client and the scraper share one event loop, so every latency below includes the
// others' work on the same thread.
// 1. Webhook ingestion: N signed deliveries (distinct ids) over 16 keep-alive connections while a
//    scraper GETs /metrics every 100 ms; then re-deliveries of seen ids; the same scraper with no
//    deliveries; RSS and heap before and after (the ledger's id memory).
// 2. Events collector catch-up: 50,000 events in the simulator's log within the look-back; ticks,
//    requests and the collector's ms per tick until every event is counted.
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { pino } from "pino";
import { Registry } from "prom-client";
import { Agent, Pool } from "undici";
import { type Exporter, startExporter } from "../src/app.js";
import { loadConfig } from "../src/catalog.js";
import { EventLedger } from "../src/metrics/lifecycle-events.js";
import { KILL_REASONS, type LifecycleEvent } from "../src/platform/events.js";
import { DEFAULT_TEAM_ID, rfc3339 } from "../src/simulator/events.js";
import { startSimulator } from "../src/simulator/index.js";
import { webhookSignature } from "../src/simulator/webhooks.js";
import { type Clock, FakeClock, systemClock } from "../src/util/clock.js";
import { sampleOf, samples } from "../tools/exposition.js";
import { LIFTED_BUDGET } from "./exporter-case.js";
import { median, PROMETHEUS_ACCEPT, percentiles, ScrapeClient } from "./scrape-client.js";

/** Distinct deliveries, then re-deliveries of ids already seen. */
const DELIVERIES = Number(process.env.BENCH_EVENTS_DELIVERIES ?? 20_000);
const DUPLICATES = Number(process.env.BENCH_EVENTS_DUPLICATES ?? 5_000);
const CONCURRENCY = 16;
const TEMPLATES = 50;
const SCRAPE_EVERY_MS = 100;
/** Scrapes per idle run (no deliveries): 5 s at one every 100 ms. */
const IDLE_SCRAPES = 50;
/** Bound on the scrapes taken during one delivery run, whatever its length. */
const MAX_SCRAPES = 3_000;
/** Events in the simulator's log for the catch-up, one every EVENT_SPACING_MS of its clock. */
const CATCH_UP_EVENTS = Number(process.env.BENCH_EVENTS_LOG ?? 50_000);
const EVENT_SPACING_MS = 100;
const LOOKBACK = "2h";
/** Bound on the catch-up's ticks: 10 pages of 100 a tick needs about 56 for 50,000. */
const MAX_TICKS = 200;
/** Ticks measured after the catch-up, with no new event. */
const STEADY_TICKS = 3;
/** The poll interval the catch-up's exporter clock moves each tick (the default schedule). */
const TICK_MS = 15_000;
const BENCH_KEY = "bench-events-key";
const SECRET = "whsec-bench-events-0123456789";
const PATH = "/webhooks/e2b";
const SCRAPE = { gzip: true, accept: PROMETHEUS_ACCEPT };
const GCS_PER_READING = 6;

/** Latency percentiles (ms), the sample count and the maximum. */
export interface Latency {
  p50Ms: number;
  p99Ms: number;
  n: number;
  maxMs: number;
}

/** One run of deliveries with the scraper running beside it. */
export interface DeliveryRun {
  deliveries: number;
  seconds: number;
  perSecond: number;
  latency: Latency;
  scrape: Latency;
  /** HTTP status -> deliveries answered with it. */
  statuses: Record<string, number>;
}

/** process.memoryUsage() in MB, after a forced full GC. */
export interface MemoryReading {
  rssMB: number;
  heapUsedMB: number;
}

/** The webhook section. */
export interface WebhookIngest {
  concurrency: number;
  templates: number;
  /** Bytes of one delivery body (one event), median. */
  bodyBytes: number;
  accepted: DeliveryRun;
  duplicates: DeliveryRun;
  /** The same scraper with no deliveries: before any event, and after the accepted run. */
  idleBefore: Latency;
  idleAfter: Latency;
  /** /metrics gzip bytes before and after the accepted run. */
  scrapeBytes: { before: number; after: number };
  memory: {
    before: MemoryReading;
    afterAccepted: MemoryReading;
    afterDuplicates: MemoryReading;
    remembered: number;
    bytesPerIdRss: number;
    bytesPerIdHeap: number;
    /** The ledger alone, on a fresh registry: heap kept per id once the events are dropped. */
    isolatedLedgerBytesPerId: number;
  };
}

/** The catch-up section. */
export interface EventsCatchUp {
  events: number;
  spanMinutes: number;
  lookback: string;
  ticks: number;
  /** Requests of the events collector in all (its own count), and the simulator's count. */
  requests: number;
  simulatorRequests: number;
  requestsPerTick: number[];
  tickMs: { median: number; max: number; n: number };
  counted: number;
  /** Ticks after the catch-up with no new event: the settle margin read again. */
  steady: { requests: number[]; ms: number[] };
}

export interface EventsBench {
  webhook: WebhookIngest;
  catchUp: EventsCatchUp;
}

/** Runs both sections, one after the other. */
export async function eventsCase(): Promise<EventsBench> {
  const gc = exposeGc();
  const webhook = await webhookIngest(gc);
  const catchUp = await eventsCatchUp();
  return { webhook, catchUp };
}

/** A full GC, for the memory readings: --expose-gc set at run time (the bench runs under tsx). */
function exposeGc(): () => void {
  setFlagsFromString("--expose-gc");
  return runInNewContext("gc") as () => void;
}

function reading(gc: () => void): MemoryReading {
  // Several GCs: V8 flushes the bytecode of functions unused for a few GCs (the start-up's), which
  // otherwise leaves the heap between two readings as a negative delta.
  for (let i = 0; i < GCS_PER_READING; i++) gc();
  const m = process.memoryUsage();
  return { rssMB: m.rss / 2 ** 20, heapUsedMB: m.heapUsed / 2 ** 20 };
}

interface Delivery {
  body: string;
  headers: Record<string, string>;
}

/** One signed delivery of one event: created or killed (by reason `i` mod 8), template `i` mod 50. */
function delivery(i: number, at: number): Delivery {
  const killed = i % 2 === 1;
  const reason = KILL_REASONS[Math.floor(i / 2) % KILL_REASONS.length] as string;
  const body = JSON.stringify({
    version: "v2",
    id: randomUUID(),
    type: `sandbox.lifecycle.${killed ? "killed" : "created"}`,
    eventData: killed
      ? {
          kill_reason: reason,
          execution: {
            started_at: rfc3339(Math.floor((at - 600_000) / 1000) * 1000),
            vcpu_count: 2,
            memory_mb: 512,
            execution_time: 600_000,
          },
        }
      : {},
    sandboxBuildId: randomUUID(),
    sandboxExecutionId: randomUUID(),
    sandboxId: `ibench${String(Math.floor(i / 2)).padStart(8, "0")}`,
    sandboxTeamId: DEFAULT_TEAM_ID,
    sandboxTemplateId: `bench-template-${i % TEMPLATES}`,
    timestamp: rfc3339(at),
  });
  return {
    body,
    headers: {
      "content-type": "application/json",
      "e2b-webhook-id": "bench-webhook",
      "e2b-delivery-id": flatUuid(),
      "e2b-signature-version": "v1",
      "e2b-signature": webhookSignature(SECRET, body),
    },
  };
}

/**
 * A uuid as a flat string, as JSON.parse makes one: randomUUID's own is a rope several times its
 * size, which V8 flattens (freeing the rest) the first time it is read, skewing heap readings.
 */
function flatUuid(): string {
  return Buffer.from(randomUUID()).toString("latin1");
}

function latency(ms: number[]): Latency {
  return { ...percentiles(ms), maxMs: ms.length ? Math.max(...ms) : Number.NaN };
}

/** Scrapes every SCRAPE_EVERY_MS while `running()`, never two at once; at most `max` scrapes. */
async function scrapeWhile(
  client: ScrapeClient,
  running: () => boolean,
  max: number,
): Promise<{ ms: number[]; bytes: number }> {
  const ms: number[] = [];
  let bytes = 0;
  let due = performance.now();
  while (running() && ms.length < max) {
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
    if (!running()) break;
    const r = await client.get(SCRAPE);
    ms.push(r.ms);
    bytes = r.bytes;
    due = Math.max(due + SCRAPE_EVERY_MS, performance.now());
  }
  return { ms, bytes };
}

/** Sends every delivery over `pool`, CONCURRENCY in flight, with the scraper beside them. */
async function deliverAll(
  pool: Pool,
  client: ScrapeClient,
  all: readonly Delivery[],
): Promise<DeliveryRun> {
  const lat: number[] = [];
  const statuses: Record<string, number> = {};
  let next = 0;
  let running = true;
  const worker = async (): Promise<void> => {
    while (next < all.length) {
      const d = all[next++] as Delivery;
      const t0 = performance.now();
      const res = await pool.request({
        path: PATH,
        method: "POST",
        headers: d.headers,
        body: d.body,
      });
      await res.body.dump();
      lat.push(performance.now() - t0);
      statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1;
    }
  };
  const scraper = scrapeWhile(client, () => running, MAX_SCRAPES);
  const t0 = performance.now();
  try {
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  } finally {
    running = false;
  }
  const seconds = (performance.now() - t0) / 1000;
  const scrapes = await scraper;
  return {
    deliveries: all.length,
    seconds,
    perSecond: all.length / seconds,
    latency: latency(lat),
    scrape: latency(scrapes.ms),
    statuses,
  };
}

async function webhookIngest(gc: () => void): Promise<WebhookIngest> {
  const dir = mkdtempSync(join(tmpdir(), "bench-events-"));
  const secretFile = join(dir, "e2b-webhook-secret");
  writeFileSync(secretFile, SECRET, { mode: 0o600 });
  const sim = await startSimulator({ flavor: "e2b", sandboxes: 100, apiKey: BENCH_KEY });
  let exporter: Exporter | undefined;
  let pool: Pool | undefined;
  let client: ScrapeClient | undefined;
  try {
    const { config } = loadConfig({
      argv: [
        ...["--listen", "127.0.0.1:0", "--retries", "0", "--flavor", "e2b"],
        ...["--e2b-webhook-secret-file", secretFile, ...LIFTED_BUDGET],
      ],
      env: { SANDBOX_API_URL: sim.apiUrl, SANDBOX_API_KEY: BENCH_KEY, SANDBOX_DOMAIN: sim.domain },
    });
    if (config.poll.events) throw new Error("the webhook case runs with poll.events off");
    // The exporter's own clock moves a poll interval a tick, as a scheduled exporter's would: the
    // newest minute of the log settles once that clock is a minute past it.
    const exporterClock = new FakeClock(Date.now());
    exporter = await benchExporter(config, exporterClock);
    const ledger = exporter.events;
    if (!ledger) throw new Error("no event ledger: the webhook is not served");
    await exporter.runCycle();
    const now = Date.now();
    const fresh = Array.from({ length: DELIVERIES }, (_, i) => delivery(i, now));
    // Re-deliveries as E2B retries them: the same body, signature and delivery id.
    const again = fresh.slice(0, DUPLICATES);
    pool = new Pool(exporter.server.url, { connections: CONCURRENCY });
    client = new ScrapeClient(exporter.server.url);
    // Warm-up, unmeasured: JIT of the route and the scrape path.
    for (let i = 0; i < 5; i++) await client.get(SCRAPE);

    const idleBefore = await scrapeWhile(client, () => true, IDLE_SCRAPES);
    const before = reading(gc);
    const accepted = await deliverAll(pool, client, fresh);
    const afterAccepted = reading(gc);
    const remembered = ledger.remembered;
    const idleAfter = await scrapeWhile(client, () => true, IDLE_SCRAPES);
    const duplicates = await deliverAll(pool, client, again);
    const afterDuplicates = reading(gc);

    // The figures count only if the exporter counted what was sent.
    const scraped = samples(await client.text());
    const deliveries = "sandbox_webhook_deliveries_total";
    const ok = sampleOf(scraped, deliveries, { result: "accepted" });
    const dup = sampleOf(scraped, deliveries, { result: "duplicate" });
    if (remembered !== DELIVERIES || ok !== DELIVERIES || dup !== DUPLICATES)
      throw new Error(
        `webhook counts: remembered ${remembered}, accepted ${ok}, duplicate ${dup}; sent ${DELIVERIES} + ${DUPLICATES}`,
      );
    return {
      concurrency: CONCURRENCY,
      templates: TEMPLATES,
      bodyBytes: median(fresh.map((d) => Buffer.byteLength(d.body))),
      accepted,
      duplicates,
      idleBefore: latency(idleBefore.ms),
      idleAfter: latency(idleAfter.ms),
      scrapeBytes: { before: idleBefore.bytes, after: idleAfter.bytes },
      memory: {
        before,
        afterAccepted,
        afterDuplicates,
        remembered,
        bytesPerIdRss: ((afterAccepted.rssMB - before.rssMB) * 2 ** 20) / remembered,
        bytesPerIdHeap: ((afterAccepted.heapUsedMB - before.heapUsedMB) * 2 ** 20) / remembered,
        isolatedLedgerBytesPerId: ledgerBytesPerId(gc, DELIVERIES),
      },
    };
  } finally {
    await client?.close();
    await pool?.close();
    await exporter?.stop();
    await sim.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The id memory of an EventLedger alone: heap after `n` events were accepted and dropped (the
 * ledger keeps their ids), less the heap of the empty ledger, per id. After forced GCs.
 */
function ledgerBytesPerId(gc: () => void, n: number): number {
  const ledger = new EventLedger({
    ns: "bench",
    registry: new Registry(),
    clock: systemClock,
    horizonMs: 3_600_000,
  });
  const feed = (count: number, from: number): void => {
    for (let i = from; i < from + count; i++) {
      const killed = i % 2 === 1;
      const e: LifecycleEvent = {
        id: flatUuid(),
        type: killed ? "killed" : "created",
        sandboxId: `ibench${i}`,
        templateId: `bench-template-${i % TEMPLATES}`,
        timestamp: Date.now(),
        ...(killed && { killReason: KILL_REASONS[i % KILL_REASONS.length], executionSeconds: 600 }),
      };
      ledger.accept(e, "webhook");
    }
  };
  // The template series and the first kills exist before the baseline, so only ids grow after it.
  feed(TEMPLATES * 2, 0);
  const base = reading(gc).heapUsedMB;
  feed(n, TEMPLATES * 2);
  const after = reading(gc).heapUsedMB;
  return ((after - base) * 2 ** 20) / n;
}

async function eventsCatchUp(): Promise<EventsCatchUp> {
  const spanMs = CATCH_UP_EVENTS * EVENT_SPACING_MS;
  // The simulator's clock walks through the past so the events are spread over `spanMs`, ending now.
  const clock = new FakeClock(Date.now() - spanMs);
  const sim = await startSimulator({
    flavor: "e2b",
    sandboxes: 0,
    templates: TEMPLATES,
    apiKey: BENCH_KEY,
    clock,
  });
  let exporter: Exporter | undefined;
  try {
    const templates = sim.state.templates.map((t) => t.templateID);
    for (let i = 0; i < CATCH_UP_EVENTS / 2; i++) {
      const s = sim.state.addSandbox({ templateID: templates[i % templates.length] as string });
      clock.advance(EVENT_SPACING_MS);
      sim.state.removeSandbox(s.sandboxID, KILL_REASONS[i % KILL_REASONS.length]);
      clock.advance(EVENT_SPACING_MS);
    }
    const logged = sim.events.all().length;
    if (logged !== CATCH_UP_EVENTS) throw new Error(`simulator logged ${logged} events`);
    const { config } = loadConfig({
      argv: [
        ...["--listen", "127.0.0.1:0", "--retries", "0", "--flavor", "e2b", "--poll-events"],
        ...["--poll-events-lookback", LOOKBACK, ...LIFTED_BUDGET],
      ],
      env: { SANDBOX_API_URL: sim.apiUrl, SANDBOX_API_KEY: BENCH_KEY, SANDBOX_DOMAIN: sim.domain },
    });
    // The exporter's own clock moves a poll interval a tick, as a scheduled exporter's would: the
    // newest minute of the log settles once that clock is a minute past it.
    const exporterClock = new FakeClock(Date.now());
    exporter = await benchExporter(config, exporterClock);
    const ledger = exporter.events;
    if (!ledger) throw new Error("no event ledger with poll.events on");
    const tick = async (): Promise<{ requests: number; ms: number }> => {
      exporterClock.advance(TICK_MS);
      // Wall time: the exporter's own clock is the fake one, so its durationMs reads 0.
      const t0 = performance.now();
      const snap = await exporter?.runCycle();
      const ms = performance.now() - t0;
      const status = snap?.collectors.events;
      if (!status?.success) throw new Error(`events collector: ${JSON.stringify(status?.error)}`);
      return { requests: status.requests, ms };
    };
    const route = "GET /events/sandboxes";
    const simBefore = sim.counters.get(route);
    const perTick: Array<{ requests: number; ms: number }> = [];
    while (ledger.remembered < CATCH_UP_EVENTS && perTick.length < MAX_TICKS)
      perTick.push(await tick());
    const counted = ledger.remembered;
    if (counted !== CATCH_UP_EVENTS)
      throw new Error(`catch-up: ${counted} of ${CATCH_UP_EVENTS} counted in ${MAX_TICKS} ticks`);
    const simulatorRequests = sim.counters.get(route) - simBefore;
    const steady: EventsCatchUp["steady"] = { requests: [], ms: [] };
    for (let i = 0; i < STEADY_TICKS; i++) {
      const t = await tick();
      steady.requests.push(t.requests);
      steady.ms.push(t.ms);
    }
    const ms = perTick.map((t) => t.ms);
    return {
      events: CATCH_UP_EVENTS,
      spanMinutes: spanMs / 60_000,
      lookback: LOOKBACK,
      ticks: perTick.length,
      requests: perTick.reduce((a, t) => a + t.requests, 0),
      simulatorRequests,
      requestsPerTick: perTick.map((t) => t.requests),
      tickMs: { median: median(ms), max: Math.max(...ms), n: ms.length },
      counted,
      steady,
    };
  } finally {
    await exporter?.stop();
    await sim.close();
  }
}

/** The exporter of a case: silent, on the system clock, ticked by the case (manual schedule). */
function benchExporter(
  config: Parameters<typeof startExporter>[0],
  clock: Clock = systemClock,
): Promise<Exporter> {
  return startExporter(config, {
    logger: pino({ level: "silent" }),
    clock,
    dispatcher: new Agent({ connections: 4 }),
    manual: true,
  });
}
