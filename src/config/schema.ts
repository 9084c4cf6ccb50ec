// The one configuration schema: the seed's client fields plus the exporter's own settings.
// Each schema's error text is the "expected ..." phrase of a ConfigProblem.
import { isIP } from "node:net";
import { z } from "zod";
import { CostSchema, settleCost } from "../cost/cost-settings.js";
import { BCRYPT_HASH } from "../util/bcrypt-hash.js";
import { bool, duration, int, list, oneOf, schedule, text } from "./fields.js";
import { PolicySectionSchema } from "./policy-schema.js";
import { ProbeSchema } from "./probe-schema.js";
import { controlCharacterAt } from "./secret-file.js";

const apiUrl = text.refine((s) => s === "" || isHttpUrl(s), {
  error: "an http(s) URL like https://api.example.com",
});

function isHttpUrl(s: string): boolean {
  try {
    const u = new URL(s);
    return (u.protocol === "http:" || u.protocol === "https:") && u.hostname !== "";
  } catch {
    return false;
  }
}

const HOSTNAME =
  /^(?=.{1,253}$)[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9])?(?:\.[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9])?)*$/i;
const hostname = text.regex(HOSTNAME, { error: "a DNS name like sandbox.example.com" });
const hostOrIp = text.refine((s) => s === "" || isIP(s) !== 0 || HOSTNAME.test(s), {
  error: "an IP address or host name",
});

/** host:port, [v6]:port or :port (all interfaces); port 0 picks a free one. */
const listen = text.refine(
  (s) => {
    const m = /^(?:\[([0-9a-fA-F:.]+(?:%[\w.-]+)?)\]|([\w.-]*)):(\d{1,5})$/.exec(s);
    if (!m || Number(m[3]) > 65_535) return false;
    return m[1] === undefined || isIP(m[1].split("%")[0] as string) === 6;
  },
  { error: "host:port, [::1]:port or :port" },
);

/** A share in (0, 1]. */
const ratio = z
  .number({ error: "a number above 0 and at most 1" })
  .gt(0, { error: "a number above 0 and at most 1" })
  .max(1, { error: "a number above 0 and at most 1" });

/** An HTTP header name (RFC 9110 token). */
const headerName = text.regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, { error: "an HTTP header name" });

/** A key that can go into an HTTP header: no line breaks or other control characters. */
const apiKey = text.refine((s) => controlCharacterAt(s) < 0, {
  error: "an API key without line breaks or control characters",
});

const metricPrefix = text.regex(/^[a-zA-Z_][a-zA-Z0-9_]*$/, {
  error: "a metric name prefix matching [a-zA-Z_][a-zA-Z0-9_]*",
});

/** A metadata key that still names something once snake_cased into a label (see metrics/naming). */
const metadataKey = text.regex(/[A-Za-z0-9]/, {
  error: "a metadata key with at least one letter or digit",
});

/**
 * What each kind of platform presets; a setting given explicitly wins. E2B's hosted API serves the
 * management paths at the root of its base URL and rejects page limits above 100.
 */
export const FLAVORS = {
  sandboxapi: { apiPrefix: "/sandboxapi/v1", maxPageLimit: 10_000 },
  e2b: { apiPrefix: "", maxPageLimit: 100 },
} as const;

const PlatformSchema = z.strictObject({
  /** Which platform: presets apiPrefix, the page-limit ceiling, filters' encoding, the resume call. */
  flavor: oneOf(["sandboxapi", "e2b"]).default("sandboxapi"),
  /** Path of the management API below apiUrl; default from the flavor. */
  apiPrefix: text
    .regex(/^(\/[^/?#\s]+)*$/, { error: 'empty, or a path like "/sandboxapi/v1"' })
    .optional(),
  /** File holding the X-Admin-Token E2B asks for on /nodes (a secret, never a flag value). */
  adminTokenFile: text.min(1, { error: "a file path" }).optional(),
  apiUrl: apiUrl.default(""),
  apiKey: apiKey.default(""),
  apiKeyFile: text.min(1, { error: "a file path" }).optional(),
  sandboxDomain: hostname.default("e2b.app"),
  timeoutMs: duration().default(10_000),
  proxyNodeIp: hostOrIp.default(""),
  /** 0 means the scheme's default port (80 for http, 443 for https). */
  proxyPortHttp: int(0, 65_535).default(0),
  proxyScheme: oneOf(["http", "https"]).default("https"),
  authStyle: oneOf(["x-api-key", "bearer"]).default("x-api-key"),
  /** Used only when authStyle is x-api-key. */
  authHeader: headerName.default("X-API-Key"),
  agentPort: int(1, 65_535).default(49_983),
  /**
   * How a data-plane call names its sandbox: `host` by the Host `{agentPort}-{id}.{sandboxDomain}`
   * (wildcard DNS), `headers` by E2b-Sandbox-Id/-Port to `sandbox.{sandboxDomain}`, as E2B's SDK.
   */
  dataPlaneRouting: oneOf(["host", "headers"]).default("host"),
  retries: int(0, 10).default(2),
  /** Requests per second to the management API, from every part of the daemon together. */
  maxRequestsPerSecond: z
    .number({ error: "a number above 0" })
    .gt(0, { error: "a number above 0" })
    .default(50),
  /** Requests that may go at once after a quiet spell. */
  requestBurst: int(1, 10_000).default(20),
  /** Longest Retry-After of a 429 or 503 that is honoured as asked; a longer one waits this long. */
  maxRetryAfterMs: duration().default(60_000),
  /** The API key's team (E2B team id), for the team metrics; unset: learned from lifecycle events. */
  teamId: text.min(1, { error: "a team id" }).optional(),
  /** Concurrent sandboxes the team may run, when known (E2B's API does not serve it). */
  teamConcurrencyLimit: int(1).optional(),
  /**
   * Derived, not a setting: the loader sets it when HTTP_PROXY or HTTPS_PROXY (either case) is set,
   * and refuses it in a config file. The control channel then goes through undici's
   * EnvHttpProxyAgent, which reads those and NO_PROXY; else a plain Agent.
   */
  envProxy: z.boolean().default(false),
});

const HTPASSWD = `htpasswd -nBC 10 "" | tr -d ':\\n'`;
const bcryptHash = text.refine((s) => BCRYPT_HASH.test(s), {
  error: (issue) =>
    typeof issue.input === "string" && /^[0-9a-fA-F]{64}$/.test(issue.input)
      ? `a bcrypt hash, not a SHA-256 (no longer accepted): make one with ${HTPASSWD}, or move the users to basic_auth_users in --web.config.file`
      : `a bcrypt hash (${HTPASSWD})`,
});
/** The listener settings --web.config.file replaces; kept for one release. */
export const DEPRECATED_LISTENER = [
  "bearerTokenFile",
  "basicAuthUsers",
  "tlsCertFile",
  "tlsKeyFile",
] as const;

const ServerSchema = z
  .strictObject({
    listen: listen.default("0.0.0.0:9464"),
    /** exporter-toolkit's web configuration file: TLS, mutual TLS, headers, bcrypt basic auth. */
    webConfigFile: text.min(1, { error: "a file path" }).optional(),
    /** Deprecated: no equivalent in --web.config.file. */
    bearerTokenFile: text.min(1, { error: "a file path" }).optional(),
    /** Deprecated (basic_auth_users in --web.config.file): user -> bcrypt hash of the password. */
    basicAuthUsers: z
      .record(text, bcryptHash, { error: "a mapping of user name to bcrypt hash of the password" })
      .optional(),
    /** Deprecated (tls_server_config.cert_file). */
    tlsCertFile: text.min(1, { error: "a file path" }).optional(),
    /** Deprecated (tls_server_config.key_file). */
    tlsKeyFile: text.min(1, { error: "a file path" }).optional(),
    /** Serve POST /-/reload, as Prometheus' --web.enable-lifecycle; SIGHUP reloads regardless. */
    enableLifecycle: bool.default(false),
  })
  .superRefine((s, ctx) => {
    if (s.webConfigFile === undefined) return;
    for (const key of DEPRECATED_LISTENER) {
      if (s[key] === undefined) continue;
      ctx.addIssue({
        code: "custom",
        path: [key],
        message:
          "not set together with server.webConfigFile (--web.config.file), which replaces it",
      });
    }
  })
  .superRefine((s, ctx) => {
    if ((s.tlsCertFile === undefined) === (s.tlsKeyFile === undefined)) return;
    const missing = s.tlsCertFile === undefined ? "tlsCertFile" : "tlsKeyFile";
    const other = missing === "tlsCertFile" ? "tlsKeyFile" : "tlsCertFile";
    ctx.addIssue({
      code: "custom",
      path: [missing],
      message: `to be set together with server.${other}`,
    });
  });

const PollSchema = z.strictObject({
  schedule: schedule.prefault("15s"),
  pageLimit: int(1, 10_000).default(100),
  /** A guard against endless paging, far above any fleet (repeated or empty-page tokens end a walk too). */
  maxPages: int(1).default(100_000),
  /** Passed as the list's state= filter. */
  state: text.optional(),
  /** Passed as the list's metadata= filter. */
  metadata: text.optional(),
  nodeDetails: bool.default(false),
  templateDetails: bool.default(false),
  /** Read template build health: the list every tick, and why each failed build failed (once). */
  templateBuilds: bool.default(false),
  /** Status reads of failed builds per tick at most; the rest are read on later ticks, oldest first. */
  templateBuildsMaxReads: int(1, 10_000).default(20),
  /** Read the team's sandbox lifecycle events (E2B's GET /events/sandboxes) every tick. */
  events: bool.default(false),
  /**
   * How far back the first read of events goes (0: only events after start). A restart within it
   * counts that window's events again; 0 loses the events of the downtime.
   */
  eventsLookbackMs: z
    .union([z.literal(0), z.literal("0"), z.literal("0s"), duration()])
    .transform((v) => (typeof v === "number" ? v : 0))
    .default(300_000),
  /**
   * Pages of 100 events read per tick at most (the settle pass first, then the fresh one). Every
   * event is read at most once per pass, so the rate carried is about (pages - 2) x 100 a tick.
   * At least 3: the top page, and two for a cut read to find where it goes on (with fewer it may never).
   */
  eventsMaxPages: int(3, 1_000).default(10),
  /** Read the team's capacity (E2B's GET /teams/{teamID}/metrics and /metrics/max) every tick. */
  teamMetrics: bool.default(false),
  /** Window of the team metrics' maxima (read at most once a minute). */
  teamMetricsWindowMs: duration().default(3_600_000),
  /** A walk whose sandbox count falls by more than this share of the last complete walk is walked again. */
  confirmDropRatio: ratio.default(0.5),
  /** How often a collector the platform does not serve (404/405/403) is tried again. */
  capabilityRecheckMs: duration().default(600_000),
  /** Ceiling of the backoff between failed sandbox walks. */
  maxBackoffMs: duration().default(300_000),
  /** Longest one sandbox walk may take; then it is abandoned as incomplete. Default 4 poll intervals. */
  maxWalkMs: duration().optional(),
  /** Read the CPU, memory and disk use of this shard's running sandboxes (GET /sandboxes/metrics). */
  usage: bool.default(false),
  /** Least time between two usage reads; each follows a complete sandbox walk. */
  usageIntervalMs: duration().default(60_000),
});

const MetricsSchema = z.strictObject({
  namespace: metricPrefix.default("sandbox"),
  perSandboxMetrics: bool.default(false),
  metadataLabels: z.array(metadataKey, { error: "a list of metadata keys" }).default([]),
  maxSandboxSeries: int(0).default(50_000),
  /** Longer label values are truncated by the metrics layer. */
  maxLabelValueLength: int(16).default(1024),
  /** Templates with lifecycle event series of their own; the events of others count as `other`. */
  maxEventTemplates: int(1, 2_000).default(200),
});

const ShardSchema = z
  .strictObject({
    index: int(0).default(0),
    total: int(1).default(1),
    /** The index is the ordinal of the StatefulSet pod's hostname (`name-N`); see config/load.ts. */
    fromHostname: bool.default(false),
  })
  .superRefine((s, ctx) => {
    if (s.index < s.total) return;
    ctx.addIssue({
      code: "custom",
      path: ["index"],
      message: `a shard index below shard.total (${s.total})`,
      input: s.index,
    });
  });

/** Our field name -> the platform's JSON key, per resource. */
const fieldNames = z.record(text, text, { error: "a mapping of our field name to the platform's" });

const FieldMapSchema = z.strictObject({
  sandbox: fieldNames.optional(),
  node: fieldNames.optional(),
  template: fieldNames.optional(),
  log: fieldNames.optional(),
  list: fieldNames.optional(),
});

/** The state names that read as running and as paused when `states` says nothing. */
export const DEFAULT_STATES: {
  readonly running: readonly string[];
  readonly paused: readonly string[];
} = { running: ["running", "active"], paused: ["paused", "suspended"] };

const StatesSchema = z.strictObject({
  running: list.default(() => [...DEFAULT_STATES.running]),
  paused: list.default(() => [...DEFAULT_STATES.paused]),
});

/** Webhooks the exporter receives on its listener. */
const WebhooksSchema = z.strictObject({
  /** File holding the signing secret of E2B's lifecycle webhooks; set, POST /webhooks/e2b is served. */
  e2bSecretFile: text.min(1, { error: "a file path" }).optional(),
  /** POST /webhooks/e2b skips the listener's bearer/basic auth (E2B cannot send either). */
  e2bAuthExempt: bool.default(false),
  /** Largest delivery body read; past it the answer is 413. */
  maxBodyBytes: int(1, 16 * 1024 * 1024).default(262_144),
  /** Longest a delivery's body may take to arrive; past it the answer is 408. */
  bodyTimeoutMs: duration().default(10_000),
  /** Deliveries read at once; one more is answered 503 (Retry-After) at once. */
  maxInFlight: int(1, 10_000).default(64),
  /** Body bytes all deliveries in flight hold together; past it 503 at once. */
  maxInFlightBytes: int(1, 1024 * 1024 * 1024).default(4 * 1024 * 1024),
});

/** The webhooks section, checked whole: a delivery of the largest size must fit in flight. */
const WebhooksChecked = WebhooksSchema.superRefine((w, ctx) => {
  if (w.maxInFlightBytes >= w.maxBodyBytes) return;
  ctx.addIssue({
    code: "custom",
    path: ["maxInFlightBytes"],
    message: `at least webhooks.maxBodyBytes (${w.maxBodyBytes})`,
    input: w.maxInFlightBytes,
  });
});

const LogSchema = z.strictObject({
  level: oneOf(["trace", "debug", "info", "warn", "error", "fatal", "silent"]).default("info"),
  format: oneOf(["json", "pretty"]).default("json"),
});

/** The whole configuration; parsing `{}` gives every default. */
export const ConfigSchema = z
  .strictObject({
    platform: PlatformSchema.prefault({}),
    server: ServerSchema.prefault({}),
    poll: PollSchema.prefault({}),
    metrics: MetricsSchema.prefault({}),
    shard: ShardSchema.prefault({}),
    fieldMap: FieldMapSchema.prefault({}),
    states: StatesSchema.prefault({}),
    probe: ProbeSchema.prefault({}),
    policy: PolicySectionSchema.prefault({}),
    webhooks: WebhooksChecked.prefault({}),
    log: LogSchema.prefault({}),
    cost: CostSchema.prefault({}),
  })
  .transform((c, ctx) => {
    // The flavor's presets, where no setting said otherwise.
    const f = FLAVORS[c.platform.flavor];
    return {
      ...c,
      platform: { ...c.platform, apiPrefix: c.platform.apiPrefix ?? f.apiPrefix },
      poll: { ...c.poll, pageLimit: Math.min(c.poll.pageLimit, f.maxPageLimit) },
      cost: settleCost(c.cost, c.platform.flavor, (i) =>
        ctx.addIssue({ code: "custom", path: i.path, message: i.message, input: c.cost }),
      ),
    };
  });

/** The validated configuration every other module receives (defaults filled in). */
export type Config = z.infer<typeof ConfigSchema>;
