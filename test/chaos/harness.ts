// An exporter started in-process against the hostile upstream, logging into memory, and the
// checks every chaos case shares: /metrics, /status, secret leaks, memory.
import type { DestinationStream } from "pino";
import { type Exporter, startExporter } from "../../src/app.js";
import { loadConfig } from "../../src/catalog.js";
import { redactConfig } from "../../src/config/load.js";
import type { Config } from "../../src/config/settings.js";
import { systemClock } from "../../src/util/clock.js";
import { createLogger } from "../../src/util/logger.js";
import { type Fleet, makeFleet } from "./fleet.js";
import { startUpstream, type Upstream } from "./upstream.js";

/** A key no honest code path prints; every leak check looks for it, case-insensitively. */
export const API_KEY = "sk-chaos-SECRET-1234567890";
/** Per-request timeout of the control channel: hangs and drips end this fast. */
export const TIMEOUT = "1s";
const KEPT_LINES = 5_000;
const KEPT_LINE_CHARS = 4_096;

/** A pino destination in memory: every line is checked for the key, a bounded tail is kept. */
export class LogSink implements DestinationStream {
  /** The last lines written (each cut to 4 KB). */
  readonly lines: string[] = [];
  written = 0;
  /** Lines that held the API key, cut to 500 characters for failure messages. */
  readonly leaks: string[] = [];

  write(msg: string): void {
    this.written++;
    if (hasKey(msg)) this.leaks.push(msg.slice(0, 500));
    this.lines.push(msg.length > KEPT_LINE_CHARS ? msg.slice(0, KEPT_LINE_CHARS) : msg);
    if (this.lines.length > KEPT_LINES) this.lines.splice(0, this.lines.length - KEPT_LINES);
  }

  /** Parsed lines whose message is `msg`. */
  find(msg: string): Array<Record<string, unknown>> {
    return this.lines
      .filter((l) => l.includes(`"msg":"${msg}"`))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  }
}

/** Occurrences of the API key in `text`, in any letter case. */
export function keyCount(text: string): number {
  return text.toLowerCase().split(API_KEY.toLowerCase()).length - 1;
}

function hasKey(text: string): boolean {
  return keyCount(text) > 0;
}

/** An upstream, an exporter wired to it (manual cycles) and the exporter's log. */
export interface Rig {
  up: Upstream;
  e: Exporter;
  log: LogSink;
  config: Config;
  stop(): Promise<void>;
}

/** What to start. */
export interface RigOptions {
  fleet?: Fleet;
  /** Extra exporter flags (after the defaults, so they win). */
  argv?: string[];
  /** Files loadConfig and the policy loader may read (name -> text). */
  files?: Record<string, string>;
  pageCap?: number;
}

/** The flags every chaos exporter gets: loopback, no retries, a short timeout, the agent port. */
export function baseArgv(up: Upstream): string[] {
  return [
    ...["--listen", "127.0.0.1:0", "--retries", "0", "--timeout", TIMEOUT],
    ...["--page-limit", "100", "--log-level", "trace"],
    ...["--proxy-node-ip", "127.0.0.1", "--proxy-port-http", String(up.dataPort)],
    ...["--proxy-scheme", "http"],
  ];
}

/** Builds the exporter's config the way the CLI does, from flags and the environment. */
export function configFor(up: Upstream, argv: string[], files: Record<string, string> = {}) {
  return loadConfig({
    argv: [...baseArgv(up), ...argv],
    env: { SANDBOX_API_URL: up.apiUrl, SANDBOX_API_KEY: API_KEY, SANDBOX_DOMAIN: up.domain },
    readFile: (path) => {
      const text = files[path];
      if (text === undefined) throw new Error(`ENOENT: ${path}`);
      return text;
    },
  }).config;
}

/** Starts an exporter on `up` logging into a fresh sink (as the CLI logs, "starting" line included). */
export async function exporterOn(
  up: Upstream,
  argv: string[] = [],
  files: Record<string, string> = {},
): Promise<{ e: Exporter; log: LogSink; config: Config }> {
  const config = configFor(up, argv, files);
  const log = new LogSink();
  const logger = createLogger(config.log.level, "json", log);
  logger.info({ config: redactConfig(config) }, "starting");
  const e = await startExporter(config, {
    logger,
    clock: systemClock,
    manual: true,
    readFile: (path) => {
      const text = files[path];
      if (text === undefined) throw new Error(`ENOENT: ${path}`);
      return text;
    },
  });
  return { e, log, config };
}

/** Starts an upstream over `fleet` (default 250 sandboxes) and an exporter against it. */
export async function startRig(o: RigOptions = {}): Promise<Rig> {
  const up = await startUpstream({
    apiKey: API_KEY,
    fleet: o.fleet ?? makeFleet(250),
    ...(o.pageCap ? { pageCap: o.pageCap } : {}),
  });
  try {
    const { e, log, config } = await exporterOn(up, o.argv ?? [], o.files ?? {});
    return {
      up,
      e,
      log,
      config,
      async stop() {
        await e.stop();
        await up.close();
      },
    };
  } catch (err) {
    await up.close();
    throw err;
  }
}

/** One GET of the exporter's listener. */
export async function get(
  rig: Pick<Rig, "e">,
  path: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; text: string; contentType: string }> {
  const res = await fetch(`${rig.e.server.url}${path}`, { headers });
  return {
    status: res.status,
    text: await res.text(),
    contentType: res.headers.get("content-type") ?? "",
  };
}

export const OPENMETRICS = "application/openmetrics-text; version=1.0.0";

/** One collector's part of /status. */
export interface CollectorReport {
  success: boolean;
  stale: boolean;
  error: { code: string; message: string } | null;
}

/** The parts of /status the chaos cases read. */
export interface StatusDoc {
  ready: boolean;
  sandboxes: number | null;
  sandboxesComplete: boolean;
  collectors: Record<string, CollectorReport>;
  probe?: {
    modules: Array<{
      module: string;
      runs: number;
      recentFailures: Array<{ phase: string; reason: string; error: string }>;
    }>;
    lastSweep: { deleted: number; error: string | null } | null;
  };
}

export async function statusOf(rig: Pick<Rig, "e">): Promise<{ doc: StatusDoc; text: string }> {
  const r = await get(rig, "/status");
  return { doc: JSON.parse(r.text) as StatusDoc, text: r.text };
}

/** Where the API key showed up: log lines, /status bytes, /metrics bytes (both formats). */
export interface Leaks {
  logLines: number;
  status: number;
  metrics: number;
  openMetrics: number;
  /** The first few leaking log lines, for the failure message. */
  examples: string[];
}

export async function leaks(rig: Pick<Rig, "e" | "log">): Promise<Leaks> {
  const [status, metrics, om] = await Promise.all([
    get(rig, "/status"),
    get(rig, "/metrics"),
    get(rig, "/metrics", { accept: OPENMETRICS }),
  ]);
  const examples = [...rig.log.leaks.slice(0, 3)];
  for (const [what, text] of [
    ["status", status.text],
    ["metrics", metrics.text],
  ] as const) {
    const at = text.toLowerCase().indexOf(API_KEY.toLowerCase());
    if (at >= 0) examples.push(`${what}: ...${text.slice(Math.max(0, at - 200), at + 60)}...`);
  }
  return {
    logLines: rig.log.leaks.length,
    status: keyCount(status.text),
    metrics: keyCount(metrics.text),
    openMetrics: keyCount(om.text),
    examples,
  };
}

/** Resident set size in MB. */
export function rssMb(): number {
  return process.memoryUsage().rss / 1_048_576;
}

/** Polls `check` every 25 ms until it holds or `tries` polls ran out; its last value. */
export async function until<T>(check: () => T | Promise<T>, tries = 200): Promise<T> {
  let v = await check();
  for (let i = 0; i < tries && !v; i++) {
    await new Promise((r) => setTimeout(r, 25));
    v = await check();
  }
  return v;
}

/** A policy rule file for the chaos fleet: pause running sandboxes labelled chaos=idle. */
export const IDLE_CHAOS_RULES = `
consecutiveCycles: 1
maxMatchPercent: 100
rules:
  - name: idle-chaos
    match:
      states: [running]
      metadata: ["chaos=idle"]
    idleFor: 30m
    action: pause
`;
