// A real Prometheus (the Debian binary) as a child process on loopback, for end-to-end tests.
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { type AddressInfo, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { parse, stringify } from "yaml";

/** Where Debian's `prometheus` package (installed by .ci/run) puts the server. */
export const PROMETHEUS_BIN = "/usr/bin/prometheus";
/** The largest share of a run's output kept for failure messages. */
const MAX_OUTPUT_CHARS = 200_000;

export interface PrometheusOptions {
  /** Job name of the one scrape config (the rules select on it). */
  job: string;
  /** host:port targets of that job. */
  targets: string[];
  /** Absolute paths of rule files. */
  ruleFiles: string[];
  /** Scrape and evaluation interval, e.g. "1s". */
  interval: string;
  /** How long to wait for /-/ready. */
  readyTimeoutMs?: number;
  /** Extra command-line flags, e.g. `--enable-feature=exemplar-storage`. */
  flags?: readonly string[];
}

export interface RunningPrometheus {
  /** http://127.0.0.1:port */
  readonly url: string;
  /** Everything Prometheus printed so far (stdout and stderr). */
  output(): string;
  /** GET a path of the HTTP API and return the parsed `data` of a success answer. */
  api<T = unknown>(path: string): Promise<T>;
  /** Kills the process, waits for its exit and removes its directory. */
  stop(): Promise<void>;
}

/** A free TCP port on 127.0.0.1 (released before returning; Prometheus binds it next). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/**
 * Copies every `*.yml` rule file of `dir` into `dest` with each rule's `for:` replaced by `forValue`,
 * so alerts meant to wait minutes fire within a test. Returns the copies' paths.
 */
export function copyRulesWithShortFor(dir: string, dest: string, forValue: string): string[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith(".yml") || f.endsWith(".yaml"))
    .map((f) => {
      const doc = parse(readFileSync(join(dir, f), "utf8")) as {
        groups: { rules: Record<string, unknown>[] }[];
      };
      for (const group of doc.groups)
        for (const rule of group.rules) if ("for" in rule) rule.for = forValue;
      const out = join(dest, f);
      writeFileSync(out, stringify(doc));
      return out;
    });
}

/** Starts Prometheus with a generated config and waits until it is ready. */
export async function startPrometheus(o: PrometheusOptions): Promise<RunningPrometheus> {
  if (!existsSync(PROMETHEUS_BIN))
    throw new Error(
      `${PROMETHEUS_BIN} is missing: install Debian's prometheus package (apt-get install prometheus; .ci/run does)`,
    );
  const dir = mkdtempSync(join(tmpdir(), "prometheus-e2e-"));
  const config = join(dir, "prometheus.yml");
  writeFileSync(
    config,
    stringify({
      global: { scrape_interval: o.interval, evaluation_interval: o.interval },
      rule_files: o.ruleFiles,
      scrape_configs: [
        { job_name: o.job, scrape_timeout: o.interval, static_configs: [{ targets: o.targets }] },
      ],
    }),
  );
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child = spawn(
    PROMETHEUS_BIN,
    [
      `--config.file=${config}`,
      `--storage.tsdb.path=${join(dir, "data")}`,
      `--web.listen-address=127.0.0.1:${port}`,
      "--log.level=info",
      ...(o.flags ?? []),
    ],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  let output = "";
  const keep = (b: Buffer): void => {
    output = (output + b.toString()).slice(-MAX_OUTPUT_CHARS);
  };
  child.stdout?.on("data", keep);
  child.stderr?.on("data", keep);
  let running = true;
  const exited = new Promise<void>((resolve) => {
    child.once("exit", () => resolve());
    child.once("error", (err) => {
      output += `\nspawn error: ${String(err)}`;
      resolve();
    });
  }).then(() => {
    running = false;
  });

  const prom: RunningPrometheus = {
    url,
    output: () => output,
    async api<T>(path: string): Promise<T> {
      const res = await fetch(`${url}${path}`);
      const body = (await res.json()) as { status: string; data?: T; error?: string };
      if (body.status !== "success") throw new Error(`${path}: ${body.error ?? res.status}`);
      return body.data as T;
    },
    async stop() {
      if (running) await stopChild(child, exited);
      rmSync(dir, { recursive: true, force: true });
    },
  };
  try {
    await waitReady(url, () => running, o.readyTimeoutMs ?? 20_000);
  } catch (err) {
    await prom.stop();
    throw new Error(`${(err as Error).message}\n--- prometheus output ---\n${output}`);
  }
  return prom;
}

async function waitReady(url: string, running: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (let attempt = 0; Date.now() < deadline; attempt++) {
    if (!running()) throw new Error("prometheus exited before it was ready");
    const ok = await fetch(`${url}/-/ready`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return;
    await sleep(Math.min(50 * 2 ** attempt, 500));
  }
  throw new Error(`prometheus not ready at ${url} within ${timeoutMs} ms`);
}

async function stopChild(child: ChildProcess, exited: Promise<void>): Promise<void> {
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
  await exited;
  clearTimeout(timer);
}
