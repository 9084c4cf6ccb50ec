// Wires config -> platform client -> poller -> metrics and policy -> server.
import { readFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import type { Logger } from "pino";
import { Agent, type Dispatcher } from "undici";
import { Poller } from "./collect/poller.js";
import type { Snapshot } from "./collect/snapshot.js";
import { ConfigError } from "./config/errors.js";
import { loadPolicySpec } from "./config/policy-file.js";
import { policySpec } from "./config/policy-schema.js";
import { type Config, DEPRECATED_LISTENER } from "./config/schema.js";
import { readSecretFile } from "./config/secret-file.js";
import { type CostModule, startCost } from "./cost/cost-module.js";
import { ExporterMetrics, negotiateFormat } from "./metrics/exporter-metrics.js";
import type { EventLedger } from "./metrics/lifecycle-events.js";
import { registerLimiterMetrics } from "./metrics/limiter-metrics.js";
import { registerInvalidValueMetrics } from "./metrics/self-metrics.js";
import { TeamLimitMetrics } from "./metrics/team-limit-metrics.js";
import { ControlClient } from "./platform/control/control.js";
import { RequestLimiter } from "./platform/control/limiter.js";
import { DataClient } from "./platform/data/data.js";
import { normalizeLifecycleEvent } from "./platform/normalize/events.js";
import { PolicyEngine } from "./policy/engine.js";
import { PolicyLoop } from "./policy/policy-loop.js";
import { ProbeService } from "./probe/probe-service.js";
import { E2B_WEBHOOK_PATH, e2bWebhookRoute } from "./server/e2b-webhook.js";
import { hasGoodData } from "./server/readiness.js";
import { type RunningServer, type ServerDeps, startServer } from "./server/server.js";
import { statusReport } from "./server/status.js";
import { loadWebConfig, type WebConfig, WebConfigError } from "./server/web-config.js";
import { type Clock, systemClock } from "./util/clock.js";
import { startSchedule, tickInterval } from "./util/schedule.js";
import { Secrets } from "./util/secrets.js";
import { VERSION } from "./version.js";

/** How long past the events look-back an event id is remembered (webhook retries, late reads). */
const EVENT_ID_MARGIN_MS = 3_600_000;
/**
 * How long stop() waits for poll reads still in flight (the poller gave up on them; they may hang
 * up to their own timeouts, page after page) before their requests are cut.
 */
const STOP_READS_GRACE_MS = 1_000;

/** Effects the exporter needs from outside. */
export interface AppDeps {
  logger: Logger;
  clock: Clock;
  /** Control-channel dispatcher; defaults to one honouring HTTP(S)_PROXY. */
  dispatcher?: Dispatcher;
  /** Do not start the schedule (tests drive cycles with runCycle). */
  manual?: boolean;
  /** Reads the policy rule file; default fs.readFileSync as UTF-8. */
  readFile?: (path: string) => string;
  /** Loads the configuration again for a reload (SIGHUP, POST /-/reload); default: the same one. */
  reloadConfig?: () => Config;
  /** Secret values scrubbed from errors, labels and (when the logger shares it) log lines. */
  secrets?: Secrets;
}

/** A running exporter. */
export interface Exporter {
  readonly server: RunningServer;
  readonly metrics: ExporterMetrics;
  readonly poller: Poller;
  /** The synthetic prober, when probes are enabled. */
  readonly prober: ProbeService | undefined;
  /** The policy engine, when policy is enabled. */
  readonly policy: PolicyEngine | undefined;
  /** The lifecycle event ledger (poll.events): the sink of the events collector and the webhook. */
  readonly events: EventLedger | undefined;
  /** Re-reads the config and policy files; a bad file is rejected and the old one kept. */
  reload(): Promise<{ ok: boolean; error?: string }>;
  /** Runs one poll cycle now (skipped and counted if one is in flight). */
  runCycle(): Promise<Snapshot | undefined>;
  stop(): Promise<void>;
}

/** Starts the exporter described by `config`; the first cycle starts at once. */
export async function startExporter(config: Config, deps: AppDeps): Promise<Exporter> {
  const { logger, clock } = deps;
  const readFile = deps.readFile ?? ((path: string) => readFileSync(path, "utf8"));
  // Read before anything starts: a bad rule file stops the start, naming the rule and field.
  const initialSpec = config.policy.enabled ? loadPolicySpec(config.policy, readFile) : undefined;
  // The listener's security too (--web.config.file, or the deprecated settings).
  const listener = serverSecurity(config, logger.child({ component: "server" }));
  const pollIntervalMs = tickInterval(config.poll.schedule);
  // One set of secrets for every text that leaves the process: errors, labels, the log.
  const secrets = deps.secrets ?? new Secrets();
  secrets.add(config.platform.apiKey);
  const metrics = new ExporterMetrics({
    namespace: config.metrics.namespace,
    perSandboxMetrics: config.metrics.perSandboxMetrics,
    metadataLabels: config.metrics.metadataLabels,
    maxSandboxSeries: config.metrics.maxSandboxSeries,
    maxLabelValueLength: config.metrics.maxLabelValueLength,
    shard: config.shard,
    runningStates: config.states.running,
    pausedStates: config.states.paused,
    clock,
    version: VERSION,
    logger: logger.child({ component: "metrics" }),
    scrub: (text) => secrets.scrub(text),
    // The event ledger (for the events collector or the E2B webhook) remembers ids past the
    // look-back, so a re-read event counts once. Only where events arrive: the collector is
    // cluster-wide (shard 0), so another shard has one only with the webhook; without it, its
    // churn keeps the endAt guess rather than wait for events that never come.
    ...((config.poll.events && config.shard.index === 0) ||
    config.webhooks.e2bSecretFile !== undefined
      ? {
          lifecycleEvents: {
            horizonMs: config.poll.eventsLookbackMs + EVENT_ID_MARGIN_MS,
            maxTemplates: config.metrics.maxEventTemplates,
          },
        }
      : {}),
  });
  // Spend and savings (cost.enabled): fed by walks, lifecycle events and the policy's pauses.
  const cost = startCost({
    settings: config.cost,
    registry: metrics.registry,
    namespace: config.metrics.namespace,
    clock,
    shard: config.shard,
    states: config.states,
    maxLabelValueLength: config.metrics.maxLabelValueLength,
    maxTemplates: config.metrics.maxEventTemplates,
    scrub: (text) => secrets.scrub(text),
    rules: initialSpec?.rules.map((r) => ({ name: r.name, dryRun: r.dryRun })) ?? [],
  });
  // One request budget for poll, probes and policy together, served in that order.
  const limiter: RequestLimiter = new RequestLimiter({
    ratePerSecond: config.platform.maxRequestsPerSecond,
    burst: config.platform.requestBurst,
    now: () => performance.now(),
    onGrant: (caller, waitedMs) => limiterMetrics.granted(caller, waitedMs),
  });
  const limiterMetrics = registerLimiterMetrics(metrics.registry, config.metrics.namespace, (c) =>
    limiter.waiting(c),
  );
  // Refused creates by reason, and the team's concurrency limit (set, or named by a 429).
  const teamLimits = new TeamLimitMetrics({
    registry: metrics.registry,
    ns: config.metrics.namespace,
    configLimit: config.platform.teamConcurrencyLimit,
    logger: logger.child({ component: "metrics" }),
  });
  const control = new ControlClient({
    apiUrl: config.platform.apiUrl,
    apiKey: config.platform.apiKey,
    authStyle: config.platform.authStyle,
    authHeader: config.platform.authHeader,
    timeoutMs: config.platform.timeoutMs,
    retries: config.platform.retries,
    envProxy: config.platform.envProxy,
    fieldMap: config.fieldMap,
    clock,
    onRequest: (info) => metrics.observeRequest(info),
    onBadBody: (endpoint, method) => metrics.badBody(endpoint, method),
    limiter,
    maxRetryAfterMs: config.platform.maxRetryAfterMs,
    apiPrefix: config.platform.apiPrefix,
    flavor: config.platform.flavor,
    onCreateRejected: (reason, limit, ignored) => teamLimits.createRejected(reason, limit, ignored),
    ...adminToken(config),
    secrets,
    ...(deps.dispatcher ? { dispatcher: deps.dispatcher } : {}),
  });
  // Each reader owns its normalizer: what one's records teach the field tables is its own.
  const pollReader = control.withOwnNormalizer("poll");
  // One child logger per component: every line says where it came from.
  const pollLog = logger.child({ component: "poll" });
  // What the poll's reads left out (values that did not parse, records without an id).
  registerInvalidValueMetrics(metrics.registry, config.metrics.namespace, () =>
    pollReader.invalid.entries(),
  );
  const poller = new Poller({
    reader: pollReader,
    clock,
    pageLimit: config.poll.pageLimit,
    maxPages: config.poll.maxPages,
    ...(config.poll.state ? { state: config.poll.state } : {}),
    ...(config.poll.metadata ? { metadata: config.poll.metadata } : {}),
    nodeDetails: config.poll.nodeDetails,
    templateDetails: config.poll.templateDetails,
    ...(metrics.events
      ? {
          events: {
            sink: cost ? cost.events(metrics.events) : metrics.events,
            lookbackMs: config.poll.eventsLookbackMs,
            maxPages: config.poll.eventsMaxPages,
          },
        }
      : {}),
    optIn: [
      ...(config.poll.templateBuilds ? (["templateBuilds"] as const) : []),
      ...(config.poll.events ? (["events"] as const) : []),
      ...(config.poll.teamMetrics ? (["teamMetrics"] as const) : []),
    ],
    // The team of the key: the setting, else the one the lifecycle events name (poll.events).
    teamId: () => config.platform.teamId ?? metrics.events?.teamId(),
    teamMetricsWindowMs: config.poll.teamMetricsWindowMs,
    templateBuildsMaxReads: config.poll.templateBuildsMaxReads,
    clusterWide: config.shard.index === 0,
    shard: config.shard,
    readHealth: initialSpec !== undefined,
    // Nothing reads metadata without per-sandbox series or policy: keep the compact table.
    compactSandboxes:
      !config.metrics.perSandboxMetrics &&
      initialSpec === undefined &&
      !(cost && config.cost.attributeBy.length > 0),
    intervalMs: pollIntervalMs,
    confirmDropRatio: config.poll.confirmDropRatio,
    capabilityRecheckMs: config.poll.capabilityRecheckMs,
    ...(config.poll.usage
      ? {
          usage: {
            intervalMs: config.poll.usageIntervalMs,
            runningStates: config.states.running,
          },
        }
      : {}),
    onPageLimit: (from, to) =>
      pollLog.warn(
        { from, to },
        "the platform refused the page size: walking with the smaller one from now on (set poll.pageLimit to it)",
      ),
    onSupport: (collector, supported, error) =>
      pollLog.info(
        { collector, ...(error ? { answer: error.message } : {}) },
        supported
          ? "collector supported again: the platform now serves its endpoint"
          : "collector unsupported by this platform: not polled, re-checked at poll.capabilityRecheck",
      ),
    maxBackoffMs: config.poll.maxBackoffMs,
    ...(config.poll.maxWalkMs !== undefined ? { maxWalkMs: config.poll.maxWalkMs } : {}),
    onWalkAbandoned: () => {
      metrics.walkAbandoned();
      pollLog.warn(
        { maxWalkMs: config.poll.maxWalkMs ?? 4 * pollIntervalMs },
        "sandbox walk abandoned as incomplete: it ran past poll.maxWalkMs",
      );
    },
    onSnapshot: (snapshot) => published(snapshot),
    onError: (err) => onError(err),
    onDrop: (confirmed) => {
      metrics.walkDrop(confirmed);
      pollLog.warn(
        { confirmed },
        confirmed
          ? "sandbox count fell sharply; a second walk confirmed it"
          : "sandbox count fell sharply in one walk only; that walk was discarded",
      );
    },
  });
  const webhookAgent = config.policy.webhook ? new Agent() : undefined;
  const policy = initialSpec
    ? new PolicyEngine({
        spec: initialSpec,
        platform: control.withOwnNormalizer("policy"),
        clock,
        logger,
        registry: metrics.registry,
        namespace: config.metrics.namespace,
        states: config.states,
        defaultRunTimeMs: pollIntervalMs,
        ...policyWebhook(config, secrets, webhookAgent, logger),
        ...(cost ? { hooks: cost.policy } : {}),
      })
    : undefined;
  const policyLoop = policy
    ? new PolicyLoop(
        (snapshot) => policy.run(snapshot),
        (err) => logger.error({ err }, "policy run failed"),
      )
    : undefined;
  const published = async (snapshot: Snapshot): Promise<void> => {
    // Rendered in slices between which scrapes are served the previous body (see updateAsync).
    await metrics.updateAsync(snapshot);
    cost?.onSnapshot(snapshot);
    // The policy acts on walks (a snapshot repeating the last walk's list brings it nothing new),
    // in its own loop: the poll never waits for it.
    if (snapshot.walked) policyLoop?.offer(snapshot);
    for (const c of Object.values(snapshot.collectors)) {
      if (!c.success && !c.skipped && !c.unsupported && snapshot.refreshed.includes(c.name))
        pollLog.warn(
          { collector: c.name, error: c.error },
          c.lastSuccessAt === undefined
            ? "collector failed; no good data yet"
            : "collector failed; serving last good data",
        );
    }
    pollLog.debug(
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
    pollLog.warn("sandbox walk still running at this tick; the other collectors were refreshed");
  };
  const cycle = async (): Promise<void> => {
    if ((await poller.tick()).walkBusy) onSkip();
  };
  const onError = (err: unknown): void => pollLog.error({ err }, "poll cycle failed");
  // The first cycle runs at start (below): the schedule's first tick comes an interval later,
  // not at the next whole second while that cycle still walks. croner keeps the system's time.
  const schedule = startSchedule(
    deps.manual ? undefined : config.poll.schedule,
    cycle,
    onSkip,
    onError,
    { firstTickAt: systemClock.now() + pollIntervalMs - 500 },
  );
  const reload = async (): Promise<{ ok: boolean; error?: string }> => {
    try {
      const next = deps.reloadConfig ? deps.reloadConfig() : config;
      // Read and checked before anything changes: a bad web config file keeps the last good one.
      const web = reloadedWebConfig(next, listener);
      const applyE2bSecret = e2bWebhook?.reread(next, web ? { webConfig: web } : listener);
      if (policy && next.policy.enabled) policy.setSpec(loadPolicySpec(next.policy, readFile));
      else if (policy) {
        // The emergency stop: no rules from now on (the engine itself goes at the next restart).
        policy.setSpec({ ...policySpec(next.policy), rules: [] });
        logger.warn("policy disabled by reload: no rule runs until it is enabled again");
      } else if (next.policy.enabled)
        logger.warn("turning the policy engine on takes a restart; the new rules are not applied");
      if (web) server.setWebConfig(web);
      applyE2bSecret?.();
      metrics.reloaded(true);
      logger.info("configuration reloaded");
      return { ok: true };
    } catch (err) {
      metrics.reloaded(false);
      const error = err instanceof Error ? err.message : String(err);
      logger.error({ err: error }, "reload failed; keeping the previous configuration");
      return { ok: false, error };
    }
  };
  const prober = config.probe.enabled
    ? newProber(config, control.withOwnNormalizer("probe"), secrets, metrics, deps)
    : undefined;
  const e2bWebhook = newE2bWebhook(config, metrics, secrets, logger, clock, cost);
  e2bWebhook?.warnIfLocked(listener);
  const server = await startServer(config.server.listen, {
    render: (format, gzip) => metrics.render(format, gzip),
    negotiate: negotiateFormat,
    // The whole document passes the one scrubber on its way out, whatever section a text came from.
    status: () =>
      JSON.parse(
        secrets.scrub(
          JSON.stringify(
            statusReport(poller.latest, clock.now(), {
              shard: config.shard,
              ...(prober ? { probe: prober.status() } : {}),
              ...(policy ? { policy: policy.status() } : {}),
            }),
          ),
        ),
      ) as Record<string, unknown>,
    reload,
    enableLifecycle: config.server.enableLifecycle,
    routes: { ...prober?.routes(), ...e2bWebhook?.routes },
    // The landing page links /probe with a module, so the link answers 200 rather than 400.
    ...(prober?.probers[0]
      ? { links: { "/probe": `/probe?module=${encodeURIComponent(prober.probers[0].module)}` } }
      : {}),
    // E2B cannot send the listener's credentials: its route is open only when the setting says so.
    ...(e2bWebhook?.authExempt ? { openPaths: [E2B_WEBHOOK_PATH] } : {}),
    ...(e2bWebhook ? { onUnauthorized: (path: string) => e2bWebhook.onUnauthorized(path) } : {}),
    ready: () => hasGoodData(poller.latest),
    logger: logger.child({ component: "server" }),
    clock,
    ...listener,
  });
  if (!deps.manual) void schedule.trigger();
  if (prober && !deps.manual) await prober.start();
  logger.info(
    {
      url: server.url,
      schedule: config.poll.schedule.text,
      // One scalar: pretty logs print it on one line.
      shard: `${config.shard.index}/${config.shard.total}`,
    },
    "sandbox-exporter listening",
  );
  return {
    server,
    metrics,
    poller,
    events: metrics.events,
    runCycle: async () => {
      await schedule.trigger();
      await poller.walkDone();
      await policyLoop?.idle();
      return poller.latest;
    },
    prober,
    policy,
    reload,
    async stop() {
      // The probe goes first: its sandbox is terminated before the process exits.
      await prober?.stop();
      await schedule.stop();
      // Reads still in flight get a short grace, then the dispatcher cuts them.
      const grace = new AbortController();
      const drained = await Promise.race([
        poller.walkDone().then(() => true),
        sleep(STOP_READS_GRACE_MS, false, { signal: grace.signal }).catch(() => false),
      ]);
      grace.abort();
      await policyLoop?.idle();
      // Deliveries still queued or hanging are given up: a webhook must not hold the shutdown.
      await webhookAgent?.destroy();
      await server.close();
      await control.close(!drained);
    },
  };
}

/** What startExporter mounts for E2B's lifecycle webhooks. */
interface E2bWebhook {
  routes: NonNullable<ServerDeps["routes"]>;
  authExempt: boolean;
  /**
   * Reads the secret file of `next` (throws on a bad one) and warns again if the listener's auth
   * (as `security` secures it) keeps E2B out; the returned call puts the secret in use.
   */
  reread(next: Config, security: ListenerSecurity): () => void;
  /** Warns when the listener asks for credentials E2B cannot send and the route is not exempt. */
  warnIfLocked(security: ListenerSecurity): void;
  /** Counts a request the listener refused (401) when it was a delivery. */
  onUnauthorized(path: string): void;
}

/**
 * POST /webhooks/e2b when webhooks.e2bSecretFile is set: E2B's deliveries go into the events
 * ledger. The signing secret is scrubbed like a key and read again on reload.
 */
function newE2bWebhook(
  config: Config,
  metrics: ExporterMetrics,
  secrets: Secrets,
  logger: Logger,
  clock: Clock,
  cost?: CostModule,
): E2bWebhook | undefined {
  if (config.webhooks.e2bSecretFile === undefined) return undefined;
  const log = logger.child({ component: "e2b-webhook" });
  const read = (c: Config): string => {
    const file = c.webhooks.e2bSecretFile;
    const value = file ? readSecretFile(readUtf8, file, "webhooks.e2bSecretFile") : "";
    secrets.add(value);
    // An empty secret verifies nothing: every delivery is refused (401) until one is set.
    if (value === "") log.warn("no E2B webhook signing secret: every delivery is refused");
    return value;
  };
  // Read first: a bad secret file stops the start whatever else is on.
  let secret = read(config);
  const sink = metrics.events && cost ? cost.events(metrics.events) : metrics.events;
  if (!sink) {
    log.warn(
      { setting: "webhooks.e2bSecretFile" },
      "E2B webhook not served: the lifecycle event ledger is off",
    );
    return undefined;
  }
  const route = e2bWebhookRoute({
    secret: () => secret,
    sink,
    parse: (raw) => normalizeLifecycleEvent(raw),
    limits: config.webhooks,
    horizon: () => sink.horizon(),
    clock,
    registry: metrics.registry,
    namespace: config.metrics.namespace,
    logger: log,
    secrets,
  });
  return {
    routes: { [E2B_WEBHOOK_PATH]: route },
    authExempt: config.webhooks.e2bAuthExempt,
    reread(next, security) {
      const value = read(next);
      this.warnIfLocked(security);
      return () => {
        secret = value;
      };
    },
    warnIfLocked(security) {
      const locked =
        security.auth !== undefined || Object.keys(security.webConfig?.users ?? {}).length > 0;
      if (!locked || config.webhooks.e2bAuthExempt) return;
      log.warn(
        { setting: "webhooks.e2bAuthExempt", path: E2B_WEBHOOK_PATH },
        "the listener asks for credentials E2B's deliveries cannot carry: every delivery is refused 401 (counted as unauthorized_listener); set webhooks.e2bAuthExempt",
      );
    },
    onUnauthorized(path) {
      if (path === E2B_WEBHOOK_PATH) route.refusedByListener();
    },
  };
}

function readUtf8(path: string): string {
  return readFileSync(path, "utf8");
}

/** The admin token from its file (E2B's X-Admin-Token for /nodes); read once at start. */
function adminToken(config: Config): { adminToken?: string } {
  const file = config.platform.adminTokenFile;
  if (!file) return {};
  const token = readSecretFile(readUtf8, file, "platform.adminTokenFile");
  return token ? { adminToken: token } : {};
}

/** The policy webhook's settings, its secret header read from its file (and scrubbed like a key). */
function policyWebhook(
  config: Config,
  secrets: Secrets,
  dispatcher: Dispatcher | undefined,
  logger: Logger,
): { webhook?: NonNullable<ConstructorParameters<typeof PolicyEngine>[0]["webhook"]> } {
  const w = config.policy.webhook;
  if (!w || !dispatcher) return {};
  const value = w.headerValueFile
    ? readSecretFile(readUtf8, w.headerValueFile, "policy.webhook.headerValueFile")
    : undefined;
  secrets.add(value);
  return {
    webhook: {
      url: w.url,
      ...(value ? { header: { name: w.headerName, value } } : {}),
      timeoutMs: w.timeoutMs,
      retries: w.retries,
      dispatcher,
      // Failed deliveries are logged; the body is scrubbed of every secret before it leaves.
      logger: logger.child({ component: "webhook" }),
      secrets,
    },
  };
}

/** How the listener is secured at start; what a reload may change of it. */
type ListenerSecurity = Pick<ServerDeps, "auth" | "tls" | "webConfig">;

/** The web config file read at start; a bad one stops the start like a bad setting. */
function startWebConfig(file: string): WebConfig {
  try {
    return loadWebConfig(file, (path) => readFileSync(path));
  } catch (err) {
    if (!(err instanceof WebConfigError)) throw err;
    throw new ConfigError([
      {
        path: "server.webConfigFile",
        source: "file",
        origin: file,
        expected: "a valid exporter-toolkit web config file",
        received: err.message,
      },
    ]);
  }
}

/**
 * The web config file again, for a reload; undefined when the listener uses the deprecated
 * settings (read at start only). Throws when the change takes a restart.
 */
function reloadedWebConfig(next: Config, started: ListenerSecurity): WebConfig | undefined {
  const file = next.server.webConfigFile;
  if (file === undefined) {
    if (!started.webConfig) return undefined;
    throw new WebConfigError(
      started.webConfig.file,
      "",
      "server.webConfigFile was unset: securing the listener another way takes a restart",
    );
  }
  const web = loadWebConfig(file, (path) => readFileSync(path));
  const tlsNow = started.webConfig?.tls !== undefined || started.tls !== undefined;
  if ((web.tls !== undefined) !== tlsNow)
    throw new WebConfigError(
      web.file,
      "tls_server_config",
      `turning TLS ${tlsNow ? "off" : "on"} takes a restart`,
    );
  return web;
}

function serverSecurity(config: Config, log: Logger): ListenerSecurity {
  const s = config.server;
  if (s.webConfigFile !== undefined) return { webConfig: startWebConfig(s.webConfigFile) };
  const deprecated = DEPRECATED_LISTENER.filter((key) => s[key] !== undefined);
  if (deprecated.length > 0)
    log.warn(
      { settings: deprecated.map((key) => `server.${key}`) },
      "deprecated listener settings, removed in the next release: use --web.config.file (exporter-toolkit's format, bcrypt basic_auth_users)",
    );
  const out: ListenerSecurity = {};
  if (s.bearerTokenFile || s.basicAuthUsers) {
    out.auth = {
      ...(s.bearerTokenFile
        ? { bearerToken: readSecretFile(readUtf8, s.bearerTokenFile, "server.bearerTokenFile") }
        : {}),
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
  secrets: Secrets,
  metrics: ExporterMetrics,
  deps: AppDeps,
): ProbeService {
  const p = config.platform;
  const data = new DataClient({
    sandboxDomain: p.sandboxDomain,
    proxyScheme: p.proxyScheme,
    proxyNodeIp: p.proxyNodeIp,
    proxyPortHttp: p.proxyPortHttp,
    agentPort: p.agentPort,
    routing: p.dataPlaneRouting,
    timeoutMs: p.timeoutMs,
    secrets,
  });
  const probe = config.probe;
  return new ProbeService({
    control,
    data,
    // One scrubber for every text the probes send out (/probe, its trace, /status, logs).
    secrets,
    registry: metrics.registry,
    clock: deps.clock,
    logger: deps.logger.child({ component: "probe" }),
    namespace: config.metrics.namespace,
    instance: probe.instance,
    concurrency: probe.concurrency,
    states: config.states,
    modules: probe.modules.map((m) => ({
      module: m.name,
      template: m.template,
      schedule: deps.manual ? null : m.schedule,
      steps: m.phases,
      command: m.command,
      filePath: m.filePath,
      totalTimeoutMs: m.timeoutMs,
      phaseTimeoutMs: m.phaseTimeoutMs,
      phaseTimeouts: m.phaseTimeouts,
      lifecycleRounds: m.lifecycleRounds,
      autoPauseTimeoutMs: m.autoPauseTimeoutMs,
      http: m.http,
      labels: m.labels,
    })),
  });
}
