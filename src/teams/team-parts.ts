// What the team set shares with its callers: the cluster's health in a team's snapshot, each
// team's section of /status, sandbox_team_info, and the refusal of a reload that changes the mode.
import { collectorStatus } from "../collect/collector-status.js";
import type { Poller } from "../collect/poller.js";
import type { Snapshot } from "../collect/snapshot.js";
import { family as familyOf } from "../exposition/descriptor.js";
import { escapeLabel } from "../exposition/text.js";
import type { Services, Started } from "../feature.js";
import { TEAM_INFO } from "../metrics/team-info-family.js";
import { statusReport } from "../server/status.js";
import { ExporterError } from "../util/errors.js";
import type { Team } from "./teams.js";

/** One team at run time. */
export interface TeamRun {
  readonly team: Team;
  readonly services: Services;
  /** Its per-team features, by name. */
  readonly started: ReadonlyMap<string, Started>;
  /** Set once the poll reads it. */
  poller?: Poller;
}

/**
 * A team's snapshot with the cluster's health read (status and value) from the exporter's latest
 * snapshot; before its first, health has not succeeded.
 */
export function withClusterHealth(
  team: Snapshot,
  cluster: Snapshot | undefined,
  everyMs: number,
): Snapshot {
  const health =
    cluster?.collectors.health ??
    collectorStatus("health", undefined, undefined, {
      unsupported: false,
      runs: true,
      now: team.finishedAt,
      everyMs,
    });
  return {
    ...team,
    collectors: { ...team.collectors, health },
    ...(cluster?.health ? { health: cluster.health } : {}),
  };
}

/** Each team's collectors (as /status shows the exporter's) and its features' sections. */
export function teamsStatus(runs: readonly TeamRun[], now: number): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const r of runs) {
    const sections: Record<string, unknown> = r.team.name ? { name: r.team.name } : {};
    for (const [name, f] of r.started) if (f.status) sections[name] = f.status();
    out[r.team.id] = statusReport(r.poller?.latest, now, sections);
  }
  return out;
}

/** sandbox_team_info: each watched team, with its name where one is configured. */
export function teamInfo(ns: string, teams: readonly Team[]): string {
  const family = familyOf(ns, TEAM_INFO);
  for (const t of teams)
    family.add(
      `{team="${escapeLabel(t.id)}"${t.name ? `,team_name="${escapeLabel(t.name)}"` : ""}}`,
      1,
    );
  return family.render("prometheus");
}

/** A reload between one team and several: refused (it takes a restart), the teams kept. */
export class TeamsModeChangedError extends ExporterError {
  constructor(toSeveral: boolean) {
    super(
      "ERR_TEAMS_MODE_CHANGED",
      toSeveral
        ? "platform.teams: going from one team to several takes a restart; the running team is kept"
        : "platform.teams: going from several teams to one takes a restart; the running teams are kept",
    );
  }
}
