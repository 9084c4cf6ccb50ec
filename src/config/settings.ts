// Every setting reachable from the environment or a flag, with its dotted path in the schema.

/** How a string from the environment or a flag becomes a value. */
export type SettingKind = "string" | "int" | "number" | "bool" | "list" | "duration";

const TRUE = new Set(["1", "true", "yes", "on"]);
const FALSE = new Set(["0", "false", "no", "off"]);

/**
 * The value a string from the environment or a flag stands for. Text that is not of the setting's
 * kind is passed on unchanged, so the schema reports it with the same words as a bad file value.
 */
export function fromText(kind: SettingKind, raw: string): unknown {
  const t = raw.trim();
  switch (kind) {
    case "int":
      return /^-?\d+$/.test(t) ? Number(t) : raw;
    case "number":
      return /^[-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?$/i.test(t) ? Number(t) : raw;
    case "bool": {
      const v = t.toLowerCase();
      return TRUE.has(v) ? true : FALSE.has(v) ? false : raw;
    }
    case "list":
      return t === ""
        ? []
        : t
            .split(",")
            .map((x) => x.trim())
            .filter((x) => x !== "");
    case "duration":
    case "string":
      return t;
  }
}

/** One setting's names in each source. */
export interface Setting {
  path: string;
  env: string;
  flag?: string;
  /** Other spellings of the flag, accepted as well. */
  flagAliases?: readonly string[];
  /** A bool flag that `--no-<flag>` sets false. */
  negatable?: true;
  /** A list flag that may be given more than once; the values add up. */
  repeatable?: true;
  /** The seed client's PascalCase field name, accepted at the top of a config file. */
  seed?: string;
  kind: SettingKind;
  help: string;
}

const X = "SANDBOX_EXPORTER_";

/** The table the loader, the flag parser and --help share. */
export const SETTINGS: readonly Setting[] = [
  {
    path: "platform.apiUrl",
    env: "SANDBOX_API_URL",
    flag: "api-url",
    seed: "ApiURL",
    kind: "string",
    help: "management API base URL (without /sandboxapi/v1)",
  },
  {
    path: "platform.flavor",
    env: `${X}FLAVOR`,
    flag: "flavor",
    kind: "string",
    help: "sandboxapi or e2b (E2B's hosted API: no prefix, pages of at most 100, its filter forms, connect to resume)",
  },
  {
    path: "platform.apiPrefix",
    env: `${X}API_PREFIX`,
    flag: "api-prefix",
    kind: "string",
    help: "path of the management API below the base URL (default /sandboxapi/v1, empty for e2b)",
  },
  {
    path: "platform.adminTokenFile",
    env: `${X}ADMIN_TOKEN_FILE`,
    flag: "admin-token-file",
    kind: "string",
    help: "file holding the X-Admin-Token sent to the node endpoints",
  },
  {
    path: "platform.apiKey",
    env: "SANDBOX_API_KEY",
    seed: "ApiKey",
    kind: "string",
    help: "API key (environment or file only, never a flag)",
  },
  {
    path: "platform.apiKeyFile",
    env: "SANDBOX_API_KEY_FILE",
    flag: "api-key-file",
    kind: "string",
    help: "file holding the API key (Kubernetes Secret mount)",
  },
  {
    path: "platform.sandboxDomain",
    env: "SANDBOX_DOMAIN",
    flag: "sandbox-domain",
    seed: "SandboxDomain",
    kind: "string",
    help: "sandbox domain for data-plane host names",
  },
  {
    path: "platform.timeoutMs",
    env: "SANDBOX_TIMEOUT",
    flag: "timeout",
    seed: "Timeout",
    kind: "duration",
    help: "per-request timeout",
  },
  {
    path: "platform.proxyNodeIp",
    env: `${X}PROXY_NODE_IP`,
    flag: "proxy-node-ip",
    seed: "ProxyNodeIP",
    kind: "string",
    help: "dial every data-plane connection to this node address",
  },
  {
    path: "platform.proxyPortHttp",
    env: `${X}PROXY_PORT_HTTP`,
    flag: "proxy-port-http",
    seed: "ProxyPortHTTP",
    kind: "int",
    help: "data-plane proxy port (0 = scheme default)",
  },
  {
    path: "platform.proxyScheme",
    env: `${X}PROXY_SCHEME`,
    flag: "proxy-scheme",
    seed: "ProxyScheme",
    kind: "string",
    help: "data-plane scheme: http or https",
  },
  {
    path: "platform.authStyle",
    env: `${X}AUTH_STYLE`,
    flag: "auth-style",
    kind: "string",
    help: "x-api-key (header) or bearer (Authorization)",
  },
  {
    path: "platform.authHeader",
    env: `${X}AUTH_HEADER`,
    flag: "auth-header",
    kind: "string",
    help: "header name for the x-api-key style",
  },
  {
    path: "platform.agentPort",
    env: `${X}AGENT_PORT`,
    flag: "agent-port",
    kind: "int",
    help: "in-sandbox agent port in data-plane host names",
  },
  {
    path: "platform.dataPlaneRouting",
    env: `${X}DATA_PLANE_ROUTING`,
    flag: "data-plane-routing",
    kind: "string",
    help: "data-plane routing: host ({port}-{id}.{domain}) or headers (E2b-Sandbox-Id to sandbox.{domain})",
  },
  {
    path: "platform.retries",
    env: `${X}RETRIES`,
    flag: "retries",
    kind: "int",
    help: "retries of idempotent GETs",
  },
  {
    path: "platform.maxRequestsPerSecond",
    env: `${X}MAX_REQUESTS_PER_SECOND`,
    flag: "max-requests-per-second",
    kind: "number",
    help: "requests per second to the management API, poll, probes and policy together",
  },
  {
    path: "platform.requestBurst",
    env: `${X}REQUEST_BURST`,
    flag: "request-burst",
    kind: "int",
    help: "requests that may go at once after a quiet spell",
  },
  {
    path: "platform.maxRetryAfterMs",
    env: `${X}MAX_RETRY_AFTER`,
    flag: "max-retry-after",
    kind: "duration",
    help: "longest Retry-After of a 429 or 503 that is waited as asked",
  },
  {
    path: "platform.teamId",
    env: `${X}TEAM_ID`,
    flag: "team-id",
    kind: "string",
    help: "the API key's team id (E2B), for the team metrics; unset: learned from the lifecycle events",
  },
  {
    path: "platform.teamConcurrencyLimit",
    env: `${X}TEAM_CONCURRENCY_LIMIT`,
    flag: "team-concurrency-limit",
    kind: "int",
    help: "concurrent sandboxes the team may run (E2B's API does not serve it; a 429 naming it is learned too)",
  },
  {
    path: "server.listen",
    env: `${X}LISTEN`,
    flag: "listen",
    kind: "string",
    help: "listen address host:port, [::1]:port or :port",
  },
  {
    path: "server.enableLifecycle",
    env: `${X}WEB_ENABLE_LIFECYCLE`,
    // Prometheus' spelling; the hyphenated one matches our other --web-* flags.
    flag: "web.enable-lifecycle",
    flagAliases: ["web-enable-lifecycle"],
    kind: "bool",
    help: "serve POST /-/reload (without it: 403; SIGHUP always reloads)",
  },
  {
    path: "server.webConfigFile",
    env: `${X}WEB_CONFIG_FILE`,
    // exporter-toolkit's flag, as node_exporter and Prometheus spell it.
    flag: "web.config.file",
    flagAliases: ["web-config-file"],
    kind: "string",
    help: "exporter-toolkit web config file: TLS, mutual TLS, headers, bcrypt basic auth (re-read on reload)",
  },
  {
    path: "server.bearerTokenFile",
    env: `${X}WEB_BEARER_TOKEN_FILE`,
    flag: "web-bearer-token-file",
    kind: "string",
    help: "DEPRECATED, removed in the next release: require this bearer token on the listener",
  },
  {
    path: "server.tlsCertFile",
    env: `${X}WEB_TLS_CERT_FILE`,
    flag: "web-tls-cert-file",
    kind: "string",
    help: "DEPRECATED (use cert_file in --web.config.file): serve HTTPS with this certificate",
  },
  {
    path: "server.tlsKeyFile",
    env: `${X}WEB_TLS_KEY_FILE`,
    flag: "web-tls-key-file",
    kind: "string",
    help: "DEPRECATED (use key_file in --web.config.file): private key of the certificate",
  },
  {
    path: "poll.schedule",
    env: `${X}POLL_SCHEDULE`,
    flag: "poll-schedule",
    kind: "string",
    help: "poll interval (15s) or cron expression",
  },
  {
    path: "poll.pageLimit",
    env: `${X}PAGE_LIMIT`,
    flag: "page-limit",
    kind: "int",
    help: "limit= of each /v2/sandboxes page",
  },
  {
    path: "poll.maxPages",
    env: `${X}MAX_PAGES`,
    flag: "max-pages",
    kind: "int",
    help: "page ceiling of one sandbox walk",
  },
  {
    path: "poll.confirmDropRatio",
    env: `${X}CONFIRM_DROP_RATIO`,
    flag: "confirm-drop-ratio",
    kind: "number",
    help: "a walk whose sandbox count falls by more than this share is confirmed by a second walk",
  },
  {
    path: "poll.capabilityRecheckMs",
    env: `${X}CAPABILITY_RECHECK`,
    flag: "capability-recheck",
    kind: "duration",
    help: "how often a collector the platform does not serve (404/405/403) is tried again",
  },
  {
    path: "poll.maxBackoffMs",
    env: `${X}POLL_MAX_BACKOFF`,
    flag: "poll-max-backoff",
    kind: "duration",
    help: "ceiling of the backoff between failed sandbox walks",
  },
  {
    path: "poll.maxWalkMs",
    env: `${X}POLL_MAX_WALK`,
    flag: "poll-max-walk",
    kind: "duration",
    help: "longest one sandbox walk may take before it is abandoned as incomplete (default 4 poll intervals)",
  },
  {
    path: "poll.usage",
    env: `${X}POLL_USAGE`,
    flag: "poll-usage",
    kind: "bool",
    help: "read the CPU, memory and disk use of this shard's running sandboxes (GET /sandboxes/metrics)",
  },
  {
    path: "poll.usageIntervalMs",
    env: `${X}POLL_USAGE_INTERVAL`,
    flag: "poll-usage-interval",
    kind: "duration",
    help: "least time between two usage reads (each follows a complete sandbox walk)",
  },
  {
    path: "poll.state",
    env: `${X}STATE_FILTER`,
    flag: "state-filter",
    kind: "string",
    help: "state= filter of the sandbox list",
  },
  {
    path: "poll.metadata",
    env: `${X}METADATA_FILTER`,
    flag: "metadata-filter",
    kind: "string",
    help: "metadata= filter of the sandbox list",
  },
  {
    path: "poll.nodeDetails",
    env: `${X}NODE_DETAILS`,
    flag: "node-details",
    kind: "bool",
    help: "also read /nodes/{id}",
  },
  {
    path: "poll.templateDetails",
    env: `${X}TEMPLATE_DETAILS`,
    flag: "template-details",
    kind: "bool",
    help: "also read /templates/{id}",
  },
  {
    path: "poll.templateBuilds",
    env: `${X}POLL_TEMPLATE_BUILDS`,
    flag: "poll-template-builds",
    kind: "bool",
    help: "template build health: why a template's latest build failed",
  },
  {
    path: "poll.templateBuildsMaxReads",
    env: `${X}POLL_TEMPLATE_BUILDS_MAX_READS`,
    flag: "poll-template-builds-max-reads",
    kind: "int",
    help: "build-status reads of failed builds per tick at most; the others wait for later ticks, longest waiting first",
  },
  {
    path: "poll.events",
    env: `${X}POLL_EVENTS`,
    flag: "poll-events",
    kind: "bool",
    help: "sandbox lifecycle events (E2B's GET /events/sandboxes): kills by reason, execution times",
  },
  {
    path: "poll.eventsLookbackMs",
    env: `${X}POLL_EVENTS_LOOKBACK`,
    flag: "poll-events-lookback",
    kind: "duration",
    help: "how far back the first read of lifecycle events goes (0: only events after start)",
  },
  {
    path: "poll.eventsMaxPages",
    env: `${X}POLL_EVENTS_MAX_PAGES`,
    flag: "poll-events-max-pages",
    kind: "int",
    help: "pages of 100 lifecycle events read per tick at most; the rest is read next tick",
  },
  {
    path: "poll.teamMetrics",
    env: `${X}POLL_TEAM_METRICS`,
    flag: "poll-team-metrics",
    kind: "bool",
    help: "team capacity: concurrent sandboxes and start rate (E2B's GET /teams/{teamID}/metrics), and their maxima",
  },
  {
    path: "poll.teamMetricsWindowMs",
    env: `${X}POLL_TEAM_METRICS_WINDOW`,
    flag: "poll-team-metrics-window",
    kind: "duration",
    help: "window of the team metrics' maxima (read at most once a minute)",
  },
  {
    path: "metrics.namespace",
    env: `${X}NAMESPACE`,
    flag: "namespace",
    kind: "string",
    help: "metric name prefix",
  },
  {
    path: "metrics.perSandboxMetrics",
    env: `${X}PER_SANDBOX_METRICS`,
    flag: "per-sandbox-metrics",
    kind: "bool",
    help: "export per-sandbox series (bare flag or =true/false)",
  },
  {
    path: "metrics.metadataLabels",
    env: `${X}METADATA_LABELS`,
    flag: "metadata-labels",
    kind: "list",
    help: "metadata keys allowed as labels (comma list)",
  },
  {
    path: "metrics.maxSandboxSeries",
    env: `${X}MAX_SANDBOX_SERIES`,
    flag: "max-sandbox-series",
    kind: "int",
    help: "cap of per-sandbox series",
  },
  {
    path: "metrics.maxLabelValueLength",
    env: `${X}MAX_LABEL_VALUE_LENGTH`,
    flag: "max-label-value-length",
    kind: "int",
    help: "label values longer than this are truncated",
  },
  {
    path: "metrics.maxEventTemplates",
    env: `${X}MAX_EVENT_TEMPLATES`,
    flag: "max-event-templates",
    kind: "int",
    help: "templates with lifecycle event series of their own (the rest count as template other)",
  },
  {
    path: "shard.index",
    env: `${X}SHARD`,
    flag: "shard",
    kind: "int",
    help: "this replica's shard",
  },
  {
    path: "shard.total",
    env: `${X}TOTAL_SHARDS`,
    flag: "total-shards",
    kind: "int",
    help: "number of shards",
  },
  {
    path: "shard.fromHostname",
    env: `${X}SHARD_FROM_HOSTNAME`,
    flag: "shard-from-hostname",
    kind: "bool",
    help: "take this replica's shard from its StatefulSet pod's ordinal: the N of hostname name-N",
  },
  {
    path: "probe.enabled",
    env: `${X}PROBE_ENABLED`,
    flag: "probe",
    kind: "bool",
    help: "run synthetic probes (bare flag or =true/false)",
  },
  {
    path: "probe.schedule",
    env: `${X}PROBE_SCHEDULE`,
    flag: "probe-schedule",
    kind: "string",
    help: "probe interval (60s) or cron expression",
  },
  {
    path: "probe.template",
    env: `${X}PROBE_TEMPLATE`,
    flag: "probe-template",
    kind: "string",
    help: "template of the probe sandbox",
  },
  {
    path: "probe.instance",
    env: `${X}PROBE_INSTANCE`,
    flag: "probe-instance",
    kind: "string",
    help: "tags probe sandboxes sandbox-exporter/probe=<instance> (orphan sweep)",
  },
  {
    path: "probe.timeoutMs",
    env: `${X}PROBE_TIMEOUT`,
    flag: "probe-timeout",
    kind: "duration",
    help: "total probe timeout",
  },
  {
    path: "policy.enabled",
    env: `${X}POLICY_ENABLED`,
    flag: "policy-enabled",
    kind: "bool",
    help: "evaluate policy rules (default: on when a rule file or rules are given)",
  },
  {
    path: "policy.file",
    env: `${X}POLICY_FILE`,
    flag: "policy",
    kind: "string",
    help: "policy rule file (YAML or JSON; see deploy/policy/example.yaml)",
  },
  {
    path: "policy.dryRun",
    env: `${X}POLICY_DRY_RUN`,
    flag: "policy-dry-run",
    kind: "bool",
    help: "make no mutating call (a rule's own dryRun wins)",
  },
  {
    path: "webhooks.e2bSecretFile",
    env: `${X}E2B_WEBHOOK_SECRET_FILE`,
    flag: "e2b-webhook-secret-file",
    kind: "string",
    help: "file holding the signing secret of E2B's lifecycle webhooks; set, POST /webhooks/e2b receives them",
  },
  {
    path: "webhooks.e2bAuthExempt",
    env: `${X}E2B_WEBHOOK_AUTH_EXEMPT`,
    flag: "e2b-webhook-auth-exempt",
    kind: "bool",
    help: "let POST /webhooks/e2b in without the listener's bearer/basic auth (E2B cannot send it; the signature still applies)",
  },
  {
    path: "webhooks.maxBodyBytes",
    env: `${X}WEBHOOK_MAX_BODY_BYTES`,
    flag: "webhook-max-body-bytes",
    kind: "int",
    help: "largest webhook delivery read (413 past it)",
  },
  {
    path: "webhooks.bodyTimeoutMs",
    env: `${X}WEBHOOK_BODY_TIMEOUT`,
    flag: "webhook-body-timeout",
    kind: "duration",
    help: "longest a webhook delivery's body may take to arrive (408 past it)",
  },
  {
    path: "webhooks.maxInFlight",
    env: `${X}WEBHOOK_MAX_IN_FLIGHT`,
    flag: "webhook-max-in-flight",
    kind: "int",
    help: "webhook deliveries read at once (503 with Retry-After past it)",
  },
  {
    path: "webhooks.maxInFlightBytes",
    env: `${X}WEBHOOK_MAX_IN_FLIGHT_BYTES`,
    flag: "webhook-max-in-flight-bytes",
    kind: "int",
    help: "body bytes all webhook deliveries in flight hold together (503 with Retry-After past it)",
  },
  {
    path: "cost.enabled",
    env: `${X}COST`,
    flag: "cost",
    negatable: true,
    kind: "bool",
    help: "estimate spend and policy savings (default: on for --flavor e2b, else once prices are given; --no-cost turns it off)",
  },
  {
    path: "cost.prices.vcpuSecond",
    env: `${X}COST_VCPU_SECOND`,
    flag: "cost-vcpu-second",
    kind: "number",
    help: "price of one vCPU-second running, in cost.currency (default E2B's 0.000014 on e2b)",
  },
  {
    path: "cost.prices.memoryGiBSecond",
    env: `${X}COST_MEMORY_GIB_SECOND`,
    flag: "cost-memory-gib-second",
    kind: "number",
    help: "price of one GiB-second of RAM running (default E2B's 0.0000045 on e2b)",
  },
  {
    path: "cost.prices.pausedGiBSecond",
    env: `${X}COST_PAUSED_GIB_SECOND`,
    flag: "cost-paused-gib-second",
    kind: "number",
    help: "price of one GiB-second of RAM paused (E2B: 0, paused sandboxes are not billed)",
  },
  {
    path: "cost.currency",
    env: `${X}COST_CURRENCY`,
    flag: "cost-currency",
    kind: "string",
    help: "currency label of the prices and spend (ISO 4217)",
  },
  {
    path: "cost.attributeBy",
    env: `${X}COST_ATTRIBUTE_BY`,
    flag: "cost-attribute-by",
    repeatable: true,
    kind: "list",
    help: "metadata key whose values get their own spend series (repeat the flag, or a comma list)",
  },
  {
    path: "cost.maxAttributedValues",
    env: `${X}COST_MAX_ATTRIBUTED_VALUES`,
    flag: "cost-max-attributed-values",
    kind: "int",
    help: "values per attribution key with their own series; the rest count as other",
  },
  {
    path: "cost.budget.daily",
    env: `${X}COST_BUDGET_DAILY`,
    flag: "cost-budget-daily",
    kind: "number",
    help: "daily spend budget, in cost.currency (exported for the forecast alert)",
  },
  {
    path: "log.level",
    env: `${X}LOG_LEVEL`,
    flag: "log-level",
    kind: "string",
    help: "trace, debug, info, warn, error, fatal or silent",
  },
  {
    path: "log.format",
    env: `${X}LOG_FORMAT`,
    flag: "log-format",
    kind: "string",
    help: "json or pretty",
  },
];
