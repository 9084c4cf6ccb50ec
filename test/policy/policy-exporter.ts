// An exporter with the policy on, against the simulator over loopback on a shared fake clock,
// its log lines captured (debug and up) and its rule file held in memory.
import { Writable } from "node:stream";
import { pino } from "pino";
import { Agent, type Dispatcher } from "undici";
import { type Exporter, startExporter } from "../../src/app.js";
import { loadConfig } from "../../src/catalog.js";
import { type Simulator, startSimulator } from "../../src/simulator/index.js";
import { FakeClock } from "../../src/util/clock.js";

export const T0 = Date.parse("2026-11-23T12:00:00Z");
export const MIN = 60_000;

/**
 * A rule file of one dry-run rule `idle` that pauses running sandboxes quiet for `idleFor`, acting
 * on the first cycle, with no share limit; `extra` adds rule fields (YAML lines, indented 4).
 */
export function idleRules(
  o: { idleFor?: string; maxActions?: number; extra?: string } = {},
): string {
  return `
maxMatchPercent: 100
consecutiveCycles: 1
maxActionsPerCycle: ${o.maxActions ?? 100}
rules:
  - name: idle
    match: { states: [running] }
    idleFor: ${o.idleFor ?? "30m"}
    action: pause
    dryRun: true
${o.extra ?? ""}`;
}

/** pino's numeric levels. */
export const DEBUG = 20;
export const INFO = 30;
export const WARN = 40;

export interface PolicySetup {
  sim: Simulator;
  clock: FakeClock;
  exporter: Exporter;
  /** Every line logged, parsed. */
  lines: Array<Record<string, unknown>>;
  /** The rule file as the next reload reads it. */
  files: Map<string, string>;
  close(): Promise<void>;
}

/**
 * Starts a simulator holding `idle` running sandboxes whose only log line is two hours old,
 * and an exporter whose policy reads `rules` (manual cycles), sending through `dispatcher`.
 */
export async function startPolicy(
  rules: string,
  idle: number,
  dispatcher: (sim: Simulator) => Dispatcher = () => new Agent(),
): Promise<PolicySetup> {
  const clock = new FakeClock(T0);
  const sim = await startSimulator({ sandboxes: 0, clock });
  const template = sim.state.templates[0]?.templateID as string;
  for (let i = 0; i < idle; i++)
    sim.state.addSandbox({
      sandboxID: `sbx-${String(i).padStart(3, "0")}`,
      templateID: template,
      state: "running",
      startedAt: T0 - 3 * 60 * MIN,
      logs: [{ timestamp: T0 - 120 * MIN, line: "work", level: "info" }],
    });
  const { config } = loadConfig({
    argv: ["--listen", "127.0.0.1:0", "--retries", "0", "--policy", "rules.yaml"],
    env: { SANDBOX_API_URL: sim.apiUrl, SANDBOX_DOMAIN: sim.domain },
  });
  const files = new Map([["rules.yaml", rules]]);
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      lines.push(JSON.parse(String(chunk)) as Record<string, unknown>);
      done();
    },
  });
  const exporter = await startExporter(config, {
    logger: pino({ level: "debug" }, sink),
    clock,
    dispatcher: dispatcher(sim),
    manual: true,
    readFile: (path) => {
      const text = files.get(path);
      if (text === undefined) throw new Error(`ENOENT: ${path}`);
      return text;
    },
  });
  return {
    sim,
    clock,
    exporter,
    lines,
    files,
    close: async () => {
      await exporter.stop();
      await sim.close();
    },
  };
}

/** `dispatch` through an agent, with `before` told of each request first (its method and path). */
export function watching(
  before: (method: string, path: string) => Promise<void> | void,
): Dispatcher {
  return new Agent().compose((dispatch) => (opts, handler) => {
    const waited = before(String(opts.method), String(opts.path));
    if (!waited) return dispatch(opts, handler);
    // The request leaves once the hook's work is done (a reload landing mid-run).
    void waited.then(
      () => dispatch(opts, handler),
      (err: unknown) => handler.onError?.(err as Error),
    );
    return true;
  });
}
