// The one configuration schema: the seed's client fields plus the exporter's own settings.
import { Cron } from "croner";
import { z } from "zod";
import { parseDuration } from "../util/duration.js";

const duration = z.union([z.string(), z.number()]).transform((v, ctx) => {
  try {
    return parseDuration(v);
  } catch (err) {
    ctx.addIssue({ code: "custom", message: (err as Error).message });
    return z.NEVER;
  }
});

const schedule = z.string().refine(
  (spec) => {
    try {
      parseDuration(spec);
      return true;
    } catch {
      try {
        new Cron(spec, { paused: true }).stop();
        return true;
      } catch {
        return false;
      }
    }
  },
  { message: "expected an interval like 15s or a cron expression like */15 * * * * *" },
);

const listen = z
  .string()
  .regex(/^(?:\[[^\]]+\]|[^:]*):\d{1,5}$/, { message: "expected host:port, [::1]:port or :port" });

const labelName = z
  .string()
  .regex(/^[a-zA-Z_][a-zA-Z0-9_]*$/, { message: "expected a Prometheus label name" });

const PlatformSchema = z.object({
  apiUrl: z.union([z.literal(""), z.url({ protocol: /^https?$/ })]).default(""),
  apiKey: z.string().default(""),
  apiKeyFile: z.string().optional(),
  sandboxDomain: z.string().min(1).default("e2b.app"),
  timeoutMs: duration.default(10_000),
  proxyNodeIp: z.string().default(""),
  /** 0 means the scheme's default port. */
  proxyPortHttp: z.number().int().min(0).max(65_535).default(0),
  proxyScheme: z.enum(["http", "https"]).default("https"),
  authStyle: z.enum(["x-api-key", "bearer"]).default("x-api-key"),
  authHeader: z.string().min(1).default("X-API-Key"),
  agentPort: z.number().int().min(1).max(65_535).default(49_983),
  retries: z.number().int().min(0).max(10).default(2),
});

const ServerSchema = z
  .object({
    listen: listen.default("0.0.0.0:9464"),
    bearerTokenFile: z.string().optional(),
    /** user -> hex SHA-256 of the password. */
    basicAuthUsers: z.record(z.string(), z.string().regex(/^[0-9a-fA-F]{64}$/)).optional(),
    tlsCertFile: z.string().optional(),
    tlsKeyFile: z.string().optional(),
  })
  .refine((s) => (s.tlsCertFile === undefined) === (s.tlsKeyFile === undefined), {
    message: "tlsCertFile and tlsKeyFile go together",
    path: ["tlsKeyFile"],
  });

const PollSchema = z.object({
  schedule: schedule.default("15s"),
  pageLimit: z.number().int().min(1).max(10_000).default(100),
  maxPages: z.number().int().min(1).default(10_000),
  state: z.string().optional(),
  metadata: z.string().optional(),
  nodeDetails: z.boolean().default(false),
  templateDetails: z.boolean().default(false),
});

const MetricsSchema = z.object({
  namespace: labelName.default("sandbox"),
  perSandboxMetrics: z.boolean().default(false),
  metadataLabels: z.array(z.string().min(1)).default([]),
  maxSandboxSeries: z.number().int().min(0).default(50_000),
});

const ShardSchema = z
  .object({
    index: z.number().int().min(0).default(0),
    total: z.number().int().min(1).default(1),
  })
  .refine((s) => s.index < s.total, {
    message: "shard index must be below total shards",
    path: ["index"],
  });

const ResourceMap = z.record(z.string(), z.string());

/** The whole configuration, after defaults. */
export const ConfigSchema = z.object({
  platform: PlatformSchema.prefault({}),
  server: ServerSchema.prefault({}),
  poll: PollSchema.prefault({}),
  metrics: MetricsSchema.prefault({}),
  shard: ShardSchema.prefault({}),
  fieldMap: z
    .object({
      sandbox: ResourceMap.optional(),
      node: ResourceMap.optional(),
      template: ResourceMap.optional(),
      log: ResourceMap.optional(),
      list: ResourceMap.optional(),
    })
    .default({}),
  states: z
    .object({
      running: z.array(z.string()).default(["running", "active"]),
      paused: z.array(z.string()).default(["paused", "suspended"]),
    })
    .prefault({}),
  probe: z
    .looseObject({
      enabled: z.boolean().default(false),
      schedule: schedule.default("60s"),
      template: z.string().default("base"),
      timeoutMs: duration.default(60_000),
      phaseTimeoutMs: duration.default(20_000),
      instance: z.string().min(1).default("default"),
      command: z.string().includes("{nonce}").optional(),
      filePath: z.string().min(1).default("/tmp/sandbox-exporter-probe.txt"),
    })
    .prefault({}),
  policy: z
    .looseObject({
      enabled: z.boolean().default(false),
      file: z.string().optional(),
      dryRun: z.boolean().default(true),
    })
    .prefault({}),
  log: z
    .object({
      level: z.enum(["trace", "debug", "info", "warn", "error", "fatal", "silent"]).default("info"),
      format: z.enum(["json", "pretty"]).default("json"),
    })
    .prefault({}),
});

/** The validated configuration every other module receives. */
export type Config = z.infer<typeof ConfigSchema>;
