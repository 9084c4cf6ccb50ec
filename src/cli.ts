#!/usr/bin/env node
// Entry point: parse flags and environment, build the config, start the parts, handle signals.
import { closeSync, openSync, readSync } from "node:fs";
import { hostname } from "node:os";
import { type Exporter, startExporter } from "./app.js";
import { helpText, loadConfig, TICK_COLLECTORS } from "./catalog.js";
import { ConfigError, type LoadedConfig, redactConfig } from "./config/load.js";
import type { Config } from "./config/settings.js";
import { loadPolicySpec, PolicyFileError } from "./policy/policy-file.js";
import { allRules, type PolicySpec, readsStorage } from "./policy/policy-settings.js";
import { systemClock } from "./util/clock.js";
import { createLogger } from "./util/logger.js";
import { Secrets } from "./util/secrets.js";
import { VERSION } from "./version.js";

/** Exit code for unusable configuration. */
const EXIT_CONFIG = 2;
/** A stuck shutdown is cut off after this long. */
const SHUTDOWN_DEADLINE_MS = 10_000;

/** Config, key and rule files are small; a bigger one is a mistake (or /dev/zero), not a config. */
const MAX_FILE_BYTES = 1024 * 1024;
const READ_CHUNK_BYTES = 64 * 1024;

/** Reads a settings file as UTF-8, refusing one over MAX_FILE_BYTES before holding it in memory. */
function readUtf8(path: string): string {
  const fd = openSync(path, "r");
  try {
    const chunks: Buffer[] = [];
    let total = 0;
    for (;;) {
      const chunk = Buffer.allocUnsafe(READ_CHUNK_BYTES);
      const n = readSync(fd, chunk, 0, chunk.length, null);
      if (n === 0) break;
      total += n;
      if (total > MAX_FILE_BYTES) throw new Error(`larger than ${MAX_FILE_BYTES} bytes`);
      chunks.push(chunk.subarray(0, n));
    }
    return Buffer.concat(chunks, total).toString("utf8");
  } finally {
    closeSync(fd);
  }
}

/** Loads config from argv and the environment, printing problems and exiting 2 on failure. */
export function loadOrExit(argv: string[], env: Record<string, string | undefined>): LoadedConfig {
  try {
    return loadConfig({ argv, env, readFile: readUtf8, requireApi: true, hostname: hostname() });
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`sandbox-exporter: invalid configuration\n${err.format()}\n`);
      process.exit(EXIT_CONFIG);
    }
    throw err;
  }
}

/** What a caller of `main` adds to the process around the exporter (the demo: its simulator). */
export interface MainHooks {
  /** Runs on SIGTERM or SIGINT once the exporter stopped, before the process exits. */
  afterStop?: () => Promise<void>;
}

/**
 * The start-up line: what runs and against what, in one line. The whole configuration (redacted)
 * goes to debug. `policy`: the effective rules (config and rule file), when the policy is on.
 */
export function startupSummary(config: Config, policy?: PolicySpec): Record<string, unknown> {
  const { platform, poll, probe, shard, metrics } = config;
  const api = new URL(platform.apiUrl);
  return {
    version: VERSION,
    flavor: platform.flavor,
    // Origin and path only: no user info or query reaches the log.
    api: `${api.origin}${api.pathname === "/" ? "" : api.pathname}`,
    listen: config.server.listen,
    poll: poll.schedule.text,
    // Scalars only: pretty logs print each on one line.
    optIn: optInPolls(poll, policy).join(",") || "none",
    perSandboxMetrics: metrics.perSandboxMetrics,
    ...(shard.total > 1 ? { shard: `${shard.index}/${shard.total}` } : {}),
    probe: probe.enabled ? probe.modules.map((m) => m.name).join(",") : "off",
    policy: config.policy.enabled
      ? `${config.policy.file ?? "inline rules"}${policyMode(policy)}`
      : "off",
    cost: config.cost.enabled ? config.cost.currency : "off",
  };
}

/**
 * The opt-in reads turned on: the registry's opt-in collectors, then usage (after the walk). A
 * retention rule turns the storage inventory on, as poll.storage does.
 */
function optInPolls(poll: Config["poll"], policy?: PolicySpec): string[] {
  const read = { ...poll, storage: readsStorage(poll, policy) };
  const on = TICK_COLLECTORS.flatMap((c) => (c.optIn && read[c.optIn] === true ? [c.optIn] : []));
  return poll.usage ? [...on, "usage"] : on;
}

/** ` (dry-run)` when no rule acts, ` (acting)` when every one does, else the rules that act. */
function policyMode(policy: PolicySpec | undefined): string {
  if (policy === undefined) return "";
  const rules = allRules(policy);
  const acting = rules.filter((r) => !r.dryRun).map((r) => r.name);
  if (acting.length === 0) return policy.dryRun || rules.length > 0 ? " (dry-run)" : "";
  return acting.length === rules.length ? " (acting)" : ` (acting: ${acting.join(",")})`;
}

/** The effective policy rules for the start-up line; an unusable rule file exits 2. */
function policyOrExit(config: Config): PolicySpec | undefined {
  if (!config.policy.enabled) return undefined;
  try {
    return loadPolicySpec(config.policy, readUtf8);
  } catch (err) {
    if (err instanceof PolicyFileError) exitInvalidPolicy(err);
    throw err;
  }
}

function exitInvalidPolicy(err: PolicyFileError): never {
  process.stderr.write(`sandbox-exporter: invalid policy\n${err.message}\n`);
  process.exit(EXIT_CONFIG);
}

/** Runs the daemon until SIGTERM or SIGINT. */
export async function main(
  argv: string[],
  env: Record<string, string | undefined>,
  hooks: MainHooks = {},
): Promise<Exporter | undefined> {
  const loaded = loadOrExit(argv, env);
  if (loaded.help) {
    process.stdout.write(helpText());
    return undefined;
  }
  if (loaded.version) {
    process.stdout.write(`sandbox-exporter ${VERSION}\n`);
    return undefined;
  }
  const { config } = loaded;
  const secrets = new Secrets([config.platform.apiKey]);
  const logger = createLogger(config.log.level, config.log.format, undefined, secrets);
  logger.info(startupSummary(config, policyOrExit(config)), "starting");
  logger.debug({ config: redactConfig(config) }, "configuration");
  let exporter: Exporter | undefined;
  let stopping = false;
  const shutdown = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, "shutting down");
    setTimeout(() => process.exit(0), SHUTDOWN_DEADLINE_MS).unref();
    // A signal during start-up has nothing to finish yet.
    if (!exporter) process.exit(0);
    exporter
      .stop()
      .then(() => hooks.afterStop?.())
      .then(
        () => process.exit(0),
        (err: unknown) => {
          logger.error({ err }, "shutdown failed");
          process.exit(1);
        },
      );
  };
  process.on("SIGTERM", () => shutdown("SIGTERM"));
  process.on("SIGINT", () => shutdown("SIGINT"));
  process.on("SIGHUP", () => void exporter?.reload());
  try {
    exporter = await startExporter(config, {
      logger,
      secrets,
      clock: systemClock,
      readFile: readUtf8,
      reloadConfig: () =>
        loadConfig({ argv, env, readFile: readUtf8, requireApi: true, hostname: hostname() })
          .config,
    });
  } catch (err) {
    if (err instanceof PolicyFileError) exitInvalidPolicy(err);
    // A secret file that cannot go into a header (a CR or LF inside it).
    if (err instanceof ConfigError) {
      process.stderr.write(`sandbox-exporter: invalid configuration\n${err.format()}\n`);
      process.exit(EXIT_CONFIG);
    }
    throw err;
  }
  return exporter;
}

const invoked = process.argv[1] ? new URL(`file://${process.argv[1]}`).pathname : "";
if (
  invoked.endsWith("/cli.ts") ||
  invoked.endsWith("/cli.js") ||
  invoked.endsWith("/sandbox-exporter")
) {
  main(process.argv.slice(2), process.env).catch((err: unknown) => {
    process.stderr.write(`sandbox-exporter: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
