// The alert rules and dashboards name only metrics and labels the exporter really exports:
// every selector, matcher label and by/without label is checked against a scrape of an exporter
// running against the simulator with every optional family switched on, and of a second one
// against the simulator's E2B mode for what only E2B serves (lifecycle events, team capacity).
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import type { Exporter } from "../../src/app.js";
import { ConfigSchema } from "../../src/catalog.js";
import { seedDemoSnapshots } from "../../src/simulator/demo-snapshots.js";
import { type Simulator, startSimulator } from "../../src/simulator/index.js";
import { startQuiet } from "../helpers/exporter.js";
import { legendProblems } from "../helpers/legend-labels.js";
import {
  checkUsage,
  concrete,
  type Exposition,
  type ExprSource,
  parseExposition,
  type UsageContext,
} from "../helpers/metric-usage.js";
import { analyze, tokenize } from "../helpers/promql.js";

const ROOT = join(import.meta.dirname, "..", "..");
const RULES_DIR = join(ROOT, "deploy", "prometheus", "rules");
const DASHBOARDS_DIR = join(ROOT, "grafana", "dashboards");
/** The demo's rule file: the policy families must have series with every label. */
const POLICY_FILE = join(ROOT, "deploy", "policy", "example.yaml");

interface Rule {
  record?: string;
  alert?: string;
  expr: string;
}
interface Panel {
  title?: string;
  targets?: { expr?: string; refId?: string }[];
  panels?: Panel[];
}
interface Dashboard {
  panels: Panel[];
  templating?: { list: { name: string; query?: unknown }[] };
}

const ruleList: Rule[] = readdirSync(RULES_DIR)
  .filter((f) => f.endsWith(".yml"))
  .flatMap(
    (f) =>
      (parse(readFileSync(join(RULES_DIR, f), "utf8")) as { groups: { rules: Rule[] }[] }).groups,
  )
  .flatMap((g) => g.rules);

function dashboardSources(): ExprSource[] {
  const out: ExprSource[] = [];
  for (const f of readdirSync(DASHBOARDS_DIR).filter((x) => x.endsWith(".json"))) {
    const d = JSON.parse(readFileSync(join(DASHBOARDS_DIR, f), "utf8")) as Dashboard;
    const walk = (panels: Panel[]): void => {
      for (const p of panels) {
        for (const t of p.targets ?? [])
          if (t.expr) out.push({ where: `${f} "${p.title}" ${t.refId}`, expr: concrete(t.expr) });
        walk(p.panels ?? []);
      }
    };
    walk(d.panels);
    for (const v of d.templating?.list ?? []) {
      const q = typeof v.query === "string" ? v.query : (v.query as { query?: string })?.query;
      const m = /^label_values\((.+),\s*(\w+)\)$/.exec(q ?? "");
      if (m) out.push({ where: `${f} variable $${v.name}`, expr: concrete(m[1]!), label: m[2]! });
    }
  }
  return out;
}

const sources: ExprSource[] = [
  ...ruleList.map((r) => ({ where: `rule ${r.alert ?? r.record}`, expr: r.expr })),
  ...dashboardSources(),
];
const context: UsageContext = {
  recorded: new Map(ruleList.flatMap((r) => (r.record ? [[r.record, r.expr] as const] : []))),
  builtin: new Map([["up", ["job", "instance"]]]),
  targetLabels: ["job", "instance"],
};
describe("the PromQL scan", () => {
  it("finds selectors with their matcher labels and the labels of by clauses", () => {
    const use = analyze(
      'sum by (job, endpoint) (rate(sandbox_exporter_api_errors_total{job=~"x", reason!="timeout"}[5m]))',
    );
    const sel = { metric: "sandbox_exporter_api_errors_total", labels: ["job", "reason"] };
    expect(use.selectors).toEqual([sel]);
    expect(use.groupings).toEqual([{ kind: "by", labels: ["job", "endpoint"], inner: [sel] }]);
  });

  it("does not take functions, keywords, durations or offsets for metrics", () => {
    const use = analyze(
      'avg_over_time(job:a:rate5m{rule=~".*"}[1d] offset 1h) > 3 * b and bool c > 10 or time() - d unless inf',
    );
    expect(use.selectors.map((s) => s.metric)).toEqual(["job:a:rate5m", "b", "c", "d"]);
    expect(use.groupings).toEqual([]);
  });

  it("reads on/group_left lists as labels and accepts by after the aggregated expression", () => {
    const join = analyze(
      'topk(25, (time() - s_start{job=~".*"}) * on (sandbox_id) group_left (template, state) s_info)',
    );
    expect(join.selectors.map((s) => s.metric)).toEqual(["s_start", "s_info"]);
    const postfix = analyze("sum(rate(h_bucket[5m])) by (le)");
    expect(postfix.groupings).toEqual([
      { kind: "by", labels: ["le"], inner: [{ metric: "h_bucket", labels: [] }] },
    ]);
  });

  it("keeps strings whole and skips comments", () => {
    expect(tokenize('m{a="}\\"{", b=~\'x\'} # a comment {\n > 1').map((t) => t.text)).toEqual([
      "m",
      "{",
      "a",
      "=",
      '"}\\"{"',
      ",",
      "b",
      "=~",
      "'x'",
      "}",
      ">",
      "1",
    ]);
    expect(analyze('max without (status) (m{s!~"ready|draining"}) == 1').groupings).toEqual([
      { kind: "without", labels: ["status"], inner: [{ metric: "m", labels: ["s"] }] },
    ]);
  });

  it("rejects what it does not understand instead of guessing", () => {
    expect(() => tokenize("m $ 1")).toThrow(/unexpected/);
    expect(() => analyze('{__name__="m"}')).toThrow(/not supported/);
    expect(() => analyze("sum(m")).toThrow(/unbalanced/);
  });
});

let sim: Simulator | undefined;
let exporter: Exporter | undefined;
let e2bSim: Simulator | undefined;
let e2bExporter: Exporter | undefined;
let teamsSim: Simulator | undefined;
let teamsExporter: Exporter | undefined;
let scrape: Exposition = { families: new Set(), labels: new Map() };
const secretDir = mkdtempSync(join(tmpdir(), "consistency-"));

/** Both scrapes as one: a family or label either exporter exports. */
function merge(a: Exposition, b: Exposition): Exposition {
  const labels = new Map(a.labels);
  for (const [family, names] of b.labels)
    labels.set(family, new Set([...(labels.get(family) ?? []), ...names]));
  return { families: new Set([...a.families, ...b.families]), labels };
}

/** An E2B-mode exporter with events, team capacity and the webhook on, after one orphaned kill. */
async function e2bScrape(): Promise<Exposition> {
  e2bSim = await startSimulator({
    flavor: "e2b",
    sandboxes: 20,
    templates: 2,
    nodes: 1,
    teamConcurrencyLimit: 50,
  });
  const secretFile = join(secretDir, "e2b-webhook-secret");
  writeFileSync(secretFile, "consistency-secret");
  const config = ConfigSchema.parse({
    platform: {
      apiUrl: e2bSim.apiUrl,
      flavor: "e2b",
      retries: 0,
      teamConcurrencyLimit: 50,
      sandboxDomain: e2bSim.domain,
      proxyNodeIp: "127.0.0.1",
      proxyPortHttp: e2bSim.dataPort,
      proxyScheme: "http",
    },
    server: { listen: "127.0.0.1:0" },
    poll: { events: true, teamMetrics: true, storage: true, eventsLookbackMs: 3_600_000 },
    webhooks: { e2bSecretFile: secretFile },
    // Cost is on for e2b: an owner key and a budget, so their series carry labels.
    cost: { attributeBy: ["owner"], budget: { daily: 100 } },
    // The http and autoresume steps, for the HTTP and wake families the rules and dashboards read.
    probe: {
      enabled: true,
      template: e2bSim.state.templates[0]!.templateID,
      phases: ["http", "autoresume"],
    },
    log: { level: "silent" },
  });
  // Snapshots of several ages and names, so every storage family has series.
  seedDemoSnapshots(e2bSim.state);
  const victim = [...e2bSim.state.sandboxes.keys()][0]!;
  e2bSim.state.removeSandbox(victim, "orphaned");
  e2bExporter = await startQuiet(config);
  // The first cycle reads the events (and learns the team id from them), the second the team.
  await e2bExporter.runCycle();
  await e2bExporter.runCycle();
  expect((await e2bExporter.prober!.runOnce())?.success).toBe(true);
  return parseExposition(await (await fetch(`${e2bExporter.server.url}/metrics`)).text());
}

/** Two teams in one exporter (platform.teams, the admin token): every team-scoped series has team. */
async function teamsScrape(): Promise<Exposition> {
  const teams = [
    { id: "11111111-1111-4111-8111-111111111111", apiKey: "consistency-a", sandboxes: 6 },
    { id: "22222222-2222-4222-8222-222222222222", apiKey: "consistency-b", sandboxes: 4 },
  ];
  teamsSim = await startSimulator({ teams, adminToken: "consistency-admin" });
  const adminFile = join(secretDir, "admin-token");
  writeFileSync(adminFile, "consistency-admin");
  const config = ConfigSchema.parse({
    platform: {
      apiUrl: teamsSim.apiUrl,
      flavor: "e2b",
      retries: 0,
      adminTokenFile: adminFile,
      // Named, so sandbox_team_info carries team_name for the dashboards' joins.
      teams: teams.map((t, i) => ({ id: t.id, name: `team-${i + 1}` })),
    },
    server: { listen: "127.0.0.1:0" },
    cost: { budget: { daily: 100 } },
    log: { level: "silent" },
  });
  teamsExporter = await startQuiet(config);
  await teamsExporter.runCycle();
  return parseExposition(await (await fetch(`${teamsExporter.server.url}/metrics`)).text());
}

beforeAll(async () => {
  sim = await startSimulator({ sandboxes: 40, templates: 3, nodes: 3 });
  const config = ConfigSchema.parse({
    platform: {
      apiUrl: sim.apiUrl,
      sandboxDomain: sim.domain,
      retries: 0,
      proxyNodeIp: "127.0.0.1",
      proxyPortHttp: sim.dataPort,
      proxyScheme: "http",
    },
    server: { listen: "127.0.0.1:0" },
    metrics: { perSandboxMetrics: true },
    // Usage read after each complete walk, so the usage families the dashboards show have series;
    // template build health, for the build alert.
    poll: { usage: true, templateBuilds: true },
    // Two shards, as deployed: the sandbox aggregates carry the shard label the dashboards filter on.
    shard: { index: 0, total: 2 },
    probe: { enabled: true, template: sim.state.templates[0]!.templateID },
    policy: { enabled: true, dryRun: true, file: POLICY_FILE },
    // Prices turn cost on for the self-hosted flavor: the policy's savings series by rule.
    cost: { prices: { vcpuSecond: 0.00001, memoryGiBSecond: 0.000001 } },
    log: { level: "silent" },
  });
  exporter = await startQuiet(config);
  await exporter.runCycle();
  // One failed probe, so the failure counter has series, then a good one.
  sim.faults.stream = { wrongStdout: true };
  expect((await exporter.prober!.runOnce())?.success).toBe(false);
  sim.faults.clear();
  expect((await exporter.prober!.runOnce())?.success).toBe(true);
  await exporter.runCycle();
  scrape = merge(
    merge(
      parseExposition(await (await fetch(`${exporter.server.url}/metrics`)).text()),
      await e2bScrape(),
    ),
    await teamsScrape(),
  );
});

afterAll(async () => {
  await exporter?.stop();
  await sim?.close();
  await e2bExporter?.stop();
  await e2bSim?.close();
  await teamsExporter?.stop();
  await teamsSim?.close();
  rmSync(secretDir, { recursive: true, force: true });
});

describe("rules and dashboards against a scrape", () => {
  it("the checker reports a metric or label the exporter does not export", () => {
    const problems = checkUsage(
      [
        { where: "fake rule", expr: 'sandbox_does_not_exist{job="x"} > 0' },
        { where: "fake label", expr: 'sandbox_node_status{nodde="n"} == 1' },
        { where: "fake by", expr: "sum by (nodde) (sandbox_node_status)" },
      ],
      scrape,
      context,
    );
    expect(problems).toEqual([
      expect.objectContaining({ where: "fake rule", metric: "sandbox_does_not_exist" }),
      expect.objectContaining({ where: "fake label", label: "nodde" }),
      expect.objectContaining({ where: "fake by", label: "nodde" }),
    ]);
  });

  it("use only exported metric names and labels", () => {
    expect(sources.length).toBeGreaterThan(80);
    expect(scrape.labels.size).toBeGreaterThan(50);
    expect(scrape.families.has("sandbox_policy_decisions_total")).toBe(true);
    expect(checkUsage(sources, scrape, context)).toEqual([]);
  });

  it("name in legends only labels the query's series carry", () => {
    expect(legendProblems(DASHBOARDS_DIR, scrape, context)).toEqual([]);
  });
});
