// `npm run demo -- --prometheus`: a real Prometheus (Debian's package puts it at
// /usr/bin/prometheus) scraping the demo's exporter with the shipped alert and recording rules, so
// the rules, their alerts and the dashboards' queries can be seen against the demo.
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";

/** Where Debian's `prometheus` package puts the server. */
export const PROMETHEUS_BIN = "/usr/bin/prometheus";
/** Where the demo's Prometheus listens unless `--prometheus=HOST:PORT` says otherwise. */
export const DEMO_PROMETHEUS_LISTEN = "127.0.0.1:9090";
/** The shipped rules: every file of this folder is loaded. */
export const RULES_DIR = fileURLToPath(new URL("../../deploy/prometheus/rules", import.meta.url));
/** The job name the shipped rules select on (SandboxExporterAbsent, SandboxExporterDown). */
const JOB = "sandbox-exporter";
/** Scrape and rule evaluation interval: the demo polls every 5 s. */
const INTERVAL = "5s";
const READY_POLL_MS = 250;
const READY_TIMEOUT_MS = 30_000;
/** The tail of Prometheus' output kept to explain an early exit. */
const MAX_OUTPUT_CHARS = 4_000;

/** The configuration: the demo's exporter at `target` (host:port), scraped with the shipped rules. */
export function demoPrometheusConfig(target: string, rulesDir = RULES_DIR): string {
  return [
    "global:",
    `  scrape_interval: ${INTERVAL}`,
    `  evaluation_interval: ${INTERVAL}`,
    "rule_files:",
    `  - ${JSON.stringify(join(rulesDir, "*.yml"))}`,
    "scrape_configs:",
    `  - job_name: ${JOB}`,
    "    static_configs:",
    `      - targets: [${JSON.stringify(target)}]`,
    "",
  ].join("\n");
}

/** A running Prometheus of the demo. */
export interface DemoPrometheus {
  /** http://host:port */
  readonly url: string;
  /** Stops it (SIGTERM) and waits for its exit. */
  stop(): Promise<void>;
}

/**
 * Starts Prometheus on `listen` with its config and data in `dir`, scraping `target`, and waits
 * until it is ready. Throws, with the end of its output, when the binary is missing or it exits.
 */
export async function startDemoPrometheus(
  target: string,
  listen: string,
  dir: string,
  bin = PROMETHEUS_BIN,
): Promise<DemoPrometheus> {
  if (!existsSync(bin))
    throw new Error(`${bin} not found: install Prometheus (Debian: apt-get install prometheus)`);
  const config = join(dir, "prometheus.yml");
  writeFileSync(config, demoPrometheusConfig(target));
  const child = spawn(
    bin,
    [
      `--config.file=${config}`,
      `--storage.tsdb.path=${join(dir, "prometheus-data")}`,
      `--web.listen-address=${listen}`,
      "--log.level=warn",
    ],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  let output = "";
  const keep = (b: Buffer): void => {
    output = (output + b.toString()).slice(-MAX_OUTPUT_CHARS);
  };
  child.stdout?.on("data", keep);
  child.stderr?.on("data", keep);
  const exited = new Promise<string>((resolve) => {
    child.once("exit", (code, signal) => resolve(`exited (${signal ?? code})`));
    child.once("error", (err) => resolve(`did not start (${err.message})`));
  });
  const url = `http://${listen}`;
  const ready = await untilReady(url, exited);
  if (ready !== true) {
    child.kill("SIGKILL");
    throw new Error(`prometheus ${ready}: ${output.trim().split("\n").slice(-3).join(" | ")}`);
  }
  return { url, stop: () => stop(child, exited) };
}

/** Polls /-/ready (an external process: short sleeps, bounded) until it answers 200 or exits. */
async function untilReady(url: string, exited: Promise<string>): Promise<true | string> {
  let gone: string | undefined;
  void exited.then((why) => {
    gone = why;
  });
  for (let i = 0; i < READY_TIMEOUT_MS / READY_POLL_MS; i++) {
    if (gone !== undefined) return gone;
    const ok = await fetch(`${url}/-/ready`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return true;
    await sleep(READY_POLL_MS);
  }
  return gone ?? `not ready within ${READY_TIMEOUT_MS / 1000} s`;
}

async function stop(child: ChildProcess, exited: Promise<string>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill("SIGTERM");
  await exited;
}
