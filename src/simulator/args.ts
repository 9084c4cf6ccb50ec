// The flags of `npm run simulator` as SimulatorOptions: what main.ts starts, and what a test checks
// without starting a process. In E2B mode sandboxes end at their timeout, as E2B ends them, unless
// --no-expiry.
import { parseArgs } from "node:util";
import type { SimulatorOptions } from "./simulator.js";
import { derivedAdminToken, derivedTeams } from "./teams.js";

export const USAGE = `usage: npm run simulator -- [--sandboxes N] [--api-port P] [--data-port P] [--seed S]
  [--templates N] [--nodes N] [--host 127.0.0.1|::1] [--domain D] [--api-key K] [--token-style header|body]
  [--flavor sandboxapi|e2b] [--admin-token T]   (e2b: E2B's hosted API at the root; /nodes needs X-Admin-Token T)
  [--no-expiry]   (e2b: keep sandboxes past their timeout; by default each is killed, or paused when
                  created with auto-pause, at its timeout as E2B does)
  [--team-id UUID] [--team-concurrency-limit N] [--team-metrics-empty] [--webhook-payload api|snake]
  [--churn-ms MS] [--churn-orphaned-one-in N]   (every MS one sandbox killed, every Nth as orphaned, one created)
  [--teams N]     (e2b, the default with it: N teams, each with its own API key and a share of the
                  sandboxes; the admin token, derived unless --admin-token, reads any with X-Team-ID)`;

/** What the command line asks for: the simulator's options, or the usage text. */
export type SimulatorArgs = { help: true } | { help: false; options: SimulatorOptions };

/** Teams `--teams` takes at most: enough for any test of the exporter's lanes. */
const MAX_TEAMS = 100;

function int(name: string, raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0) throw new Error(`--${name} must be a non-negative integer`);
  return n;
}

/** Parses the simulator's flags (`args`: the arguments after the script); throws on a bad one. */
export function simulatorArgs(args: readonly string[]): SimulatorArgs {
  const { values } = parseArgs({
    args: [...args],
    options: {
      sandboxes: { type: "string" },
      "api-port": { type: "string" },
      "data-port": { type: "string" },
      seed: { type: "string" },
      templates: { type: "string" },
      nodes: { type: "string" },
      host: { type: "string" },
      domain: { type: "string" },
      "api-key": { type: "string" },
      "token-style": { type: "string" },
      flavor: { type: "string" },
      "admin-token": { type: "string" },
      "no-expiry": { type: "boolean" },
      "team-id": { type: "string" },
      "team-concurrency-limit": { type: "string" },
      "team-metrics-empty": { type: "boolean" },
      "webhook-payload": { type: "string" },
      "churn-ms": { type: "string" },
      "churn-orphaned-one-in": { type: "string" },
      teams: { type: "string" },
      help: { type: "boolean" },
    },
  });
  if (values.help) return { help: true };
  const tokenStyle = values["token-style"];
  if (tokenStyle !== undefined && tokenStyle !== "header" && tokenStyle !== "body") {
    throw new Error("--token-style must be header or body");
  }
  const teams = teamsOptions(values);
  const flavor = values.flavor ?? (teams ? "e2b" : undefined);
  if (flavor !== undefined && flavor !== "sandboxapi" && flavor !== "e2b") {
    throw new Error("--flavor must be sandboxapi or e2b");
  }
  const payload = values["webhook-payload"];
  if (payload !== undefined && payload !== "api" && payload !== "snake") {
    throw new Error("--webhook-payload must be api or snake");
  }
  const churnMs = int("churn-ms", values["churn-ms"]);
  const orphanedOneIn = int("churn-orphaned-one-in", values["churn-orphaned-one-in"]);
  return {
    help: false,
    options: {
      sandboxes: int("sandboxes", values.sandboxes),
      apiPort: int("api-port", values["api-port"]),
      dataPort: int("data-port", values["data-port"]),
      seed: int("seed", values.seed),
      templates: int("templates", values.templates),
      nodes: int("nodes", values.nodes),
      host: values.host,
      domain: values.domain,
      apiKey: values["api-key"],
      tokenStyle,
      flavor,
      adminToken: values["admin-token"],
      teamId: values["team-id"],
      teamConcurrencyLimit: int("team-concurrency-limit", values["team-concurrency-limit"]),
      teamMetricsEmpty: values["team-metrics-empty"],
      webhookPayload: payload,
      // E2B ends every sandbox at its timeout; a simulator of it that did not would fail every
      // auto-pause probe with not_auto_paused.
      expireSandboxes: flavor === "e2b" && values["no-expiry"] !== true,
      ...(churnMs !== undefined && {
        churn: { everyMs: churnMs, ...(orphanedOneIn !== undefined && { orphanedOneIn }) },
      }),
      ...teams,
    },
  };
}

/**
 * `--teams N`: N teams whose ids and keys follow from the seed, and an admin token (derived
 * unless `--admin-token`), so that a restart with the same flags serves the same credentials.
 */
function teamsOptions(
  values: Record<string, string | boolean | undefined>,
): Pick<SimulatorOptions, "teams" | "adminToken"> | undefined {
  const count = int("teams", values.teams as string | undefined);
  if (count === undefined) return undefined;
  if (count < 1 || count > MAX_TEAMS) throw new Error(`--teams must be in 1..${MAX_TEAMS}`);
  for (const flag of ["api-key", "team-id", "team-concurrency-limit"])
    if (values[flag] !== undefined) throw new Error(`--${flag} is per team: not with --teams`);
  const seed = int("seed", values.seed as string | undefined) ?? 1;
  const adminToken = (values["admin-token"] as string | undefined) ?? derivedAdminToken(seed);
  return { teams: derivedTeams(count, seed), adminToken };
}
