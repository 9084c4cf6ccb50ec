// What every simulator handler reads: the state, the fault switchboard, counters and settings.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Clock } from "../util/clock.js";
import type { SimCounters } from "./counters.js";
import type { SimEventLog } from "./events.js";
import type { SimFaults } from "./faults.js";
import type { Timers } from "./http-io.js";
import type { ListOrder } from "./list-sandboxes.js";
import type { Prng } from "./prng.js";
import type { SimState } from "./state.js";
import type { TeamHistory } from "./team-routes.js";
import type { SimWebhooks } from "./webhooks.js";

/** The API a simulator serves: this platform's management API, or E2B's hosted API. */
export type SimFlavor = "sandboxapi" | "e2b";

/** The simulated team (E2B mode): who it is, its limit and its metrics. */
export interface SimTeam {
  readonly teamId: string;
  /** A create past this many running sandboxes answers 429 with E2B's text; unset: no limit. */
  readonly concurrencyLimit: number | undefined;
  /** Team metrics answer `[]`, as self-hosted installs have (infra#1825). */
  readonly emptyMetrics: boolean;
  readonly history: TeamHistory;
}

/** Shared, mutable simulator context handed to every handler. */
export interface SimContext {
  readonly state: SimState;
  readonly faults: SimFaults;
  readonly counters: SimCounters;
  readonly clock: Clock;
  readonly timers: Timers;
  readonly domain: string;
  readonly apiKey: string | undefined;
  /** Whose API is served: this platform's (below /sandboxapi/v1) or E2B's hosted one (at the root). */
  readonly flavor: SimFlavor;
  /** X-Admin-Token that E2B mode requires on the node endpoints; none: they always answer 403. */
  readonly adminToken: string | undefined;
  readonly pageSizeCap: number;
  readonly tokenStyle: "header" | "body";
  /** The order of `/v2/sandboxes` pages. */
  readonly listOrder: ListOrder;
  /** Randomness for created sandboxes (ids, tokens), apart from the fleet's. */
  readonly createRng: Prng;
  /** Lifecycle events, as E2B's events API serves them. */
  readonly events: SimEventLog;
  /** Registered lifecycle webhooks and their sender. */
  readonly webhooks: SimWebhooks;
  readonly team: SimTeam;
  /**
   * Every team's context on this cluster (the nodes they share, the admin's running counts), the
   * first team's first; a simulator of one team: this context alone.
   */
  readonly cluster: readonly SimContext[];
  /** Next process id handed out by process.Process/Start. */
  nextPid: number;
}

/** A management API handler; `params` are the route's {placeholders}. */
export type ApiHandler = (
  ctx: SimContext,
  req: IncomingMessage,
  res: ServerResponse,
  params: readonly string[],
  url: URL,
) => void | Promise<void>;
