// Several E2B teams on one simulated cluster (issue #39): the teams a simulator is given, checked
// and completed, and the deterministic teams of `npm run simulator -- --teams N`.
import { SimulatorError } from "./errors.js";
import { uuid } from "./generate.js";
import { deriveSeed, Prng } from "./prng.js";

/** One team of a simulator that serves several (SimulatorOptions.teams). */
export interface SimTeamOptions {
  /** The team's id: a UUID, as E2B's are (an X-Team-ID that is not one answers 400). */
  id: string;
  /** The team's API key, sent as X-API-Key (or `Authorization: Bearer`). */
  apiKey: string;
  /** Shown by `npm run simulator`; default `Team N`. */
  name?: string;
  /** The namespace of the team's snapshot names; default `sim-team-N`. */
  slug?: string;
  /** Sandboxes generated for the team; default an even share of SimulatorOptions.sandboxes. */
  sandboxes?: number;
  /** A create past this many running sandboxes answers 429 (E2B's text); default none. */
  concurrencyLimit?: number;
}

/** A team as the simulator runs it: every default filled, and the seed of its own fleet. */
export interface SimTeamSpec {
  readonly id: string;
  readonly apiKey: string;
  readonly name: string;
  readonly slug: string;
  readonly sandboxes: number;
  readonly concurrencyLimit: number | undefined;
  /** Distinct per team, so no two teams generate the same sandbox or template ids. */
  readonly seed: number;
}

const MAX_TEAM_SANDBOXES = 1_000_000;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const HEX32 = /^[0-9a-f]{32}$/;

/**
 * The team id an X-Team-ID names, lower case and dashed, or undefined when it is not a UUID
 * (E2B's GetTeamFromAdminToken parses it with uuid.Parse; its two usual spellings are taken).
 */
export function parseTeamId(raw: string): string | undefined {
  const id = raw.trim().toLowerCase();
  if (UUID.test(id)) return id;
  if (!HEX32.test(id)) return undefined;
  return `${id.slice(0, 8)}-${id.slice(8, 12)}-${id.slice(12, 16)}-${id.slice(16, 20)}-${id.slice(20)}`;
}

/** Checks the teams and fills their defaults; the teams without a count share `total` evenly. */
export function teamSpecs(
  teams: readonly SimTeamOptions[],
  total: number,
  seed: number,
): SimTeamSpec[] {
  if (teams.length === 0) throw new SimulatorError("teams must name at least one team");
  const ids = new Set<string>();
  const keys = new Set<string>();
  for (const t of teams) {
    const id = parseTeamId(t.id);
    if (id === undefined || id !== t.id)
      throw new SimulatorError(`team id '${t.id}' is not a lower-case UUID, as E2B's team ids are`);
    if (ids.has(id)) throw new SimulatorError(`team id '${id}' is given twice`);
    const n = t.sandboxes;
    if (n !== undefined && (!Number.isInteger(n) || n < 0 || n > MAX_TEAM_SANDBOXES))
      throw new SimulatorError(
        `team '${id}': sandboxes must be an integer in 0..${MAX_TEAM_SANDBOXES}`,
      );
    if (t.apiKey === "" || keys.has(t.apiKey))
      throw new SimulatorError(`team '${id}' needs an API key of its own`);
    ids.add(id);
    keys.add(t.apiKey);
  }
  const sharing = teams.filter((t) => t.sandboxes === undefined).length;
  let shared = 0;
  return teams.map((t, i) => {
    // The first teams take one more each until the remainder is used up.
    const share = t.sandboxes ?? Math.floor(total / sharing) + (shared++ < total % sharing ? 1 : 0);
    return {
      id: t.id,
      apiKey: t.apiKey,
      name: t.name ?? `Team ${i + 1}`,
      slug: t.slug ?? `sim-team-${i + 1}`,
      sandboxes: share,
      concurrencyLimit: t.concurrencyLimit,
      seed: seed + i,
    };
  });
}

/** `count` teams whose ids and E2B-shaped keys follow from `seed` alone (`--teams N`). */
export function derivedTeams(count: number, seed: number): SimTeamOptions[] {
  return Array.from({ length: count }, (_, i) => {
    const rng = new Prng(deriveSeed(seed, `team-${i + 1}`));
    return { id: uuid(rng), apiKey: `e2b_${rng.chars(40, "0123456789abcdef")}` };
  });
}

/** The admin token of `--teams N` when none is given: from `seed`, like the teams' keys. */
export function derivedAdminToken(seed: number): string {
  return `sim-admin-${new Prng(deriveSeed(seed, "admin-token")).chars(24)}`;
}
