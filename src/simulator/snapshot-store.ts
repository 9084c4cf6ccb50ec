// The team's snapshot templates, as E2B keeps them (envs with source 'snapshot_template', their
// build assignments and aliases): each has a raw id, at most one name in the team's namespace and
// one build per snapshot taken under it. Times come from the simulator's clock.
import type { Clock } from "../util/clock.js";
import { SimulatorError } from "./errors.js";
import { uuid } from "./generate.js";
import type { SimSandbox } from "./model.js";
import type { Prng } from "./prng.js";
import { aliasOf, DEFAULT_TAG } from "./template-names.js";

/** The team slug names are namespaced with, unless the simulator is given one. */
export const DEFAULT_TEAM_SLUG = "sim-team";
const SLUG = /^[a-z0-9-_]+$/;
/** Length of E2B's generated template ids (id.Generate: uniuri.UUIDLen). */
const RAW_ID_LENGTH = 20;

/** One build of a snapshot template: a snapshot taken, under a tag. */
export interface SimSnapshotBuild {
  readonly buildID: string;
  readonly tag: string;
  /** Epoch ms. */
  readonly createdAt: number;
}

/** A snapshot template. */
export interface SimSnapshot {
  /** The raw template id E2B generated. */
  readonly templateID: string;
  /** Full names, `<slug>/<alias>` (no tag); empty for an unnamed snapshot. */
  readonly names: readonly string[];
  /** The sandbox the template was first taken of. */
  readonly sandboxID: string;
  /** Epoch ms; later builds leave it (and E2B's updatedAt) as it is. */
  readonly createdAt: number;
  /** Oldest first. */
  readonly builds: SimSnapshotBuild[];
  /** What a sandbox started from it gets: the source sandbox's size and agent. */
  readonly cpuCount: number;
  readonly memoryMB: number;
  readonly diskSizeMB: number;
  readonly envdVersion: string;
  /** Epoch ms of the last sandbox started from it; undefined until one is. */
  lastSpawnedAt: number | undefined;
  spawnCount: number;
}

/** What the demo and tests seed: a snapshot with its history already behind it. */
export interface SnapshotSeed {
  source: SimSandbox;
  /** A bare alias; the store namespaces it. */
  alias?: string;
  /** Epoch ms of each build, oldest first (at least one); the first is the template's creation. */
  buildTimes: readonly number[];
  lastSpawnedAt?: number;
  spawnCount?: number;
}

/** The team's snapshot templates, by raw id. */
export class SnapshotStore {
  readonly slug: string;
  private readonly clock: Clock;
  private readonly rng: Prng;
  private readonly byId = new Map<string, SimSnapshot>();

  constructor(clock: Clock, rng: Prng, slug = DEFAULT_TEAM_SLUG) {
    if (!SLUG.test(slug)) throw new SimulatorError(`team slug '${slug}' is not [a-z0-9-_]+`);
    this.clock = clock;
    this.rng = rng;
    this.slug = slug;
  }

  /** Every snapshot template, in creation order (do not mutate the map through it). */
  all(): IterableIterator<SimSnapshot> {
    return this.byId.values();
  }

  /** The snapshot template with this raw id (no name resolution), or undefined. */
  get(templateID: string): SimSnapshot | undefined {
    return this.byId.get(templateID);
  }

  /**
   * E2B's alias resolution over snapshot templates: `<ns>/<alias>` by that name only; a bare
   * identifier by the team's `<slug>/<identifier>`, then as a raw id.
   */
  resolve(identifier: string): SimSnapshot | undefined {
    const named = (name: string) => [...this.byId.values()].find((s) => s.names.includes(name));
    if (identifier.includes("/")) return named(identifier);
    return named(`${this.slug}/${identifier}`) ?? this.byId.get(identifier);
  }

  /**
   * Takes a snapshot of `source` now: a new build of `existing` (E2B: "a new build will be
   * assigned to the existing template"), or a new template, named `<slug>/<alias>` when `alias`
   * is given. Returns the template.
   */
  take(
    source: SimSandbox,
    o: { alias?: string; tag?: string; existing?: SimSnapshot },
  ): SimSnapshot {
    const now = this.clock.now();
    const build = { buildID: uuid(this.rng), tag: o.tag ?? DEFAULT_TAG, createdAt: now };
    if (o.existing) {
      o.existing.builds.push(build);
      return o.existing;
    }
    return this.insert(source, o.alias, [build]);
  }

  /** Adds a snapshot template whose builds were taken at `seed.buildTimes` (the demo's history). */
  seed(seed: SnapshotSeed): SimSnapshot {
    if (seed.buildTimes.length === 0) throw new SimulatorError("a snapshot needs a build");
    const builds = seed.buildTimes.map((createdAt) => ({
      buildID: uuid(this.rng),
      tag: DEFAULT_TAG,
      createdAt,
    }));
    const snap = this.insert(seed.source, seed.alias, builds);
    snap.lastSpawnedAt = seed.lastSpawnedAt;
    snap.spawnCount = seed.spawnCount ?? (seed.lastSpawnedAt === undefined ? 0 : 1);
    return snap;
  }

  /** The newest build under `tag`, or under any tag when `tag` is undefined. */
  latestBuild(snap: SimSnapshot, tag?: string): SimSnapshotBuild | undefined {
    for (let i = snap.builds.length - 1; i >= 0; i--) {
      const b = snap.builds[i] as SimSnapshotBuild;
      if (tag === undefined || b.tag === tag) return b;
    }
    return undefined;
  }

  /** Counts a sandbox started from `snap` now (E2B's UpdateTemplateSpawnCount). */
  spawned(snap: SimSnapshot): void {
    snap.spawnCount++;
    snap.lastSpawnedAt = this.clock.now();
  }

  /** Deletes a snapshot template with all its builds, releasing its names; false when unknown. */
  delete(templateID: string): boolean {
    return this.byId.delete(templateID);
  }

  private insert(
    source: SimSandbox,
    alias: string | undefined,
    builds: SimSnapshotBuild[],
  ): SimSnapshot {
    let templateID = this.rng.chars(RAW_ID_LENGTH);
    while (this.byId.has(templateID)) templateID = this.rng.chars(RAW_ID_LENGTH);
    const snap: SimSnapshot = {
      templateID,
      names: alias === undefined ? [] : [`${this.slug}/${aliasOf(alias)}`],
      sandboxID: source.sandboxID,
      createdAt: (builds[0] as SimSnapshotBuild).createdAt,
      builds,
      cpuCount: source.cpuCount,
      memoryMB: source.memoryMB,
      diskSizeMB: source.diskSizeMB,
      envdVersion: source.envdVersion,
      lastSpawnedAt: undefined,
      spawnCount: 0,
    };
    this.byId.set(templateID, snap);
    return snap;
  }
}
