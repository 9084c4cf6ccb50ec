// The hostile upstream's data: sandboxes, nodes, templates, overview and health as the wire
// carries them, a seeded generator, and the churn the long-running check applies each cycle.

/** Metadata key the probe tags its sandboxes with (the value is the exporter instance). */
export const PROBE_TAG = "sandbox-exporter/probe";

/** One sandbox as the platform sends it (E2B ListedSandbox spelling). */
export interface FleetSandbox {
  sandboxID: string;
  templateID: string;
  state: string;
  cpuCount: number;
  memoryMB: number;
  /** Epoch ms; sent as ISO 8601. */
  startedAt: number;
  metadata: Record<string, string>;
  /** Epoch ms of the newest log line (GET /v2/sandboxes/{id}/logs). */
  lastLogAt?: number;
}

/** Everything the management API serves. */
export interface Fleet {
  sandboxes: Map<string, FleetSandbox>;
  /**
   * Wire text that replaces a sandbox's JSON record in list pages: values JSON.stringify cannot
   * write (1e309, -0, 20-digit integers) and bytes that are not UTF-8.
   */
  raw: Map<string, Buffer>;
  nodes: Array<Record<string, unknown>>;
  templates: Array<Record<string, unknown>>;
  overview: Record<string, unknown>;
  health: unknown;
}

/** A small seeded PRNG (mulberry32), so every run builds and churns the same fleet. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

export const TEMPLATES = ["base", "python-3", "node-20", "go-1"] as const;
const TEAMS = ["ml", "web", "data", "infra"];
const ENVS = ["prod", "dev", "staging"];
const STATES = ["running", "paused"];
/** A fixed past instant, so start times never depend on when the test runs. */
const EPOCH = Date.UTC(2026, 0, 15, 12, 0, 0);

function pick<T>(r: () => number, xs: readonly T[]): T {
  return xs[Math.floor(r() * xs.length)] as T;
}

/** A plausible sandbox; `n` makes the id unique. */
export function makeSandbox(r: () => number, n: number): FleetSandbox {
  return {
    sandboxID: `sb-${n.toString(36).padStart(5, "0")}`,
    templateID: pick(r, TEMPLATES),
    state: pick(r, STATES),
    cpuCount: 1 + Math.floor(r() * 8),
    memoryMB: 256 * (1 + Math.floor(r() * 16)),
    startedAt: EPOCH + Math.floor(r() * 86_400) * 1000,
    metadata: { team: pick(r, TEAMS), env: pick(r, ENVS) },
  };
}

/** A fleet of `sandboxes` sandboxes over the fixed templates and three nodes. */
export function makeFleet(sandboxes: number, seed = 1): Fleet {
  const r = rng(seed);
  const fleet: Fleet = {
    sandboxes: new Map(),
    raw: new Map(),
    nodes: ["node-a", "node-b", "node-c"].map((id, i) => ({
      nodeID: id,
      status: "ready",
      sandboxCount: 10 + i,
      cpuCount: 64,
      memoryMB: 262_144,
      version: "1.4.2",
    })),
    templates: TEMPLATES.map((id) => ({
      templateID: id,
      buildID: `b-${id}`,
      buildStatus: "ready",
      replicas: 2,
      spawnCount: 100,
    })),
    overview: { nodeCount: 3, sandboxCount: sandboxes, cpuAllocated: 96, memoryTotalMB: 786_432 },
    health: { status: "healthy" },
  };
  for (let i = 0; i < sandboxes; i++) {
    const s = makeSandbox(r, i);
    fleet.sandboxes.set(s.sandboxID, s);
  }
  return fleet;
}

/** The JSON record of a sandbox as list pages and GET /sandboxes/{id} send it. */
export function sandboxJson(s: FleetSandbox): Record<string, unknown> {
  return {
    sandboxID: s.sandboxID,
    templateID: s.templateID,
    alias: s.templateID,
    clientID: "6532622b",
    startedAt: new Date(s.startedAt).toISOString(),
    endAt: new Date(s.startedAt + 3_600_000).toISOString(),
    cpuCount: s.cpuCount,
    memoryMB: s.memoryMB,
    metadata: s.metadata,
    state: s.state,
  };
}

/** What one churn step did, by kind of change. */
export interface ChurnReport {
  created: number;
  deleted: number;
  stateChanges: number;
  metadataEdits: number;
  templateChanges: number;
  resourceChanges: number;
}

/**
 * One cycle's worth of change: deletes and creates (the size stays near `target`), pauses and
 * resumes, metadata edits, template moves, cpu and memory changes. `next` numbers new ids.
 */
export function churn(fleet: Fleet, r: () => number, next: { n: number }, target: number) {
  const report: ChurnReport = {
    created: 0,
    deleted: 0,
    stateChanges: 0,
    metadataEdits: 0,
    templateChanges: 0,
    resourceChanges: 0,
  };
  const ids = () => [...fleet.sandboxes.keys()];
  const some = (k: number): FleetSandbox[] => {
    const all = ids();
    const out = new Set<string>();
    for (let i = 0; i < k * 4 && out.size < Math.min(k, all.length); i++) out.add(pick(r, all));
    return [...out].map((id) => fleet.sandboxes.get(id) as FleetSandbox);
  };
  const deletes = 3 + Math.floor(r() * 10);
  for (const s of some(deletes)) {
    fleet.sandboxes.delete(s.sandboxID);
    report.deleted++;
  }
  const creates = Math.max(0, target - fleet.sandboxes.size) + Math.floor(r() * 4);
  for (let i = 0; i < creates; i++) {
    const s = makeSandbox(r, next.n++);
    fleet.sandboxes.set(s.sandboxID, s);
    report.created++;
  }
  for (const s of some(8)) {
    s.state = s.state === "running" ? "paused" : "running";
    report.stateChanges++;
  }
  for (const s of some(8)) {
    s.metadata = { ...s.metadata, team: pick(r, TEAMS), env: pick(r, ENVS) };
    if (r() < 0.3) delete s.metadata.env;
    report.metadataEdits++;
  }
  for (const s of some(5)) {
    s.templateID = pick(r, TEMPLATES);
    report.templateChanges++;
  }
  for (const s of some(8)) {
    s.cpuCount = 1 + Math.floor(r() * 8);
    s.memoryMB = 256 * (1 + Math.floor(r() * 16));
    report.resourceChanges++;
  }
  return report;
}
