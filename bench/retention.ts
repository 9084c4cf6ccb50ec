// Retention at 100,000 snapshots (issue #38; `npm run bench -- --only retention`): what one storage
// tick costs the exporter (list pages and detail reads, wall and CPU time, memory after it), how
// many ticks a whole pass and the details take at the defaults, and what retention rules add to a
// policy run on that inventory. The snapshots come from a small loopback server in this process,
// its pages built once: the simulator's GET /snapshots sorts every snapshot for each page (about
// 80 ms a page at 100,000), so its time, not the exporter's, would be measured. The exporter runs
// compiled in its own process with the image's node flags; the policy runs in this process.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { pino } from "pino";
import { Registry } from "prom-client";
import { COLLECTORS, loadConfig } from "../src/catalog.js";
import type { CollectorStatus, Snapshot } from "../src/collect/snapshot.js";
import { factsOf, type SnapshotFact, summarize } from "../src/collect/storage/snapshot-facts.js";
import type { StorageInventory } from "../src/collect/storage/storage.js";
import { SNAPSHOTS_PAGE_LIMIT } from "../src/collect/storage/storage-lists.js";
import type { Config } from "../src/config/settings.js";
import { BACKGROUND_SHARE } from "../src/platform/control/limiter.js";
import { parseSnapshotDetail } from "../src/platform/normalize/snapshot-detail.js";
import { PolicyEngine, type PolicyRun } from "../src/policy/engine.js";
import { EMPTY_MEMORY, evaluatePolicy, type PolicyMemory } from "../src/policy/evaluate.js";
import type { PolicyPlatform } from "../src/policy/executor.js";
import type { StateSets } from "../src/policy/match.js";
import { loadPolicySpec } from "../src/policy/policy-file.js";
import type { PolicySpec } from "../src/policy/policy-settings.js";
import { systemClock } from "../src/util/clock.js";
import { tickInterval } from "../src/util/schedule.js";
import { type ExporterChild, LIFTED_BUDGET } from "./exporter-case.js";
import { type BenchChild, forkChild } from "./ipc.js";
import { median, ScrapeClient } from "./scrape-client.js";

const DAY = 86_400_000;
/** Snapshots were made evenly over this span: 30 % are older than the 7-day rule. */
const SPAN_MS = 10 * DAY;
/** Every this-many-th snapshot was never started from (lastSpawnedAt null). */
const NEVER_USED_EVERY = 4;
/** Ticks after the first pass ends: a new pass goes on, and details are read. */
const STEADY_TICKS = 5;
/** The scaled check at the default budget: so few snapshots that a pass ends in the second tick. */
const SCALED = { snapshots: 2_500, schedule: "4s", ticks: 3 };
/** Policy runs per side (off, on), in turn; the first of each is reported alone. */
const POLICY_RUNS = 6;
const GCS_PER_READING = 2;
const LOOP_RESOLUTION_MS = 10;
/** Long enough for the loop monitor's timer to fire once (a blocked loop is seen late). */
const LOOP_SETTLE_MS = 3 * LOOP_RESOLUTION_MS;
/** Ticks of the control child (storage off): its first one is left out as cold. */
const CONTROL_TICKS = 4;
const FLAVOR = ["--flavor", "e2b", "--poll-storage"];
/** The policy on both sides: one pause rule (the fleet is empty: it finds nothing). */
const SANDBOX_RULE = `
dryRun: true
rules:
  - name: idle-sandboxes
    match: { states: [running] }
    idleFor: 30m
    action: pause
`;
const RETENTION_RULES = `
  - name: old-snapshots
    target: snapshot
    olderThan: 7d
    keepLatest: 10
    action: delete
    allowDelete: true
  - name: unused-snapshots
    target: snapshot
    unusedFor: 3d
    action: delete
    allowDelete: true
`;

/** The snapshots served, newest first: number i was made SPAN_MS * (i + 0.5) / n before `now`. */
class SnapshotFleet {
  constructor(
    readonly n: number,
    readonly now: number,
  ) {}

  /** A raw template id of 20 characters, as E2B generates them. */
  templateId(i: number): string {
    return `s${i.toString(36).padStart(11, "0")}benchraw`;
  }

  indexOf(templateId: string): number | undefined {
    const i = Number.parseInt(templateId.slice(1, 12), 36);
    return i >= 0 && i < this.n && this.templateId(i) === templateId ? i : undefined;
  }

  createdAt(i: number): number {
    return Math.round(this.now - (SPAN_MS * (i + 0.5)) / this.n);
  }

  /** Never used, or last used at a point between its making and now spread by a hash of i. */
  lastSpawnedAt(i: number): number | null {
    if (i % NEVER_USED_EVERY === 0) return null;
    const share = ((i * 2_654_435_761) >>> 0) / 2 ** 32;
    const made = this.createdAt(i);
    return Math.round(made + (this.now - made) * share);
  }

  record(i: number): { snapshotID: string; names: string[] } {
    return { snapshotID: `${this.templateId(i)}:default`, names: [] };
  }

  /** GET /templates/{id} of a snapshot, shaped as E2B's TemplateWithBuilds (one build). */
  detail(i: number): Record<string, unknown> {
    const iso = (ms: number) => new Date(ms).toISOString();
    const made = iso(this.createdAt(i));
    const used = this.lastSpawnedAt(i);
    return {
      templateID: this.templateId(i),
      public: false,
      aliases: [],
      names: [],
      createdAt: made,
      updatedAt: made,
      lastSpawnedAt: used === null ? null : iso(used),
      spawnCount: used === null ? 0 : 1 + (i % 7),
      builds: [{ buildID: `b-${this.templateId(i)}`, status: "ready", createdAt: made }],
    };
  }
}

type Route = "list" | "detail" | "volumes" | "other";

/** Serves `fleet` as E2B's API does for the storage collector; everything else is empty or 404. */
async function serveFleet(fleet: SnapshotFleet) {
  const pages: Buffer[] = [];
  const pageOfToken = new Map<string, number>();
  for (let from = 0; from < fleet.n; from += SNAPSHOTS_PAGE_LIMIT) {
    const to = Math.min(fleet.n, from + SNAPSHOTS_PAGE_LIMIT);
    const records = Array.from({ length: to - from }, (_, k) => fleet.record(from + k));
    pages.push(Buffer.from(JSON.stringify(records)));
    // E2B's cursor: base64url of "<created RFC 3339>__<id>" of the page's last record.
    const cursor = `${new Date(fleet.createdAt(to - 1)).toISOString()}__${fleet.templateId(to - 1)}`;
    if (to < fleet.n) pageOfToken.set(Buffer.from(cursor).toString("base64url"), pages.length);
  }
  const tokenOfPage = new Map([...pageOfToken].map(([t, p]) => [p, t]));
  const counts: Record<Route, number> = { list: 0, detail: 0, volumes: 0, other: 0 };
  const others = new Map<string, number>();
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://bench");
    const json = (status: number, body: string | Buffer, headers = {}) =>
      res.writeHead(status, { "content-type": "application/json", ...headers }).end(body);
    if (url.pathname === "/snapshots") {
      counts.list++;
      const token = url.searchParams.get("nextToken");
      const page = token === null ? 0 : pageOfToken.get(token);
      if (page === undefined || url.searchParams.get("limit") !== String(SNAPSHOTS_PAGE_LIMIT))
        return json(400, '{"code":400,"message":"Invalid next token or limit"}');
      const next = tokenOfPage.get(page + 1);
      return json(200, pages[page] as Buffer, next ? { "x-next-token": next } : {});
    }
    if (url.pathname.startsWith("/templates/")) {
      counts.detail++;
      const i = fleet.indexOf(decodeURIComponent(url.pathname.slice("/templates/".length)));
      if (i === undefined) return json(404, '{"code":404,"message":"template not found"}');
      return json(200, JSON.stringify(fleet.detail(i)));
    }
    if (url.pathname === "/volumes") {
      counts.volumes++;
      return json(200, "[]");
    }
    counts.other++;
    const key = `${req.method} ${url.pathname}`;
    others.set(key, (others.get(key) ?? 0) + 1);
    if (url.pathname === "/health") return res.writeHead(204).end();
    if (url.pathname === "/v2/sandboxes") return json(200, "[]");
    return json(404, '{"code":404,"message":"not served by the retention bench"}');
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    counts,
    others,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
type FleetServer = Awaited<ReturnType<typeof serveFleet>>;

/** One storage tick as the exporter ran it (runCycle in the child). */
export interface TickFigures {
  tick: number;
  listPages: number;
  detailReads: number;
  /** Every other request of the cycle (GET /volumes, /health, the empty sandbox walk, 404s). */
  otherRequests: number;
  /** The child's runCycle: wall and CPU (user + system) of the exporter's process. */
  ms: number;
  cpuMs: number;
  /** The storage collector's own read (sandbox_exporter_collect_duration_seconds). */
  storageReadMs: number;
}

type Memory = Record<string, number>;

/** The child's memory after two full GCs a turn apart (the first still counts some garbage). */
async function memoryAfterGc(child: BenchChild): Promise<Memory> {
  let last: Memory = {};
  for (let i = 0; i < GCS_PER_READING; i++)
    last = (await child.call<{ afterGc: Memory }>("memory")).afterGc;
  return last;
}

/** Runs `ticks` cycles of `child`; each tick's requests as the server counted them. */
async function runTicks(child: BenchChild, server: FleetServer, ticks: number, from = 1) {
  const scraper = new ScrapeClient((child.ready as { url: string }).url);
  const out: TickFigures[] = [];
  try {
    for (let t = from; t < from + ticks; t++) {
      const before = { ...server.counts };
      const cycle = await child.call<{ ms: number; cpuMs: number }>("cycle");
      const c = server.counts;
      const text = await scraper.text();
      const read = /_exporter_collect_duration_seconds\{collector="storage"\} (\S+)/.exec(text);
      out.push({
        tick: t,
        listPages: c.list - before.list,
        detailReads: c.detail - before.detail,
        otherRequests: c.volumes - before.volumes + c.other - before.other,
        ms: cycle.ms,
        cpuMs: cycle.cpuMs,
        storageReadMs: Number(read?.[1]) * 1000,
      });
    }
  } finally {
    await scraper.close();
  }
  return out;
}

/** The storage ticks at a lifted budget: a whole pass, then STEADY_TICKS with details. */
async function liftedTicks(exporter: ExporterChild, server: FleetServer, passTicks: number) {
  const child = await forkChild(
    exporter.script,
    [server.url, ...FLAVOR, ...LIFTED_BUDGET],
    exporter.nodeFlags,
  );
  try {
    const start = await memoryAfterGc(child);
    const first = await runTicks(child, server, 1);
    const afterFirst = await memoryAfterGc(child);
    const rest = await runTicks(child, server, passTicks - 1, 2);
    const afterPass = await memoryAfterGc(child);
    const steady = await runTicks(child, server, STEADY_TICKS, passTicks + 1);
    const afterSteady = await memoryAfterGc(child);
    return {
      ticks: [...first, ...rest, ...steady],
      memoryMB: { start, afterFirstTick: afterFirst, afterPass, afterSteady },
    };
  } finally {
    await child.stop();
  }
}

/** Ticks of a child run with `flags`. */
async function childTicks(
  exporter: ExporterChild,
  server: FleetServer,
  ticks: number,
  flags: string[],
) {
  const child = await forkChild(exporter.script, [server.url, ...flags], exporter.nodeFlags);
  try {
    return await runTicks(child, server, ticks);
  } finally {
    await child.stop();
  }
}

/** What the defaults give for a whole pass and for the details, from the settings. */
function atDefaults(config: Config, snapshots: number, pagesMeasured: number) {
  const intervalMs = tickInterval(config.poll.schedule);
  const listMaxMs = config.poll.listMaxMs ?? intervalMs / 2;
  const backgroundPerS = config.platform.maxRequestsPerSecond * BACKGROUND_SHARE;
  const pages = Math.ceil(snapshots / SNAPSHOTS_PAGE_LIMIT);
  // A tick's background budget, shared by the details (read beside the list, at most
  // storageDetailsPerTick, started first) and the list's pages (the rest, up to the page limit).
  const budget = Math.floor((backgroundPerS * listMaxMs) / 1000);
  const detailsPerTick = Math.min(config.poll.storageDetailsPerTick, budget);
  const pagesPerTick = Math.min(config.poll.listPagesPerTick, budget - detailsPerTick);
  const passTicks = Math.ceil(pages / pagesPerTick);
  const hours = (ticks: number) => (ticks * intervalMs) / 3_600_000;
  const allDetailsTicks = Math.ceil(snapshots / detailsPerTick);
  const liftedDetailTicks = Math.ceil(snapshots / config.poll.storageDetailsPerTick);
  return {
    intervalMs,
    listMaxMs,
    maxRequestsPerSecond: config.platform.maxRequestsPerSecond,
    backgroundRequestsPerSecond: backgroundPerS,
    listPagesPerTick: config.poll.listPagesPerTick,
    storageDetailsPerTick: config.poll.storageDetailsPerTick,
    pages,
    pagesPerTick,
    pagesPerTickMeasured: pagesMeasured,
    passTicks,
    passMinutes: hours(passTicks) * 60,
    detailsPerTick,
    allDetailsTicks,
    allDetailsHours: hours(allDetailsTicks),
    liftedBudgetAllDetailsTicks: liftedDetailTicks,
    liftedBudgetAllDetailsHours: hours(liftedDetailTicks),
  };
}

/** Each snapshot with the details GET /templates/{id} gives, as the collector keeps them. */
function factsWithDetails(fleet: SnapshotFleet, now: number): Map<string, SnapshotFact> {
  const records = Array.from({ length: fleet.n }, (_, i) => {
    const r = fleet.record(i);
    return { id: r.snapshotID, names: r.names };
  });
  const facts = factsOf(records, undefined, now);
  records.forEach((r, i) => {
    const f = facts.get(r.id) as SnapshotFact;
    const detail = parseSnapshotDetail(fleet.detail(i));
    facts.set(r.id, {
      id: f.id,
      names: f.names,
      firstSeenAt: f.firstSeenAt,
      ...detail,
      detailAt: now,
    });
  });
  return facts;
}

/** A fresh snapshot of an empty fleet carrying `storage`, every collector just read. */
function snapshotOf(cycle: number, storage: StorageInventory, intervalMs: number): Snapshot {
  const now = systemClock.now();
  const status = (name: CollectorStatus["name"]): CollectorStatus => ({
    name,
    success: true,
    stale: false,
    lastAttemptAt: now,
    lastSuccessAt: now,
    staleAfter: now + 2 * intervalMs,
    durationMs: 0,
    requests: 0,
  });
  return {
    cycle,
    startedAt: now,
    finishedAt: now,
    sandboxes: [],
    sandboxesComplete: true,
    walked: true,
    refreshed: COLLECTORS,
    collectors: Object.fromEntries(COLLECTORS.map((n) => [n, status(n)])) as Snapshot["collectors"],
    health: { up: true },
    storage,
  };
}

/** A platform that refuses every call and notes it: the dry-run policy should make none. */
function noCalls(calls: string[]): PolicyPlatform & { listLogs: () => Promise<never> } {
  return new Proxy({} as PolicyPlatform & { listLogs: () => Promise<never> }, {
    get: (_t, name) => () => {
      calls.push(String(name));
      return Promise.reject(new Error(`the dry-run policy called ${String(name)}`));
    },
  });
}

/** One policy run: the engine's own time and this process's wall and CPU around it. */
export interface PolicyRunFigures {
  ms: number;
  cpuMs: number;
  engineMs: number;
  decisions: number;
  results: Record<string, number>;
  logLines: number;
  /** Longest the event loop waited while the run went on (the monitor's resolution included). */
  loopDelayMaxMs?: number;
}

function runFigures(run: PolicyRun, ms: number, cpu: NodeJS.CpuUsage, lines: number) {
  const results: Record<string, number> = {};
  for (const o of run.outcomes) {
    const k = o.result ?? "pending";
    results[k] = (results[k] ?? 0) + 1;
  }
  if (run.blocked || run.snapshots === "blocked") throw new Error("the policy run was blocked");
  return {
    ms,
    cpuMs: (cpu.user + cpu.system) / 1000,
    engineMs: run.durationMs,
    decisions: run.outcomes.length,
    results,
    logLines: lines,
  };
}

const SIDES = ["off", "on"] as const;
type Side = (typeof SIDES)[number];

/** One engine run, and the longest the event loop was held while it ran. */
async function timedRun(engine: PolicyEngine, snapshot: Snapshot, lines: () => number) {
  const loop = monitorEventLoopDelay({ resolution: LOOP_RESOLUTION_MS });
  const before = lines();
  loop.enable();
  // The monitor's timer starts on the loop's next turn: one before the run, one after it.
  await sleep(LOOP_SETTLE_MS);
  const c0 = process.cpuUsage();
  const w0 = performance.now();
  const run = await engine.run(snapshot);
  const ms = performance.now() - w0;
  const cpu = process.cpuUsage(c0);
  await sleep(LOOP_SETTLE_MS);
  loop.disable();
  return { ...runFigures(run, ms, cpu, lines() - before), loopDelayMaxMs: loop.max / 1e6 };
}

/** The rules' evaluation alone (evaluatePolicy, pure), carrying its memory from run to run. */
function timedEvaluation(
  spec: PolicySpec,
  memory: PolicyMemory,
  facts: ReadonlyMap<string, SnapshotFact>,
  states: StateSets,
) {
  const c0 = process.cpuUsage();
  const w0 = performance.now();
  const evaluation = evaluatePolicy({
    sandboxes: [],
    activity: new Map(),
    spec,
    states,
    memory,
    now: systemClock.now(),
    snapshots: { facts, inUse: new Set() },
  });
  const ms = performance.now() - w0;
  const cpu = process.cpuUsage(c0);
  return { ms, cpuMs: (cpu.user + cpu.system) / 1000, memory: evaluation.memory };
}

/** The inventory a complete storage read leaves, with details for every snapshot. */
function inventoryOf(config: Config, fleet: SnapshotFleet) {
  const now = systemClock.now();
  const t0 = performance.now();
  const facts = factsWithDetails(fleet, now);
  const buildMs = performance.now() - t0;
  const storage: StorageInventory = {
    snapshots: { count: facts.size, complete: true },
    unserved: {},
    facts,
    summary: summarize(facts, now, config.poll.storageMaxNames),
    firstSeen: 0,
    detailReads: { ok: facts.size, not_found: 0, failed: 0 },
    perSnapshotSeries: 0,
  };
  return { storage, facts, buildMs };
}

/** Engine runs and evaluations alone, off and on in turn on the same facts, each after a full GC. */
async function policyRuns(config: Config, fleet: SnapshotFleet, gc: () => void) {
  const intervalMs = tickInterval(config.poll.schedule);
  const { storage, facts, buildMs } = inventoryOf(config, fleet);
  const section = { ...config.policy, file: "rules.yaml" };
  const specs: Record<Side, PolicySpec> = {
    off: loadPolicySpec(section, () => SANDBOX_RULE),
    on: loadPolicySpec(section, () => SANDBOX_RULE + RETENTION_RULES),
  };
  let lines = 0;
  const logger = pino({ level: "info" }, { write: () => void lines++ });
  const calls: string[] = [];
  const engines: Partial<Record<Side, PolicyEngine>> = {};
  for (const side of SIDES)
    engines[side] = new PolicyEngine({
      spec: specs[side],
      platform: noCalls(calls),
      clock: systemClock,
      logger,
      registry: new Registry(),
      namespace: "sandbox",
      states: config.states,
      defaultRunTimeMs: intervalMs,
    });
  const runs: Record<Side, PolicyRunFigures[]> = { off: [], on: [] };
  const evaluations: Record<Side, { ms: number; cpuMs: number }[]> = { off: [], on: [] };
  const memory: Record<Side, PolicyMemory> = { off: EMPTY_MEMORY, on: EMPTY_MEMORY };
  const states = { running: new Set(config.states.running), paused: new Set(config.states.paused) };
  for (let i = 0; i < POLICY_RUNS; i++) {
    for (const side of i % 2 === 0 ? SIDES : ([...SIDES].reverse() as Side[])) {
      gc();
      const snapshot = snapshotOf(i + 1, storage, intervalMs);
      runs[side].push(await timedRun(engines[side] as PolicyEngine, snapshot, () => lines));
      gc();
      const { memory: next, ...evaluation } = timedEvaluation(
        specs[side],
        memory[side],
        facts,
        states,
      );
      memory[side] = next;
      evaluations[side].push(evaluation);
    }
  }
  const heap = () => {
    for (let i = 0; i < GCS_PER_READING; i++) gc();
    return process.memoryUsage().heapUsed / 2 ** 20;
  };
  if (calls.length > 0) throw new Error(`the dry-run policy called ${calls.join(", ")}`);
  const withOn = heap();
  delete engines.on;
  const heldByOnEngineMB = withOn - heap();
  return { factsBuildMs: buildMs, runs, evaluations, heldByOnEngineMB };
}

/** A full GC: --expose-gc set at run time (the bench runs under tsx). */
function exposeGc(): () => void {
  setFlagsFromString("--expose-gc");
  return runInNewContext("gc") as () => void;
}

/** The whole case: storage ticks in exporter children, then the policy runs in this process. */
export async function retentionCase(exporter: ExporterChild, snapshots: number) {
  const gc = exposeGc();
  const { config } = loadConfig({ argv: FLAVOR, env: { SANDBOX_API_URL: "http://127.0.0.1:1" } });
  const fleet = new SnapshotFleet(snapshots, systemClock.now());
  const passTicks = Math.ceil(snapshots / SNAPSHOTS_PAGE_LIMIT / config.poll.listPagesPerTick);
  const server = await serveFleet(fleet);
  let lifted: Awaited<ReturnType<typeof liftedTicks>>;
  let control: TickFigures[];
  let defaultTick: TickFigures[];
  try {
    lifted = await liftedTicks(exporter, server, passTicks);
    control = await childTicks(exporter, server, CONTROL_TICKS, [
      ...FLAVOR.filter((f) => f !== "--poll-storage"),
      ...LIFTED_BUDGET,
    ]);
    defaultTick = await childTicks(exporter, server, 1, FLAVOR);
  } finally {
    await server.close();
  }
  const small = await serveFleet(new SnapshotFleet(SCALED.snapshots, systemClock.now()));
  let scaled: TickFigures[];
  try {
    scaled = await childTicks(exporter, small, SCALED.ticks, [
      ...FLAVOR,
      "--poll-schedule",
      SCALED.schedule,
    ]);
  } finally {
    await small.close();
  }
  const policy = await policyRuns(config, fleet, gc);
  return {
    snapshots,
    nodeFlags: { exporterChild: ["--expose-gc", ...exporter.nodeFlags], bench: process.execArgv },
    otherRequestsSeen: Object.fromEntries(server.others),
    lifted: { ...lifted, passTicks, storageOff: control },
    defaultBudget: {
      firstTick: defaultTick[0],
      computed: atDefaults(config, snapshots, defaultTick[0]?.listPages ?? Number.NaN),
    },
    scaledDefaultBudget: { ...SCALED, ticks: scaled },
    policy,
    measured:
      "ticks: the exporter compiled, in its own process (--flavor e2b --poll-storage), one runCycle each, requests counted by the loopback server, wall and CPU (user + system) of the child around runCycle, readMs the storage collector's own read; memory after two forced GCs a turn apart. defaultBudget.computed: from the settings' defaults and the limiter's BACKGROUND_SHARE, one tick run. policy: facts built directly with factsOf and parseSnapshotDetail (details for all), PolicyEngine.run and evaluatePolicy alone in this process under tsx, off and on in turn, each after a full GC; loopDelayMaxMs from monitorEventLoopDelay (10 ms resolution)",
  };
}
export type RetentionFigures = Awaited<ReturnType<typeof retentionCase>>;

const cell = (v: number | string | undefined, w = 9) =>
  (typeof v === "number" ? (Number.isInteger(v) ? String(v) : v.toFixed(1)) : (v ?? "")).padStart(
    w,
  );

/** The median tick of `ticks` (each figure its own median). */
function medianTick(ticks: readonly TickFigures[]): Omit<TickFigures, "tick"> {
  const m = (k: keyof Omit<TickFigures, "tick">) => median(ticks.map((t) => t[k]));
  return {
    listPages: m("listPages"),
    detailReads: m("detailReads"),
    otherRequests: m("otherRequests"),
    ms: m("ms"),
    cpuMs: m("cpuMs"),
    storageReadMs: m("storageReadMs"),
  };
}

function tickRow(label: string, t: Omit<TickFigures, "tick"> | undefined): void {
  if (!t) return;
  console.log(
    `${label.padEnd(38)}${cell(t.listPages)}${cell(t.detailReads)}${cell(t.otherRequests)}${cell(t.ms)}${cell(t.cpuMs)}${cell(t.storageReadMs)}`,
  );
}

/** The printed table of the retention case. */
export function printRetention(r: RetentionFigures): void {
  const { ticks, passTicks, memoryMB } = r.lifted;
  console.log(
    `\nstorage ticks, budget lifted, ${r.snapshots} snapshots (exporter child, runCycle)\n`,
  );
  console.log(
    `${"tick".padEnd(38)}${cell("pages")}${cell("details")}${cell("other")}${cell("wall ms")}${cell("CPU ms")}${cell("read ms")}`,
  );
  tickRow(passTicks === 1 ? "1 (the pass ends: one tick)" : "1 (first)", ticks[0]);
  if (passTicks > 2)
    tickRow(`2-${passTicks - 1}, median`, medianTick(ticks.slice(1, passTicks - 1)));
  if (passTicks > 1) tickRow(`${passTicks} (the pass ends)`, ticks[passTicks - 1]);
  tickRow(
    `${passTicks + 1}-${ticks.length} (next pass, details), median`,
    medianTick(ticks.slice(passTicks)),
  );
  tickRow(
    `storage off, ticks 2-${r.lifted.storageOff.length}, median`,
    medianTick(r.lifted.storageOff.slice(1)),
  );
  for (const [k, m] of Object.entries(memoryMB))
    console.log(
      `memory after 2 GCs, ${k.padEnd(16)} RSS ${cell(m.rss, 6)} MB, heap used ${cell(m.heapUsed, 6)} MB`,
    );
  const d = r.defaultBudget;
  const c = d.computed;
  console.log(
    `\nat the defaults (${c.maxRequestsPerSecond}/s, ${c.backgroundRequestsPerSecond}/s background, list ${c.listMaxMs} ms a tick, ${c.storageDetailsPerTick} details a tick)\n`,
  );
  tickRow("one tick, measured", d.firstTick);
  console.log(
    `pages a tick ${c.pagesPerTick} (computed; ${c.pagesPerTickMeasured} measured): a pass of ${c.pages} pages in ${c.passTicks} ticks (${c.passMinutes.toFixed(1)} min); details beside the list: ${c.detailsPerTick} a tick, all ${r.snapshots} in ${c.allDetailsTicks} ticks (${c.allDetailsHours.toFixed(1)} h); budget lifted: ${c.liftedBudgetAllDetailsTicks} ticks (${c.liftedBudgetAllDetailsHours.toFixed(1)} h)`,
  );
  const s = r.scaledDefaultBudget;
  console.log(
    `\nscaled check at the default budget: ${s.snapshots} snapshots, schedule ${s.schedule}\n`,
  );
  for (const t of s.ticks) tickRow(`tick ${t.tick}`, t);
  const p = r.policy;
  console.log(
    `\npolicy run on ${r.snapshots} snapshots with details (facts built in ${p.factsBuildMs.toFixed(0)} ms), dry-run, in this process, each after a full GC\n`,
  );
  console.log(
    `${"run".padEnd(38)}${cell("wall ms")}${cell("CPU ms")}${cell("engine")}${cell("loop max")}${cell("decisions", 10)}${cell("log", 6)}  results`,
  );
  const show = (label: string, x: Partial<PolicyRunFigures> | undefined) =>
    x &&
    console.log(
      `${label.padEnd(38)}${cell(x.ms)}${cell(x.cpuMs)}${cell(x.engineMs)}${cell(x.loopDelayMaxMs)}${cell(x.decisions, 10)}${cell(x.logLines, 6)}  ${x.results ? JSON.stringify(x.results) : ""}`,
    );
  for (const side of SIDES) {
    const runs = p.runs[side];
    const rest = runs.slice(1);
    const med = (k: "ms" | "cpuMs" | "engineMs") => median(rest.map((x) => x[k]));
    show(`retention ${side}, run 1`, runs[0]);
    show(`retention ${side}, runs 2-${runs.length}, median`, {
      ms: med("ms"),
      cpuMs: med("cpuMs"),
      engineMs: med("engineMs"),
      loopDelayMaxMs: median(rest.map((x) => x.loopDelayMaxMs ?? Number.NaN)),
    });
    show(`retention ${side}, run ${runs.length}`, runs[runs.length - 1]);
    const ev = p.evaluations[side].slice(1);
    show(`evaluatePolicy alone, ${side}, median`, {
      ms: median(ev.map((x) => x.ms)),
      cpuMs: median(ev.map((x) => x.cpuMs)),
    });
  }
  console.log(`heap the "on" engine holds after its runs: ${p.heldByOnEngineMB.toFixed(1)} MB`);
}
