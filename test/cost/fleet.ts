// A churning simulated E2B fleet on an injected clock, read by a real exporter over loopback:
// creates, kills, pauses, resumes and expiries between walks, lifetimes from 1 s to hours.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { pino } from "pino";
import { type Exporter, startExporter } from "../../src/app.js";
import { ConfigSchema } from "../../src/catalog.js";
import { E2B_PRICES } from "../../src/cost/cost-settings.js";
import type { TruthSpan, TruthTotal } from "../../src/simulator/cost-truth.js";
import { parseEventQuery } from "../../src/simulator/events.js";
import { type Simulator, startSimulator } from "../../src/simulator/index.js";
import { Prng } from "../../src/simulator/prng.js";
import { FakeClock } from "../../src/util/clock.js";
import { inShard } from "../../src/util/shard.js";
import { samples } from "../helpers/exporter.js";

export const T0 = Date.UTC(2026, 10, 1);
export const INTERVAL_MS = 15_000;
const SUBSTEPS = 3;
export const RULE_DONE = "pause-old";
export const RULE_DRY = "plan-old";
/** maxAge of the two rules. */
export const DONE_AGE_MS = 120_000;
export const DRY_AGE_MS = 60_000;
/** The owner of runs shorter than FLASH_MS. */
export const FLASH = "flash";
const FLASH_MS = 5_000;

/** What a test run leaves to compare. */
export interface FleetRun {
  sim: Simulator;
  clock: FakeClock;
  exporters: Exporter[];
  /** Times of the walks (the cycles' starts). */
  walks: number[];
  /** endAt values a sandbox had, with when each was set. */
  endAts: Map<string, { at: number; endAt: number }[]>;
  /** Sandboxes only the policy pauses (pausable) or plans to (dry). */
  kinds: Map<string, "pausable" | "dry">;
  /** Sandboxes of owner FLASH (runs shorter than FLASH_MS). */
  flash: Set<string>;
  stop(): Promise<void>;
}

export interface FleetOptions {
  events: boolean;
  steps: number;
  seed?: number;
  shards?: number;
  /** Before the walk of this step, every exporter is stopped and started again. */
  restartAt?: number;
  /** Events are served only this long after their timestamp (E2B stores them late). */
  eventLagMs?: number;
}

/** Running price per ms of a span. */
export function perMs(s: { cpu: number; memoryMB: number }): number {
  return (s.cpu * E2B_PRICES.vcpuSecond + (s.memoryMB / 1024) * E2B_PRICES.memoryGiBSecond) / 1000;
}

function configFor(apiUrl: string, events: boolean, index: number, total: number) {
  return ConfigSchema.parse({
    platform: { apiUrl, flavor: "e2b", retries: 0 },
    server: { listen: "127.0.0.1:0" },
    poll: { events, eventsLookbackMs: 3_600_000 },
    shard: { index, total },
    cost: { attributeBy: ["owner"], maxAttributedValues: 20 },
    policy: {
      enabled: true,
      dryRun: false,
      consecutiveCycles: 1,
      maxMatchPercent: 100,
      maxActionsPerCycle: 1000,
      rules: [
        {
          name: RULE_DONE,
          match: { states: ["running"], metadata: ["pausable=yes"] },
          maxAge: `${DONE_AGE_MS / 1000}s`,
          action: "pause",
        },
        {
          name: RULE_DRY,
          match: { states: ["running"], metadata: ["dry=yes"] },
          maxAge: `${DRY_AGE_MS / 1000}s`,
          action: "pause",
          dryRun: true,
        },
      ],
    },
    log: { level: "silent" },
  });
}

function start(apiUrl: string, clock: FakeClock, events: boolean, shards: number) {
  return Promise.all(
    Array.from({ length: shards }, (_, i) =>
      startExporter(configFor(apiUrl, events, i, shards), {
        logger: pino({ level: "silent" }),
        clock,
        manual: true,
      }),
    ),
  );
}

/** A lifetime: 1 s to 30 s, minutes, or hours. */
function lifetime(rng: Prng): number {
  const r = rng.next();
  if (r < 0.3) return 1000 * (1 + Math.floor(rng.next() * 30));
  if (r < 0.8) return 60_000 * (1 + rng.next() * 20);
  return 3_600_000 * (1 + rng.next() * 2);
}

/** Runs the fleet for `steps` poll intervals; every sub-step churns, every step walks. */
export async function runFleet(o: FleetOptions): Promise<FleetRun> {
  const clock = new FakeClock(T0);
  const sim = await startSimulator({
    flavor: "e2b",
    sandboxes: 0,
    templates: 3,
    nodes: 1,
    clock,
    expireSandboxes: true,
  });
  const shards = o.shards ?? 1;
  const lagged = o.eventLagMs === undefined ? undefined : await lagEvents(sim, clock, o.eventLagMs);
  const apiUrl = lagged?.url ?? sim.apiUrl;
  let exporters = await start(apiUrl, clock, o.events, shards);
  const rng = new Prng(o.seed ?? 7);
  const endAts = new Map<string, { at: number; endAt: number }[]>();
  const walks: number[] = [];
  const kinds = new Map<string, "pausable" | "dry">();
  const flash = new Set<string>();
  const touch = async (): Promise<void> => {
    // Any management request applies the expiries that are due (the simulator's lazy expiry).
    await fetch(`${sim.apiUrl}/health`);
  };
  const setEnd = (id: string, endAt: number): void => {
    const list = endAts.get(id) ?? [];
    list.push({ at: clock.now(), endAt });
    endAts.set(id, list);
    const s = sim.state.sandbox(id);
    if (s) s.endAt = endAt;
  };
  const templates = sim.state.templates.map((t) => t.templateID);
  for (let step = 0; step < o.steps; step++) {
    for (let sub = 0; sub < SUBSTEPS; sub++) {
      const until = clock.now() + INTERVAL_MS / SUBSTEPS;
      // Expiries at their exact endAt, as E2B's own timer does.
      const due = [...sim.state.sandboxes.values()]
        .filter((s) => s.state === "running" && s.endAt > clock.now() && s.endAt <= until)
        .map((s) => s.endAt)
        .sort((a, b) => a - b);
      for (const at of due) {
        clock.set(at);
        await touch();
      }
      clock.set(until);
      await touch();
      churn(sim, rng, templates, setEnd, clock.now(), kinds, flash);
    }
    if (o.restartAt === step) {
      for (const e of exporters) await e.stop();
      exporters = await start(apiUrl, clock, o.events, shards);
    }
    walks.push(clock.now());
    for (const e of exporters) await e.runCycle();
  }
  return {
    sim,
    clock,
    exporters,
    walks,
    endAts,
    kinds,
    flash,
    async stop() {
      for (const e of exporters) await e.stop();
      await lagged?.close();
      await sim.close();
    },
  };
}

/**
 * A proxy in front of the simulator over loopback whose events lists leave out the events stamped
 * less than `lagMs` ago, as E2B's store shows them late; every other request passes through.
 */
async function lagEvents(
  sim: Simulator,
  clock: FakeClock,
  lagMs: number,
): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer((req, res) => {
    void proxy(req, res).catch(() => res.destroy());
  });
  const proxy = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? "/", sim.apiUrl);
    const m = /^\/events\/sandboxes(?:\/([^/]+))?$/.exec(url.pathname);
    if (req.method === "GET" && m) {
      const q = parseEventQuery(url, m[1]);
      if (typeof q === "string") throw new Error(q);
      const shown = sim.events
        .page({ ...q, offset: 0, limit: Number.MAX_SAFE_INTEGER })
        .filter((e) => Date.parse(e.timestamp) <= clock.now() - lagMs)
        .slice(q.offset, q.offset + q.limit);
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(shown));
      return;
    }
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const headers = new Headers();
    for (const [k, v] of Object.entries(req.headers))
      if (typeof v === "string" && k !== "host" && k !== "content-length") headers.set(k, v);
    const up = await fetch(url, {
      method: req.method ?? "GET",
      headers,
      ...(chunks.length > 0 && { body: Buffer.concat(chunks) }),
    });
    const out: Record<string, string> = {};
    up.headers.forEach((v, k) => {
      if (k !== "content-length" && k !== "content-encoding" && k !== "transfer-encoding")
        out[k] = v;
    });
    res.writeHead(up.status, out).end(Buffer.from(await up.arrayBuffer()));
  };
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

function churn(
  sim: Simulator,
  rng: Prng,
  templates: readonly string[],
  setEnd: (id: string, endAt: number) => void,
  now: number,
  kinds: Map<string, "pausable" | "dry">,
  flash: Set<string>,
): void {
  const state = sim.state;
  const creates = 1 + Math.floor(rng.next() * 4);
  for (let i = 0; i < creates; i++) {
    const kind = rng.next();
    const life = lifetime(rng);
    const s = state.addSandbox({
      templateID: templates[Math.floor(rng.next() * templates.length)] as string,
      metadata: {
        // Runs shorter than a sub-step mostly live and die between two walks.
        owner: life < FLASH_MS ? FLASH : `customer-${Math.floor(rng.next() * 12)}`,
        ...(kind < 0.15 ? { pausable: "yes" } : kind < 0.3 ? { dry: "yes" } : {}),
      },
    });
    setEnd(s.sandboxID, now + life);
    if (life < FLASH_MS) flash.add(s.sandboxID);
    if (s.metadata.pausable) kinds.set(s.sandboxID, "pausable");
    if (s.metadata.dry) kinds.set(s.sandboxID, "dry");
  }
  const all = [...state.sandboxes.values()];
  const pick = <T>(xs: T[]): T | undefined => xs[Math.floor(rng.next() * xs.length)];
  // Kills between walks, of any state.
  if (rng.next() < 0.5) {
    const victim = pick(all.filter((s) => s.metadata.dry !== "yes" || rng.next() < 0.5));
    if (victim) state.removeSandbox(victim.sandboxID, "request");
  }
  // Pauses of ordinary sandboxes (the policy's and the plan's are left to the policy).
  if (rng.next() < 0.4) {
    const s = pick(
      all.filter((x) => x.state === "running" && !x.metadata.pausable && !x.metadata.dry),
    );
    if (s) {
      s.state = "paused";
      state.lifecycle("paused", s);
    }
  }
  // Resumes of any paused one, the policy's included: a resume ends a done saving.
  if (rng.next() < 0.4) {
    const s = pick(all.filter((x) => x.state === "paused" && state.sandboxes.has(x.sandboxID)));
    if (s) {
      s.state = "running";
      state.lifecycle("resumed", s);
      setEnd(s.sandboxID, now + lifetime(rng));
    }
  }
}

/** The truth served by the simulator's test route. */
export async function truth(
  run: FleetRun,
  since: number,
  until: number,
): Promise<{ totals: TruthTotal[]; sandboxes: Record<string, TruthSpan[]> }> {
  const res = await fetch(`${run.sim.apiUrl}/_sim/cost?since=${since}&until=${until}`);
  return (await res.json()) as { totals: TruthTotal[]; sandboxes: Record<string, TruthSpan[]> };
}

/** Running cost per template in the truth. */
export function truthRunningCost(totals: readonly TruthTotal[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const t of totals)
    if (t.state === "running")
      out.set(
        t.template,
        t.vcpuSeconds * E2B_PRICES.vcpuSecond + t.gibSeconds * E2B_PRICES.memoryGiBSecond,
      );
  return out;
}

/** The exporters' summed series of `name` whose labels include `want`, by the value of `by`. */
export async function exported(
  run: FleetRun,
  name: string,
  want: Record<string, string>,
  by: string,
): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const e of run.exporters) {
    const text = await (await fetch(`${e.server.url}/metrics`)).text();
    for (const [key, value] of samples(text)) {
      if (!key.startsWith(`${name}{`)) continue;
      const labels = Object.fromEntries(
        [...key.slice(name.length + 1, -1).matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]),
      );
      if (!Object.entries(want).every(([k, v]) => labels[k] === v)) continue;
      const k = labels[by] ?? "";
      out.set(k, (out.get(k) ?? 0) + value);
    }
  }
  return out;
}

/** The exported running spend in USD, by template (what each fleet test compares with the truth). */
export function runningSpend(run: FleetRun): Promise<Map<string, number>> {
  return exported(
    run,
    "sandbox_estimated_cost_total",
    { state: "running", currency: "USD" },
    "template",
  );
}

/** Running cost of the truth's spans within [since, until], by template; `keep` picks sandboxes. */
export function spanCost(
  sandboxes: Record<string, TruthSpan[]>,
  since: number,
  until: number,
  keep: (id: string) => boolean = () => true,
): Map<string, number> {
  const out = new Map<string, number>();
  for (const [id, spans] of Object.entries(sandboxes)) {
    if (!keep(id)) continue;
    for (const s of spans) {
      if (s.state !== "running") continue;
      const ms = Math.min(s.to ?? until, until) - Math.max(s.from, since);
      if (ms > 0) out.set(s.template, (out.get(s.template) ?? 0) + ms * perMs(s));
    }
  }
  return out;
}

/**
 * The walk-only error bound of each template: a running span no walk saw is missed whole; one a
 * walk saw is off by at most half an interval at each end the list cannot date (a start after a
 * resume, an end other than its endAt).
 */
export function walkOnlyBound(
  run: FleetRun,
  sandboxes: Record<string, TruthSpan[]>,
  since: number,
  until: number,
  keep: (id: string) => boolean = () => true,
): Map<string, number> {
  const out = new Map<string, number>();
  for (const [id, spans] of Object.entries(sandboxes)) {
    if (!keep(id)) continue;
    const ends = (run.endAts.get(id) ?? []).map((e) => e.endAt);
    spans.forEach((s, i) => {
      if (s.state !== "running") return;
      const from = Math.max(s.from, since);
      const to = Math.min(s.to ?? until, until);
      if (to <= from) return;
      const seen = run.walks.some((w) => w >= from && w <= to);
      const guessed = (i > 0 ? 1 : 0) + (s.to !== undefined && !ends.includes(s.to) ? 1 : 0);
      const ms = seen ? Math.min(to - from, (guessed * INTERVAL_MS) / 2) : to - from;
      out.set(s.template, (out.get(s.template) ?? 0) + ms * perMs(s));
    });
  }
  return out;
}

export { inShard };
