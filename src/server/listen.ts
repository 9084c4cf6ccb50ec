// The listener as the composition root starts it: the features' routes, /status from the latest
// snapshot and each feature's section, and the reload that checks every part before any applies.
import type { Poller } from "../collect/poller.js";
import type { SecretName, SecretValues } from "../config/secret-files.js";
import type { Config } from "../config/settings.js";
import type { Feature, ReloadContext, Services, Started } from "../feature.js";
import { type Format, negotiateFormat, type Rendered } from "../metrics/exporter-metrics.js";
import { errorMessage } from "../util/errors.js";
import { asksForCredentials, type ListenerSecurity, reloadedWebConfig } from "./listener.js";
import { hasGoodData } from "./readiness.js";
import { type RunningServer, startServer } from "./server.js";
import { statusReport } from "./status.js";

export type { RunningServer };

/** The shared services, and how the listener is secured at start. */
export type ListenerServices = Services & { readonly security: ListenerSecurity };

/** What the listener serves besides the metrics. */
export interface ListenerParts {
  poller: Poller;
  /** The features that started, by name, in order. */
  started: ReadonlyMap<string, Started>;
  /** The features that were off at start (a reload may only warn about them). */
  off: readonly Feature[];
  /** Loads the configuration again (SIGHUP, POST /-/reload). */
  reloadConfig: () => Config;
  /** Reads secret files of a configuration (config/secret-files.ts). */
  readSecrets: (config: Config, names: readonly SecretName[]) => SecretValues;
  /** Several teams: the merged body, default the exporter's metrics. */
  render?: RenderBody;
  /** Several teams: /status's `teams` section at `now`. */
  teams?: (now: number) => unknown;
  /** Several teams: readiness over every part, default the poller's data. */
  ready?: () => boolean;
}

type RenderBody = (format: Format, gzip: boolean) => Promise<Rendered>;

/** The running listener and the exporter's reload. */
export interface Listener {
  server: RunningServer;
  reload(): Promise<{ ok: boolean; error?: string }>;
}

/** Starts the listener of `s.config.server`, serving every started feature's routes. */
export async function startListener(s: ListenerServices, parts: ListenerParts): Promise<Listener> {
  const { config, logger, metrics, secrets } = s;
  const features = [...parts.started.values()];
  const reload = async (): Promise<{ ok: boolean; error?: string }> => {
    try {
      const next = parts.reloadConfig();
      // Everything is read and checked before anything changes: a bad file keeps the last good.
      const web = reloadedWebConfig(next, s.security);
      const ctx: ReloadContext = {
        secret(name) {
          const value = parts.readSecrets(next, [name])[name];
          // Scrubbed from the moment it is read: the feature puts it in use only later.
          secrets.add(value);
          return value;
        },
        listener: web ? { asksForCredentials: asksForCredentials({ webConfig: web }) } : s.listener,
      };
      const apply = features.map((f) => f.reload?.(next, ctx));
      for (const f of parts.off) f.onReloadWhileOff?.(next, logger);
      if (web) server.setWebConfig(web);
      for (const a of apply) a?.();
      metrics.reloaded(true);
      logger.info("configuration reloaded");
      return { ok: true };
    } catch (err) {
      metrics.reloaded(false);
      logger.error({ err }, "reload failed; keeping the previous configuration");
      return { ok: false, error: secrets.scrub(errorMessage(err)) };
    }
  };
  const sections = (): Record<string, unknown> => {
    const out: Record<string, unknown> = {};
    for (const [name, f] of parts.started) if (f.status) out[name] = f.status();
    return out;
  };
  const server = await startServer(config.server.listen, {
    render: parts.render ?? ((format, gzip) => metrics.render(format, gzip)),
    negotiate: negotiateFormat,
    // The whole document passes the one scrubber on its way out, whatever section a text came from.
    status: () =>
      JSON.parse(
        secrets.scrub(
          JSON.stringify(
            statusReport(parts.poller.latest, s.clock.now(), {
              shard: config.shard,
              ...sections(),
              ...(parts.teams ? { teams: parts.teams(s.clock.now()) } : {}),
            }),
          ),
        ),
      ) as Record<string, unknown>,
    reload,
    enableLifecycle: config.server.enableLifecycle,
    routes: features.flatMap((f) => f.routes ?? []),
    ready: parts.ready ?? (() => hasGoodData(parts.poller.latest)),
    logger: logger.child({ component: "server" }),
    clock: s.clock,
    ...s.security,
  });
  return { server, reload };
}
