// The survey of what exporters really export: one is started in-process against the built-in
// simulator once with the defaults and once per opt-in setting, on both flavors, and each family's
// HELP, TYPE and label names are read from its scrape and its prom-client registry. The descriptors
// the reference is written from are checked against it (test/docs/metric-descriptors.test.ts).
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { startExporter } from "../../src/app.js";
import { ConfigSchema, SETTINGS } from "../../src/catalog.js";
import { type Flavor, setting, WITH_SHARDS, WITH_TEAMS } from "../../src/exposition/descriptor.js";
import { Family } from "../../src/exposition/text.js";
import {
  DEFAULT_TEAM_ID,
  type SimTeamOptions,
  type Simulator,
  startSimulator,
} from "../../src/simulator/index.js";
import { systemClock } from "../../src/util/clock.js";
import { FLAVOR_NAMES } from "../../tools/docs-metrics.js";
import { parseExposition, type Seen } from "./exposition-families.js";

const EXAMPLE_POLICY = join(import.meta.dirname, "..", "..", "deploy", "policy", "example.yaml");

/** Secret files the runs read: E2B's admin token, the webhook signing secret. */
interface Files {
  admin: string;
  secret: string;
}
type Tree = Record<string, unknown>;

/** One exporter run: the settings it turns on (dotted path -> value) and what the platform does first. */
export interface Scenario {
  /** What the reference names as turning the families on. */
  setting: string;
  settings: Record<string, unknown>;
  /** Runs on these flavors of the simulator (default both). */
  flavors?: readonly Flavor[];
  /** Something that must happen on the platform for a family to have series. */
  prepare?: (sim: Simulator) => void;
  /** The simulator's teams (several teams); default its one team. */
  simTeams?: readonly SimTeamOptions[];
  /**
   * A run that only checks descriptors (a platform condition, not a setting): what it shows is
   * checked against them but attributed nothing in the reference.
   */
  checkOnly?: boolean;
}

/** Two teams read with the admin token: every team-scoped family gains `team`. */
const DOC_TEAMS: readonly SimTeamOptions[] = [
  { id: "11111111-1111-4111-8111-111111111111", apiKey: "docs-key-a", name: "alpha", sandboxes: 5 },
  { id: "22222222-2222-4222-8222-222222222222", apiKey: "docs-key-b", sandboxes: 5 },
];

/** Bool settings that change no family (or need a host the survey has not). */
const NOT_FAMILIES = new Set(["server.enableLifecycle", "shard.fromHostname"]);
/** What a bool setting needs beside it to start on both flavors. */
const COMPANIONS: Record<string, Record<string, unknown>> = {
  "cost.enabled": { "cost.prices.vcpuSecond": 0.000014, "cost.prices.memoryGiBSecond": 0.0000045 },
  "poll.storagePerSnapshotMetrics": { "poll.storage": true },
};

/**
 * The scenarios: every bool setting that is off by default (from the settings table, so a new
 * opt-in is covered without an edit here), then the opt-ins that are not one bool, in the order
 * the reference lists what turns families on (tools/docs-metrics.ts OTHER_SWITCHES).
 */
export function scenarios(files: Files = { admin: "", secret: "" }): Scenario[] {
  const defaults = ConfigSchema.parse({}) as Tree;
  const bools: Scenario[] = SETTINGS.filter(
    (s) => s.kind === "bool" && !NOT_FAMILIES.has(s.path) && get(defaults, s.path) === false,
  ).map((s) => ({
    setting: setting(s.path),
    settings: { [s.path]: true, ...COMPANIONS[s.path] },
    ...(s.path === "poll.templateBuilds" ? { prepare: failBuild } : {}),
    ...(s.path.startsWith("poll.storage") ? { prepare: takeSnapshots } : {}),
  }));
  return [
    ...bools,
    {
      setting: `${setting("metrics.perSandboxMetrics")} and ${setting("poll.usage")}`,
      settings: { "metrics.perSandboxMetrics": true, "poll.usage": true },
    },
    { setting: setting("policy.file"), settings: { "policy.file": EXAMPLE_POLICY } },
    {
      setting: setting("policy.webhook"),
      settings: { "policy.enabled": true, "policy.webhook": { url: "http://127.0.0.1:9/hook" } },
    },
    {
      setting: setting("webhooks.e2bSecretFile"),
      settings: { "webhooks.e2bSecretFile": files.secret },
    },
    { setting: WITH_SHARDS, settings: { "shard.total": 2 } },
    {
      setting: WITH_TEAMS,
      settings: {
        "platform.teamId": undefined,
        "platform.teams": DOC_TEAMS.map((t) => ({ id: t.id, ...(t.name ? { name: t.name } : {}) })),
      },
      flavors: ["e2b"],
      simTeams: DOC_TEAMS,
    },
    {
      // E2B serves no overview but its nodes no max_sandboxes: only here is that family derived.
      setting: "a sandboxapi platform without GET /cluster/overview",
      settings: {},
      flavors: ["sandboxapi"],
      prepare: (sim) => sim.faults.route("GET /cluster/overview", { status: 404 }),
      checkOnly: true,
    },
  ];
}

/** A failed latest build, so the build-failure family has a series. */
function failBuild(sim: Simulator): void {
  const t = sim.state.templates[0]!;
  sim.state.buildTemplate(t.templateID, "error", { message: "build failed", step: "base" });
}

/** A named and an unnamed snapshot, a month old, so the storage families have series. */
function takeSnapshots(sim: Simulator): void {
  const source = [...sim.state.sandboxes.values()][0]!;
  const at = Date.now() - 30 * 86_400_000;
  sim.state.snapshots.seed({ source, alias: "nightly", buildTimes: [at] });
  sim.state.snapshots.seed({ source, buildTimes: [at], lastSpawnedAt: at, spawnCount: 1 });
}

/** One family as one run showed it. */
export interface Sighting extends Seen {
  /** The scenario's setting; undefined for the defaults. */
  setting: string | undefined;
  flavor: Flavor;
}

/** One family as the runs together show it, attributed as the reference attributes it. */
export interface SurveyedFamily {
  name: string;
  type: string;
  /** The HELP of the first run that showed it. */
  help: string;
  /** Label names in order; a label first seen in a later scenario carries that scenario's setting. */
  labels: { name: string; setting?: string }[];
  /** The first scenario that showed it; undefined for the defaults. */
  setting: string | undefined;
  flavors: Set<Flavor>;
  /** False when no run gave it a series and no registry declares its labels. */
  labelsKnown: boolean;
}

/** Folds one run's families into `out`, each attributed to the first run that shows it. */
function fold(out: Map<string, SurveyedFamily>, s: Sighting): void {
  const known = out.get(s.name);
  if (!known) {
    out.set(s.name, {
      name: s.name,
      type: s.type,
      help: s.help,
      labels: s.labels.map((name) => ({ name })),
      setting: s.setting,
      flavors: new Set([s.flavor]),
      labelsKnown: s.labelsKnown,
    });
    return;
  }
  const newFlavor = !known.flavors.has(s.flavor);
  known.flavors.add(s.flavor);
  if (!known.labelsKnown && s.labelsKnown) {
    known.labels = s.labels.map((name) => ({ name }));
    known.labelsKnown = true;
    return;
  }
  const why =
    s.setting !== known.setting ? s.setting : newFlavor ? FLAVOR_NAMES[s.flavor] : undefined;
  for (const l of s.labels)
    if (!known.labels.some((k) => k.name === l))
      known.labels.push({ name: l, ...(why ? { setting: why } : {}) });
}

/**
 * Runs the defaults and every scenario, all on the sandboxapi flavor first, then on E2B's: a family
 * is attributed to the first run that shows it, so what E2B's flavor turns on by default (or
 * serves) is named by its setting when another run showed it on the sandboxapi flavor.
 */
export async function survey(): Promise<{ families: SurveyedFamily[]; sightings: Sighting[] }> {
  const dir = mkdtempSync(join(tmpdir(), "metric-survey-"));
  const files = { admin: join(dir, "admin-token"), secret: join(dir, "webhook-secret") };
  writeFileSync(files.admin, "docs-admin-token");
  writeFileSync(files.secret, "docs-webhook-secret");
  const out = new Map<string, SurveyedFamily>();
  const sightings: Sighting[] = [];
  const defaults: Scenario = { setting: "", settings: {} };
  const all = scenarios(files);
  const ran = new Set<Scenario>();
  try {
    for (const flavor of ["sandboxapi", "e2b"] as const)
      for (const sc of [defaults, ...all]) {
        if (!(sc.flavors ?? [flavor]).includes(flavor)) continue;
        // A scenario the configuration refuses on one flavor runs on the other only.
        const seen = await run(sc, flavor, files);
        if (!seen) continue;
        ran.add(sc);
        for (const s of seen) {
          const sighting = { ...s, setting: sc === defaults ? undefined : sc.setting, flavor };
          sightings.push(sighting);
          if (!sc.checkOnly) fold(out, sighting);
        }
      }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const refused = all.filter((sc) => !ran.has(sc)).map((sc) => sc.setting);
  if (refused.length > 0)
    throw new Error(`survey: the configuration refuses ${refused.join(", ")} on every flavor`);
  return { families: [...out.values()], sightings };
}

/** One exporter against a fresh simulator: one cycle, then one scrape and the registry. */
async function run(sc: Scenario, flavor: Flavor, files: Files): Promise<Seen[] | undefined> {
  const sim = await startSimulator({
    flavor,
    sandboxes: 10,
    templates: 2,
    nodes: 2,
    seed: 1,
    ...(flavor === "e2b" ? { adminToken: "docs-admin-token" } : {}),
    ...(sc.simTeams ? { teams: [...sc.simTeams] } : {}),
  });
  const built = new Map<string, Seen>();
  // Hand-written families print nothing without a sample: note each one the exporter builds.
  const render = Family.prototype.render;
  Family.prototype.render = function (this: Family, format) {
    const name = this.type === "counter" ? `${this.name}_total` : this.name;
    if (!built.has(name))
      built.set(name, { name, type: this.type, help: this.help, labels: [], labelsKnown: false });
    return render.call(this, format);
  };
  try {
    sc.prepare?.(sim);
    const config = ConfigSchema.safeParse(configTree(sc, flavor, files, sim));
    if (!config.success) return undefined;
    const exporter = await startExporter(config.data, {
      logger: pino({ level: "silent" }),
      clock: systemClock,
      manual: true,
    });
    try {
      await exporter.runCycle();
      const text = await (await fetch(`${exporter.server.url}/metrics`)).text();
      const seen = parseExposition(text);
      // prom-client's families: their declared label names, whether they have series or not.
      for (const m of exporter.metrics.registry.getMetricsAsArray()) {
        const d = m as unknown as { name: string; labelNames?: readonly string[] };
        const s = seen.get(d.name);
        if (s) Object.assign(s, { labels: [...(d.labelNames ?? [])], labelsKnown: true });
      }
      for (const [name, b] of built) if (!seen.has(name)) seen.set(name, b);
      return [...seen.values()];
    } finally {
      await exporter.stop();
    }
  } finally {
    Family.prototype.render = render;
    await sim.close();
  }
}

/** The configuration of one run: the simulator's platform, a free port, then the scenario's. */
function configTree(sc: Scenario, flavor: Flavor, files: Files, sim: Simulator): Tree {
  const tree: Tree = {
    platform: {
      apiUrl: sim.apiUrl,
      flavor,
      sandboxDomain: sim.domain,
      retries: 0,
      proxyNodeIp: "127.0.0.1",
      proxyPortHttp: sim.dataPort,
      proxyScheme: "http",
      ...(flavor === "e2b" ? { adminTokenFile: files.admin, teamId: DEFAULT_TEAM_ID } : {}),
    },
    server: { listen: "127.0.0.1:0" },
    log: { level: "silent" },
  };
  for (const [path, value] of Object.entries(sc.settings)) set(tree, path, value);
  return tree;
}

function get(tree: Tree, path: string): unknown {
  return path.split(".").reduce<unknown>((o, k) => (o as Tree | undefined)?.[k], tree);
}

function set(tree: Tree, path: string, value: unknown): void {
  const keys = path.split(".");
  let o = tree;
  for (const k of keys.slice(0, -1)) {
    o[k] ??= {};
    o = o[k] as Tree;
  }
  o[keys.at(-1)!] = value;
}
