// Wires config -> platform client -> poller -> metrics -> server. No policy of its own.
import { readFileSync } from "node:fs";
import type { Logger } from "pino";
import type { Dispatcher } from "undici";
import { Poller } from "./collect/poller.js";
import { startSchedule } from "./collect/schedule.js";
import type { Snapshot } from "./collect/snapshot.js";
import type { Config } from "./config/schema.js";
import { ExporterMetrics, negotiateFormat } from "./metrics/exporter-metrics.js";
import { ControlClient } from "./platform/control.js";
import { DataClient } from "./platform/data.js";
import { Prober } from "./probe/prober.js";
import { type RunningServer, startServer } from "./server/server.js";
import { statusReport } from "./server/status.js";
import type { Clock } from "./util/clock.js";
import { intervalOf } from "./util/duration.js";
import { VERSION } from "./version.js";

/** Effects the exporter needs from outside. */
export interface AppDeps {
  logger: Logger;
  clock: Clock;
  /** Control-channel dispatcher; defaults to one honouring HTTP(S)_PROXY. */
  dispatcher?: Dispatcher;
  /** Do not start the schedule (tests drive cycles with runCycle). */
  manual?: boolean;
}

/** A running exporter. */
export interface Exporter {
  readonly server: RunningServer;
  readonly metrics: ExporterMetrics;
  readonly poller: Poller;
  /** The synthetic prober, when probes are enabled. */
  readonly prober: Prober | undefined;
  /** Runs one poll cycle now (skipped and counted if one is in flight). */
  runCycle(): Promise<Snapshot | undefined>;
  stop(): Promise<void>;
}

/** Starts the exporter described by `config`; the first cycle starts at once. */
export async function startExporter(config: Config, deps: AppDeps): Promise<Exporter> {
  const { logger, clock } = deps;
  const metrics = new ExporterMetrics({
    namespace: config.metrics.namespace,
    perSandboxMetrics: config.metrics.perSandboxMetrics,
    metadataLabels: config.metrics.metadataLabels,
    maxSandboxSeries: config.metrics.maxSandboxSeries,
    shard: config.shard,
    runningStates: config.states.running,
    pausedStates: config.states.paused,
    clock,
    version: VERSION,
    logger,
  });
  const control = new ControlClient({
    apiUrl: config.platform.apiUrl,
    apiKey: config.platform.apiKey,
    authStyle: config.platform.authStyle,
    authHeader: config.platform.authHeader,
    timeoutMs: config.platform.timeoutMs,
    retries: config.platform.retries,
    fieldMap: config.fieldMap,
    clock,
    onRequest: (info) => metrics.observeRequest(info),
    ...(deps.dispatcher ? { dispatcher: deps.dispatcher } : {}),
  });
  const poller = new Poller({
    reader: control,
    clock,
    pageLimit: config.poll.pageLimit,
    maxPages: config.poll.maxPages,
    ...(config.poll.state ? { state: config.poll.state } : {}),
    ...(config.poll.metadata ? { metadata: config.poll.metadata } : {}),
    nodeDetails: config.poll.nodeDetails,
    templateDetails: config.poll.templateDetails,
    clusterWide: config.shard.index === 0,
  });
  const cycle = async (): Promise<void> => {
    const snapshot = await poller.runCycle();
    metrics.update(snapshot);
    for (const c of Object.values(snapshot.collectors)) {
      if (!c.success && !c.skipped)
        logger.warn(
          { collector: c.name, error: c.error },
          "collector failed; serving last good data",
        );
    }
    logger.debug(
      {
        cycle: snapshot.cycle,
        ms: snapshot.finishedAt - snapshot.startedAt,
        sandboxes: snapshot.sandboxes?.length,
      },
      "poll cycle done",
    );
  };
  const onSkip = (): void => {
    metrics.skippedTick();
    logger.warn("poll tick skipped: previous cycle still running");
  };
  const onError = (err: unknown): void => logger.error({ err: String(err) }, "poll cycle failed");
  const schedule = startSchedule(
    deps.manual ? undefined : config.poll.schedule,
    intervalOf,
    cycle,
    onSkip,
    onError,
  );
  const prober = config.probe.enabled ? newProber(config, control, metrics, deps) : undefined;
  const server = await startServer(config.server.listen, {
    render: (format, gzip) => metrics.render(format, gzip),
    negotiate: negotiateFormat,
    status: () =>
      statusReport(poller.latest, clock.now(), {
        shard: config.shard,
        ...(prober ? { probe: prober.status() } : {}),
      }),
    ...(prober ? { routes: prober.routes() } : {}),
    ready: () => poller.latest !== undefined,
    logger,
    ...serverSecurity(config),
  });
  if (!deps.manual) void schedule.trigger();
  if (prober && !deps.manual) await prober.start();
  logger.info(
    { url: server.url, schedule: config.poll.schedule, shard: config.shard },
    "sandbox-exporter listening",
  );
  return {
    server,
    metrics,
    poller,
    runCycle: async () => {
      await schedule.trigger();
      return poller.latest;
    },
    prober,
    async stop() {
      // The probe goes first: its sandbox is terminated before the process exits.
      await prober?.stop();
      await schedule.stop();
      await server.close();
      await control.close();
    },
  };
}

function serverSecurity(config: Config): Pick<Parameters<typeof startServer>[1], "auth" | "tls"> {
  const s = config.server;
  const out: Pick<Parameters<typeof startServer>[1], "auth" | "tls"> = {};
  if (s.bearerTokenFile || s.basicAuthUsers) {
    out.auth = {
      ...(s.bearerTokenFile ? { bearerToken: readFileSync(s.bearerTokenFile, "utf8").trim() } : {}),
      ...(s.basicAuthUsers ? { basicUsers: s.basicAuthUsers } : {}),
    };
  }
  if (s.tlsCertFile && s.tlsKeyFile)
    out.tls = { cert: readFileSync(s.tlsCertFile), key: readFileSync(s.tlsKeyFile) };
  return out;
}

function newProber(
  config: Config,
  control: ControlClient,
  metrics: ExporterMetrics,
  deps: AppDeps,
): Prober {
  const p = config.platform;
  const data = new DataClient({
    sandboxDomain: p.sandboxDomain,
    proxyScheme: p.proxyScheme,
    proxyNodeIp: p.proxyNodeIp,
    proxyPortHttp: p.proxyPortHttp,
    agentPort: p.agentPort,
    timeoutMs: p.timeoutMs,
  });
  const probe = config.probe;
  return new Prober({
    control,
    data,
    registry: metrics.registry,
    clock: deps.clock,
    logger: deps.logger,
    namespace: config.metrics.namespace,
    instance: probe.instance,
    template: probe.template,
    filePath: probe.filePath,
    ...(probe.command ? { command: probe.command } : {}),
    schedule: deps.manual ? null : probe.schedule,
    phaseTimeoutMs: probe.phaseTimeoutMs,
    totalTimeoutMs: probe.timeoutMs,
  });
}
