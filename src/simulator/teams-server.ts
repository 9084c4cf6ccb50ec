// The management API of a simulator that serves several E2B teams: one SimContext per team behind
// one server. A request goes to the team its API key names or, with the admin token, to the team
// its X-Team-ID names (E2B's AdminApiKeyAuth + AdminTeamAuth, infra#2934); the cluster's routes
// (health, nodes, running counts) to the first team's context, which sees every team's fleet.
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { SimContext } from "./context.js";
import { COST_TRUTH_PATH } from "./cost-truth.js";
import { E2B_ADMIN_ROUTES, E2B_OPEN_ROUTES, e2bRoutes } from "./e2b-routes.js";
import { createSimServer, sendError } from "./http-io.js";
import { dispatch, isAdmin } from "./management-server.js";
import { matchRoute } from "./router.js";
import { parseTeamId } from "./teams.js";

/** The teams one server answers for, found by API key and by team id. */
interface TeamFront {
  readonly first: SimContext;
  readonly byKey: ReadonlyMap<string, SimContext>;
  readonly byId: ReadonlyMap<string, SimContext>;
}

/** Which team's context serves a request, or the status and message that refuse it. */
type TeamPick = { ctx: SimContext; authorized: boolean } | { refused: [number, string] };

/**
 * Why an admin's request names no team, as E2B words it: the authenticator's message, a newline,
 * then GetTeamFromAdminToken's (packages/auth middleware.go, packages/api handlers/store.go).
 */
const NO_TEAM_HEADER: [number, string] = [401, "authorization header is missing"];
const BAD_TEAM_ID: [number, string] = [400, "Invalid admin token teamID.\nInvalid team ID"];
const UNKNOWN_TEAM: [number, string] = [404, "Invalid admin token teamID.\nTeam not found"];

function header(req: IncomingMessage, name: string): string {
  const v = req.headers[name];
  return (Array.isArray(v) ? v[0] : v) ?? "";
}

/** The team whose key the request carries, as X-API-Key or as a bearer token. */
function keyedTeam(front: TeamFront, req: IncomingMessage): SimContext | undefined {
  const byHeader = front.byKey.get(header(req, "x-api-key"));
  if (byHeader) return byHeader;
  const auth = header(req, "authorization");
  return auth.startsWith("Bearer ") ? front.byKey.get(auth.slice("Bearer ".length)) : undefined;
}

/** The team an admin names by X-Team-ID, with E2B's statuses for none, a non-UUID and a stranger. */
function adminTeam(front: TeamFront, req: IncomingMessage): TeamPick {
  const raw = header(req, "x-team-id");
  if (raw === "") return { refused: NO_TEAM_HEADER };
  const id = parseTeamId(raw);
  if (id === undefined) return { refused: BAD_TEAM_ID };
  const ctx = front.byId.get(id);
  return ctx ? { ctx, authorized: true } : { refused: UNKNOWN_TEAM };
}

/**
 * Picks the team: the cluster's routes go to the first team (its dispatch checks the admin
 * token); a team's route to the key's team, else to the admin's X-Team-ID. E2B tries the API key
 * first, so a team's key wins over an X-Team-ID naming another team.
 */
function pickTeam(front: TeamFront, req: IncomingMessage): TeamPick {
  const url = new URL(req.url ?? "/", "http://simulator");
  const key = matchRoute(e2bRoutes, req.method ?? "GET", url.pathname).key;
  if (E2B_OPEN_ROUTES.has(key) || E2B_ADMIN_ROUTES.has(key))
    return { ctx: front.first, authorized: false };
  const keyed = keyedTeam(front, req);
  if (keyed) return { ctx: keyed, authorized: false };
  // Test-only, no auth: the first team's truth unless a key names another.
  if (url.pathname === COST_TRUTH_PATH) return { ctx: front.first, authorized: false };
  if (isAdmin(front.first, req)) return adminTeam(front, req);
  return { refused: [401, "missing or invalid API key"] };
}

/** Creates (does not listen) the management API server of several teams' contexts. */
export function createTeamsManagementServer(contexts: readonly SimContext[]): Server {
  const first = contexts[0];
  if (!first) throw new Error("a teams server needs at least one team");
  const front: TeamFront = {
    first,
    byKey: new Map(contexts.flatMap((c) => (c.apiKey ? [[c.apiKey, c] as const] : []))),
    byId: new Map(contexts.map((c) => [c.team.teamId, c])),
  };
  return createSimServer((req: IncomingMessage, res: ServerResponse) => {
    const pick = pickTeam(front, req);
    if ("refused" in pick) {
      sendError(res, ...pick.refused);
      return Promise.resolve();
    }
    return dispatch(pick.ctx, req, res, pick.authorized);
  });
}
