// The `platform:` settings: where the management API and the data plane are, how to authenticate,
// and the request budget every part of the daemon shares.
import { isIP } from "node:net";
import { z } from "zod";
import { bool, budget, duration, int, oneOf, text } from "../config/fields.js";
import { controlCharacterAt } from "../config/secret-file.js";
import type { SectionOf } from "../config/slice.js";
import { defineSlice, ENV_PREFIX } from "../config/slice.js";

const X = ENV_PREFIX;

/**
 * What each kind of platform presets; a setting given explicitly wins. E2B's hosted API serves the
 * management paths at the root of its base URL and rejects page limits above 100.
 */
export const FLAVORS = {
  sandboxapi: { apiPrefix: "/sandboxapi/v1", maxPageLimit: 10_000 },
  e2b: { apiPrefix: "", maxPageLimit: 100 },
} as const;

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

/** An HTTP header name (RFC 9110 token). */
const headerName = text.regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, { error: "an HTTP header name" });

/** One team of `platform.teams`: its id, a name for the info series, and its key's file (cloud). */
const TeamEntry = z.strictObject(
  {
    id: text.min(1, { error: "a team id" }).refine((s) => controlCharacterAt(s) < 0, {
      error: "a team id without line breaks or control characters",
    }),
    /** Shown in sandbox_team_info{team,team_name}; the id alone labels the series. */
    name: text.min(1, { error: "a team name" }).optional(),
    /** File holding the team's API key (E2B's cloud); without it, the admin token reads the team. */
    apiKeyFile: text.min(1, { error: "a file path" }).optional(),
    /** The team's daily spend budget (cost.currency); default cost.budget.daily. */
    dailyBudget: budget.optional(),
  },
  { error: "a team: {id, name?, apiKeyFile?, dailyBudget?}" },
);

/** A key that can go into an HTTP header: no line breaks or other control characters. */
const apiKey = text.refine((s) => controlCharacterAt(s) < 0, {
  error: "an API key without line breaks or control characters",
});

export const platformSlice = defineSlice({
  key: "platform",
  fields: {
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
     * Several teams watched by one exporter (config file only): two or more give every team-scoped
     * series a `team` label. One entry, or none, is the single team of apiKey as before.
     */
    teams: z.array(TeamEntry, { error: "a list of teams" }).default([]),
    /**
     * Also watch the teams GET /admin/sandboxes/running-counts names (self-hosted, with the admin
     * token): each is read with the admin token and X-Team-ID, as a listed team without a key.
     */
    /** Several teams: the team the probes run in (listed in teams); default the first listed. */
    probeTeam: text.min(1, { error: "a team id" }).optional(),
    discoverTeams: bool.default(false),
    /** A discovered team with no running sandbox for this long is no longer watched. */
    discoveredTeamIdleMs: duration().default(3_600_000),
    /**
     * Derived, not a setting: the loader sets it when HTTP_PROXY or HTTPS_PROXY (either case) is set,
     * and refuses it in a config file. The control channel then goes through undici's
     * EnvHttpProxyAgent, which reads those and NO_PROXY; else a plain Agent.
     */
    envProxy: z.boolean().default(false),
  },
  settings: [
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
      doc: "`sandboxapi` or `e2b` (E2B's hosted API: no prefix, pages of at most 100, E2B's filter forms, `connect` to resume)",
    },
    {
      path: "platform.apiPrefix",
      env: `${X}API_PREFIX`,
      flag: "api-prefix",
      kind: "string",
      help: "path of the management API below the base URL",
    },
    {
      path: "platform.adminTokenFile",
      env: `${X}ADMIN_TOKEN_FILE`,
      flag: "admin-token-file",
      kind: "string",
      help: "file holding the X-Admin-Token sent to the node endpoints",
      doc: "file holding the `X-Admin-Token` sent to `/nodes` (E2B serves nodes to admins only); a secret like the key",
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
      help: "data-plane proxy port (0: the scheme's own, 80 or 443)",
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
      doc: "how an agent call names its sandbox: `host` (Host `{agentPort}-{id}.{sandboxDomain}`, needs wildcard DNS) or `headers` (to `sandbox.{sandboxDomain}` with `E2b-Sandbox-Id` / `E2b-Sandbox-Port`, as E2B's SDK reaches hosted sandboxes; the node address is still dialled when `proxyNodeIp` is set)",
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
      doc: "the API key's team; unset, it is learned from the lifecycle events' `sandboxTeamId` (`poll.events` or the webhook), and until then the team collector fails with `ERR_TEAM_ID_UNKNOWN`",
    },
    {
      path: "platform.probeTeam",
      env: `${X}PROBE_TEAM`,
      flag: "probe-team",
      kind: "string",
      help: "with several teams, the team the probes run in",
      shownDefault: "the first of platform.teams",
    },
    {
      path: "platform.discoverTeams",
      env: `${X}DISCOVER_TEAMS`,
      flag: "discover-teams",
      kind: "bool",
      help: "also watch every team with running sandboxes (GET /admin/sandboxes/running-counts; needs the admin token)",
      doc: "also watch every team `GET /admin/sandboxes/running-counts` names, read with the admin token and `X-Team-ID` (self-hosted E2B; needs `platform.adminTokenFile`); a team found stays watched until it has had no running sandbox for `platform.discoveredTeamIdleMs` (see [Several teams](teams.md))",
    },
    {
      path: "platform.discoveredTeamIdleMs",
      env: `${X}DISCOVERED_TEAM_IDLE`,
      flag: "discovered-team-idle",
      kind: "duration",
      help: "how long a discovered team with no running sandbox stays watched",
    },
    {
      path: "platform.teamConcurrencyLimit",
      env: `${X}TEAM_CONCURRENCY_LIMIT`,
      flag: "team-concurrency-limit",
      kind: "int",
      help: "concurrent sandboxes the team may run (E2B's API does not serve it; a 429 naming it is learned too)",
      doc: 'concurrent sandboxes the team may run (E2B\'s API does not serve the number; a 429 naming it is learned too): `sandbox_team_concurrent_sandboxes_limit{source="config"}`',
    },
  ],
  check(section, ctx) {
    if (section.discoverTeams && !section.adminTokenFile)
      ctx.addIssue({
        code: "custom",
        path: ["discoverTeams"],
        message:
          "platform.adminTokenFile set as well: only the admin token reads GET /admin/sandboxes/running-counts",
      });
    if (section.probeTeam !== undefined && !section.teams.some((t) => t.id === section.probeTeam))
      ctx.addIssue({
        code: "custom",
        path: ["probeTeam"],
        message: `the id of a team of platform.teams (${section.probeTeam} is not listed)`,
      });
    const seen = new Set<string>();
    section.teams.forEach((team, i) => {
      if (seen.has(team.id))
        ctx.addIssue({
          code: "custom",
          path: ["teams", i, "id"],
          message: `a team id listed once (${team.id} is listed twice)`,
        });
      seen.add(team.id);
      if (section.teams.length > 1 && !team.apiKeyFile && !section.adminTokenFile)
        ctx.addIssue({
          code: "custom",
          path: ["teams", i, "apiKeyFile"],
          message: `the file of team ${team.id}'s API key (E2B's cloud), or platform.adminTokenFile set to read every team with the admin token (self-hosted)`,
        });
    });
  },
});

/** One team of platform.teams. */
export type TeamSetting = z.output<typeof TeamEntry>;

declare module "../config/settings.js" {
  interface Settings {
    /** `apiPrefix` is settled from the flavor's presets when no setting gives it. */
    platform: Omit<SectionOf<typeof platformSlice>, "apiPrefix"> & { apiPrefix: string };
  }
}
