// sandbox_team_info, the teams this exporter watches. The team set (src/teams/, in the composition
// root) writes it; its descriptor is declared here, below the catalog, so the catalog can list it.
import { gauge, setting, WITH_TEAMS } from "../exposition/descriptor.js";

export const TEAM_INFO = gauge(
  "team_info",
  "The teams this exporter watches (platform.teams), value 1: team is the id every team-scoped series carries, team_name the configured name.",
  ["team", { name: "team_name", with: WITH_TEAMS }],
  { on: setting("platform.discoverTeams"), flavor: "e2b" },
);
