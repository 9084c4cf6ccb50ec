// The lines `npm run simulator` prints at start: where the simulator listens, and with several
// teams each team's id and key and the admin token, for pasting into an exporter's configuration.
import type { Simulator, SimulatorOptions } from "./simulator.js";

/** What the simulator serves and where, and with several teams each team's id and key. */
export function banner(sim: Simulator, options: SimulatorOptions): string {
  const e2b = sim.flavor === "e2b";
  const teams = options.teams ? sim.teams : [];
  const total = sim.teams.reduce((n, t) => n + t.state.sandboxes.size, 0);
  const keyed = teams.length > 0 ? "  (each team's API key required)" : "  (API key required)";
  const split = teams.length > 0 ? ` in ${teams.length} teams` : "";
  return [
    `management API  ${sim.managementUrl}  (base_url ${sim.apiUrl}${e2b ? ", E2B's API" : ""})`,
    `data plane      ${sim.dataUrl}  (Host: <port>-<sandboxId>.${sim.domain})`,
    `sandboxes       ${total}${split}${options.apiKey || teams.length > 0 ? keyed : ""}`,
    ...teams.map(
      (t, i) =>
        `${`team ${i + 1}`.padEnd(16)}id ${t.id}  key ${t.apiKey}  sandboxes ${t.state.sandboxes.size}  (${t.name}, snapshots ${t.slug}/...)`,
    ),
    ...(teams.length > 0 && options.adminToken
      ? [
          `admin token     ${options.adminToken}  (X-Admin-Token; with X-Team-ID on a team's routes)`,
        ]
      : []),
    ...(e2b
      ? [
          `timeouts        ${options.expireSandboxes ? "enforced: killed, or paused with auto-pause (--no-expiry: kept)" : "not enforced (--no-expiry)"}`,
        ]
      : []),
    "",
  ].join("\n");
}
