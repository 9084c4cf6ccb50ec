// startSimulator: the fake platform on two loopback ports (management API and data-plane proxy).

import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Clock } from "../util/clock.js";
import { type FleetChurn, startChurn } from "./churn.js";
import type { SimFlavor } from "./context.js";
import type { SimCounters } from "./counters.js";
import { createDataPlaneServer } from "./data-plane-server.js";
import { SimulatorError } from "./errors.js";
import type { SimEventLog } from "./events.js";
import type { SimFaults } from "./faults.js";
import type { ListOrder } from "./list-sandboxes.js";
import { API_PREFIX, createManagementServer } from "./management-server.js";
import type { SimState } from "./state.js";
import { singleRun, type TeamRun, teamOf, teamRuns } from "./team-contexts.js";
import { type SimTeamOptions, teamSpecs } from "./teams.js";
import { createTeamsManagementServer } from "./teams-server.js";
import type { SimWebhooks, WebhookPayloadStyle } from "./webhooks.js";

/** Port of the in-sandbox agent, as used in `{port}-{id}.{domain}` host names. */
export const ENVD_PORT = 49983;

/**
 * Exporter flags that dial a simulator's data plane directly: every agent connection to the
 * loopback node address on `dataPort`, in plain HTTP.
 */
export function dataPlaneFlags(dataPort: number): string[] {
  return [
    "--proxy-node-ip",
    "127.0.0.1",
    "--proxy-port-http",
    String(dataPort),
    "--proxy-scheme",
    "http",
  ];
}
const MAX_SANDBOXES = 1_000_000;

export interface SimulatorOptions {
  /** Loopback address to listen on: "127.0.0.1" (default), "::1" or "localhost". */
  host?: string;
  /** Management API port; 0 (default) picks a free one. */
  apiPort?: number;
  /** Data-plane proxy port; 0 (default) picks a free one. */
  dataPort?: number;
  /** Sandbox domain; default "sandbox.test". */
  domain?: string;
  /** When set, management and create calls need `X-API-Key: key` or `Authorization: Bearer key`. */
  apiKey?: string;
  /**
   * "sandboxapi" (default): this platform's API below /sandboxapi/v1. "e2b": E2B's hosted API at
   * the root (no /cluster/overview, nodes for `adminToken` only, health 204, connect to resume,
   * E2B's record shapes, a limit above `pageSizeCap` refused, pages newest first).
   */
  flavor?: SimFlavor;
  /**
   * E2B mode: the X-Admin-Token the node endpoints (unset: always 403) and the running counts
   * (unset: always 401) require; with `teams`, it also reads any team named by X-Team-ID.
   */
  adminToken?: string;
  /** Initial sandbox count (default 300), generated deterministically from `seed`. */
  sandboxes?: number;
  /** Template count, default 5. */
  templates?: number;
  /**
   * envd versions the generated templates take in turn (template i gets `[i % length]`), and so
   * their sandboxes; default the current envd only. `ENVD_VERSION_MIX` spans every boundary.
   */
  envdVersions?: readonly string[];
  /** Node count, default 3. */
  nodes?: number;
  /** Seed of every generated value, default 1. */
  seed?: number;
  /** The server caps `limit` to this (E2B mode refuses more with a 400); default 100. */
  pageSizeCap?: number;
  /** Next token in the `x-next-token` header with a bare array body (default) or in `{sandboxes, nextToken}`. */
  tokenStyle?: "header" | "body";
  /** `/v2/sandboxes` pages by id or newest first, then by id, as E2B pages them (E2B mode's default). */
  listOrder?: ListOrder;
  /** Generated log entries per sandbox, default 5. */
  logLinesPerSandbox?: number;
  /** Source of timestamps (startedAt, log times); default the system clock. */
  clock?: Clock;
  /** E2B mode: the team of the API key (events, team metrics); default a fixed uuid. */
  teamId?: string;
  /** E2B mode: the team's slug, the namespace of its snapshot names; default "sim-team". */
  teamSlug?: string;
  /** E2B mode: a create past this many running sandboxes answers 429 (E2B's text); default none. */
  teamConcurrencyLimit?: number;
  /** E2B mode: team metrics answer `[]`, as self-hosted installs have (infra#1825). */
  teamMetricsEmpty?: boolean;
  /** How long lifecycle events are kept, simulator clock ms; default 7 days (E2B's). */
  eventRetentionMs?: number;
  /** Lifecycle events kept at most; default 100,000. */
  maxEvents?: number;
  /** Webhook delivery: attempts per event and webhook (default 3) and the delay between them (default 10 s). */
  webhookMaxAttempts?: number;
  webhookRetryDelayMs?: number;
  /** Webhook deliveries under way at most (default 64); past it events are dropped and counted. */
  webhookMaxInFlight?: number;
  /** Webhook body spelling: "api" (default, as the events API answers) or "snake" (as the orchestrator marshals). */
  webhookPayload?: WebhookPayloadStyle;
  /** Fleet churn (the demo's): every `everyMs`, one running sandbox is killed and one created. */
  churn?: FleetChurn;
  /**
   * End sandboxes at their timeout as E2B does (expiry.ts): paused when created with auto-pause,
   * else killed. Sets `faults.lifecycle.expireSandboxes` at start (`faults.clear()` turns it off).
   * Off by default here, where tests drive the clock; `npm run simulator` turns it on in E2B mode.
   */
  expireSandboxes?: boolean;
  /**
   * E2B mode with several teams (issue #39): a fleet, event log, webhooks, counters and faults of
   * its own per team, behind one management API and one data plane, on shared nodes. A request
   * goes to the team of its API key, or, with `adminToken`, to the one its X-Team-ID names.
   * `apiKey`, `teamId`, `teamSlug` and `teamConcurrencyLimit` are then set per team instead.
   */
  teams?: readonly SimTeamOptions[];
}

/** One team a simulator serves: who it is and what is its own. */
export interface SimulatorTeam {
  readonly id: string;
  /** Undefined for the single team of a simulator started without a key. */
  readonly apiKey: string | undefined;
  readonly name: string;
  /** The namespace of its snapshot names. */
  readonly slug: string;
  readonly state: SimState;
  readonly faults: SimFaults;
  readonly counters: SimCounters;
  readonly events: SimEventLog;
  readonly webhooks: SimWebhooks;
}

export interface Simulator {
  /** Base URL of the management service; the API itself is under `${apiUrl}/sandboxapi/v1`. */
  readonly apiUrl: string;
  /** Where the management API is: `${apiUrl}/sandboxapi/v1`, or `apiUrl` itself in E2B mode. */
  readonly managementUrl: string;
  /** The API served (see SimulatorOptions.flavor). */
  readonly flavor: SimFlavor;
  /** Port of the data-plane proxy (route by Host `{port}-{id}.{domain}`). */
  readonly dataPort: number;
  /** `http://host:dataPort`, for dialling the data plane directly. */
  readonly dataUrl: string;
  readonly domain: string;
  /** Every team served, the first first: one unless started with `teams`. */
  readonly teams: readonly SimulatorTeam[];
  /** The team of id `id`; throws for an id no team has. */
  team(id: string): SimulatorTeam;
  /** The first team's counters, faults, state, events and webhooks, as `teams[0]` has them. */
  readonly counters: SimCounters;
  readonly faults: SimFaults;
  readonly state: SimState;
  /** Lifecycle events (E2B mode serves them at /events/sandboxes). */
  readonly events: SimEventLog;
  /** Registered webhooks and the attempts made to deliver to them. */
  readonly webhooks: SimWebhooks;
  /** Host header naming a sandbox's agent port, e.g. `49983-i123.sandbox.test`. */
  sandboxHost(sandboxId: string, port?: number): string;
  close(): Promise<void>;
}

function checkLoopback(host: string): void {
  if (host === "::1" || host === "localhost" || /^127\.\d+\.\d+\.\d+$/.test(host)) return;
  throw new SimulatorError(`simulator listens on loopback only, not '${host}'`);
}

function listen(server: Server, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

function shut(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

/** Starts the fake platform and resolves once both ports listen. */
export async function startSimulator(options: SimulatorOptions = {}): Promise<Simulator> {
  const host = options.host ?? "127.0.0.1";
  const { sandboxes, flavor } = checkOptions(options, host);
  const seed = options.seed ?? 1;
  const runs = options.teams
    ? teamRuns(options, teamSpecs(options.teams, sandboxes, seed), flavor)
    : [singleRun(options, seed, sandboxes, flavor)];
  const ctx = (runs[0] as TeamRun).ctx;
  if (options.expireSandboxes) for (const r of runs) r.ctx.faults.lifecycle.expireSandboxes = true;
  const { domain } = ctx;
  const api = options.teams
    ? createTeamsManagementServer(runs.map((r) => r.ctx))
    : createManagementServer(ctx);
  const data = createDataPlaneServer(ctx);
  const urlHost = host.includes(":") ? `[${host}]` : host;
  let apiPort: number;
  let dataPort: number;
  try {
    apiPort = await listen(api, options.apiPort ?? 0, host);
    dataPort = await listen(data, options.dataPort ?? 0, host);
  } catch (err) {
    await Promise.all([shut(api), shut(data)]);
    throw err;
  }
  const apiUrl = `http://${urlHost}:${apiPort}`;
  const churn = options.churn;
  const stopChurns = churn ? runs.map((r) => startChurn(r.ctx.state, churn, r.seed)) : [];
  const teams = runs.map(teamOf);
  return {
    apiUrl,
    managementUrl: flavor === "e2b" ? apiUrl : `${apiUrl}${API_PREFIX}`,
    flavor,
    dataPort,
    dataUrl: `http://${urlHost}:${dataPort}`,
    domain,
    teams,
    team(id) {
      const team = teams.find((t) => t.id === id);
      if (!team) throw new SimulatorError(`the simulator serves no team '${id}'`);
      return team;
    },
    counters: ctx.counters,
    faults: ctx.faults,
    state: ctx.state,
    events: ctx.events,
    webhooks: ctx.webhooks,
    sandboxHost: (sandboxId, port = ENVD_PORT) => `${port}-${sandboxId}.${domain}`,
    async close() {
      for (const stop of stopChurns) stop();
      for (const r of runs) r.ctx.timers.cancelAll();
      await Promise.all([shut(api), shut(data), ...runs.map((r) => r.ctx.webhooks.close())]);
    },
  };
}

/** Refuses options the simulator cannot honour; the fleet size and the flavor, checked. */
function checkOptions(
  options: SimulatorOptions,
  host: string,
): { sandboxes: number; flavor: SimFlavor } {
  checkLoopback(host);
  const sandboxes = options.sandboxes ?? 300;
  if (!Number.isInteger(sandboxes) || sandboxes < 0 || sandboxes > MAX_SANDBOXES) {
    throw new SimulatorError(`sandboxes must be an integer in 0..${MAX_SANDBOXES}`);
  }
  const flavor = options.flavor ?? (options.teams ? "e2b" : "sandboxapi");
  if (flavor !== "sandboxapi" && flavor !== "e2b")
    throw new SimulatorError(`flavor must be sandboxapi or e2b, not '${String(flavor)}'`);
  if (flavor === "e2b" && options.tokenStyle === "body")
    throw new SimulatorError("E2B sends the next token in a header: tokenStyle body is not E2B's");
  if (options.churn && !(options.churn.everyMs > 0))
    throw new SimulatorError("churn.everyMs must be positive");
  if (options.teams) checkTeamsOptions(options, flavor);
  return { sandboxes, flavor };
}

/** Several teams are E2B's, and each sets its own key, id, slug and limit. */
function checkTeamsOptions(options: SimulatorOptions, flavor: SimFlavor): void {
  if (flavor !== "e2b") throw new SimulatorError("teams are served in E2B mode only");
  const perTeam = ["apiKey", "teamId", "teamSlug", "teamConcurrencyLimit"] as const;
  const set = perTeam.filter((k) => options[k] !== undefined);
  if (set.length > 0)
    throw new SimulatorError(`with teams, set ${set.join(", ")} on each team instead`);
}
