// Teams found on the platform (platform.discoverTeams, self-hosted E2B with the admin token): GET
// /admin/sandboxes/running-counts names every team with running sandboxes ({teamID: count}; teams
// with none are left out). A team found is watched, read with the admin token and X-Team-ID, until
// it has had no running sandbox for platform.discoveredTeamIdleMs. GET /teams is never asked: it
// takes a user's token and mints an API key on every call.

import { controlCharacterAt } from "../config/secret-file.js";
import type { ControlClient } from "../platform/control/control.js";
import { errorSummary } from "../util/errors.js";

export const RUNNING_COUNTS = "/admin/sandboxes/running-counts";
/** Longest team id taken from the platform's answer: a longer key is dropped and counted. */
const MAX_TEAM_ID = 128;

/** What running-counts answered: the teams with running sandboxes, and the entries dropped. */
export interface RunningCounts {
  readonly teams: ReadonlyMap<string, number>;
  readonly dropped: number;
}

/** Parses running-counts: one bad entry is dropped and counted, never the answer. */
export function parseRunningCounts(body: unknown): RunningCounts {
  if (body === null || typeof body !== "object" || Array.isArray(body))
    throw new Error("running-counts: expected an object of team id to count");
  const teams = new Map<string, number>();
  let dropped = 0;
  for (const [id, n] of Object.entries(body)) {
    const ok =
      id !== "" &&
      id.length <= MAX_TEAM_ID &&
      controlCharacterAt(id) < 0 &&
      typeof n === "number" &&
      Number.isFinite(n) &&
      n >= 0;
    if (ok) teams.set(id, n as number);
    else dropped++;
  }
  return { teams, dropped };
}

/** What discovery is given. */
export interface DiscoveryOptions {
  /** The exporter's client (it sends the admin token on admin calls). */
  control: ControlClient;
  /** A team id found with running sandboxes and not watched yet. */
  add(id: string): Promise<void>;
  /** A discovered team idle for idleMs. */
  remove(id: string): Promise<void>;
  /** The teams watched now. */
  watched(): readonly string[];
  /** Listed teams now (a reload changes them): never added or removed by discovery. */
  listed(): ReadonlySet<string>;
  idleMs: number;
  /** How often running-counts is asked (the platform refreshes it about every 5 s). */
  everyMs: number;
}

/** The state of discovery, for /status. */
export interface DiscoveryStatus {
  lastRead?: string;
  error?: { code: string; message: string };
  dropped: number;
  discovered: string[];
}

/** Reads running-counts at most every `everyMs` and adds and removes the discovered teams. */
export class TeamDiscovery {
  /** Discovered team id -> when it last had a running sandbox (ms). */
  private readonly lastBusy = new Map<string, number>();
  private readAt = Number.NEGATIVE_INFINITY;
  private state: DiscoveryStatus = { dropped: 0, discovered: [] };

  constructor(private readonly o: DiscoveryOptions) {}

  /** One round at `now` if one is due: read, add the new teams, remove the idle discovered ones. */
  async round(now: number): Promise<void> {
    if (now - this.readAt < this.o.everyMs) return;
    this.readAt = now;
    let counts: RunningCounts;
    try {
      const reply = await this.o.control.getJsonReply(
        RUNNING_COUNTS,
        RUNNING_COUNTS,
        undefined,
        parseRunningCounts,
        { admin: true },
      );
      counts = reply.body;
    } catch (err) {
      // A failed read removes nothing: idle time counts only from answers.
      this.state = { ...this.state, error: errorSummary(err) };
      return;
    }
    const watched = new Set(this.o.watched());
    const listed = this.o.listed();
    for (const id of this.lastBusy.keys()) if (listed.has(id)) this.lastBusy.delete(id);
    for (const [id, n] of counts.teams) {
      if (listed.has(id)) continue;
      if (n > 0 || !this.lastBusy.has(id)) this.lastBusy.set(id, now);
      if (!watched.has(id)) await this.o.add(id);
    }
    for (const [id, at] of this.lastBusy)
      if (now - at >= this.o.idleMs) {
        this.lastBusy.delete(id);
        await this.o.remove(id);
      }
    this.state = {
      lastRead: new Date(now).toISOString(),
      dropped: this.state.dropped + counts.dropped,
      discovered: [...this.lastBusy.keys()],
    };
  }

  /** Whether `id` is a team discovery found and still watches. */
  found(id: string): boolean {
    return this.lastBusy.has(id);
  }

  status(): DiscoveryStatus {
    return this.state;
  }
}
