import { spawn, spawnSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { parse, parseAllDocuments, stringify } from "yaml";
import { z } from "zod";
import { loadConfig, SETTINGS } from "../../src/catalog.js";
import { output } from "../helpers/child.js";
import { concrete } from "../helpers/metric-usage.js";

const ROOT = join(import.meta.dirname, "..", "..");
const PROM = join(ROOT, "deploy", "prometheus");
const RULES = join(PROM, "rules", "sandbox-exporter.rules.yml");
const TESTS = join(PROM, "tests");
const K8S = join(ROOT, "deploy", "kubernetes");
const GRAFANA = join(ROOT, "grafana");
const JOB = "sandbox-exporter";

const Rule = z.looseObject({
  record: z.string().optional(),
  alert: z.string().optional(),
  expr: z.string(),
  for: z.string().optional(),
  labels: z.record(z.string(), z.string()).optional(),
  annotations: z.record(z.string(), z.string()).optional(),
});
const RuleGroups = z.looseObject({
  groups: z.array(z.looseObject({ name: z.string(), rules: z.array(Rule) })),
});
const UnitTests = z.looseObject({
  tests: z.array(
    z.looseObject({
      name: z.string().optional(),
      input_series: z.array(z.looseObject({ series: z.string(), values: z.string() })).optional(),
      alert_rule_test: z
        .array(
          z.looseObject({
            eval_time: z.string(),
            alertname: z.string(),
            exp_alerts: z.array(
              z.looseObject({ exp_labels: z.record(z.string(), z.string()).optional() }),
            ),
          }),
        )
        .optional(),
    }),
  ),
});
type UnitTest = z.infer<typeof UnitTests>["tests"][number];

const read = (path: string): string => readFileSync(path, "utf8");
const rules = RuleGroups.parse(parse(read(RULES)));
const alerts = rules.groups.flatMap((g) => g.rules.filter((r) => r.alert !== undefined));
const testFiles = readdirSync(TESTS)
  .filter((f) => f.endsWith(".yml"))
  .map((f) => join(TESTS, f));
const fixtures = testFiles.map((file) => ({
  file,
  tests: UnitTests.parse(parse(read(file))).tests,
}));
/** Alerts whose `for:` is this long or longer need the six healthy hours (STYLE.md rule 15). */
const HEALTHY_FOR_S = 600;
const HEALTHY_UNTIL_S = 6 * 3600;
const HEALTHY_EARLY_S = 3600;

/** Seconds of a Prometheus duration such as 1h30m or 1d2h. */
function seconds(duration: string): number {
  const unit: Record<string, number> = { ms: 0.001, s: 1, m: 60, h: 3600, d: 86_400, w: 604_800 };
  const parts = [...duration.matchAll(/(\d+)(ms|s|m|h|d|w)/g)];
  expect(parts.map((p) => p[0]).join(""), duration).toBe(duration);
  return parts.reduce((sum, [, n, u]) => sum + Number(n) * (unit[u!] ?? Number.NaN), 0);
}

/** A fleet that starts from zero and is rolled out: one instance's series end, another's begin. */
const rollsOut = (t: UnitTest): boolean =>
  (t.input_series ?? []).some((s) => /\bstale\b/.test(s.values)) &&
  (t.input_series ?? []).some((s) => s.values.trimStart().startsWith("_"));

/** Whether `t` keeps `alert` silent at every evaluation it names, early and after six hours. */
function keepsSilent(t: UnitTest, alert: string): boolean {
  const mine = (t.alert_rule_test ?? []).filter((c) => c.alertname === alert);
  const times = mine.map((c) => seconds(c.eval_time));
  return (
    mine.length > 0 &&
    mine.every((c) => c.exp_alerts.length === 0) &&
    Math.min(...times) <= HEALTHY_EARLY_S &&
    Math.max(...times) >= HEALTHY_UNTIL_S
  );
}
const scratch = mkdtempSync(join(tmpdir(), "deploy-test-"));

afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** Runs a command to completion; resolves with its exit code and combined output. */
function run(cmd: string, args: string[]): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ["ignore", "pipe", "pipe"] });
    const out = output(child);
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, out: out() }));
  });
}

function promtool(...args: string[]): { status: number | null; out: string } {
  const r = spawnSync("promtool", args, { encoding: "utf8" });
  expect(r.error).toBeUndefined();
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

describe("Prometheus rules", () => {
  it("pass promtool check rules", () => {
    const r = promtool("check", "rules", RULES);
    expect(r.out).toContain("SUCCESS");
    expect(r.status).toBe(0);
  });

  it("load from the example scrape config, whose job is the one the alerts expect", () => {
    const r = promtool("check", "config", join(PROM, "prometheus.yml"));
    expect(r.status, r.out).toBe(0);
    const config = z
      .looseObject({ scrape_configs: z.array(z.looseObject({ job_name: z.string() })) })
      .parse(parse(read(join(PROM, "prometheus.yml"))));
    expect(config.scrape_configs.map((s) => s.job_name)).toContain(JOB);
    const absent = alerts.find((a) => a.expr.includes("absent("));
    expect(absent?.expr).toContain(`job="${JOB}"`);
  });

  // promtool evaluates every rule in every fixture: about 40 s on an idle CI machine, half of it
  // the six healthy and six unhealthy hours of healthy-6h.test.yml at a 1-minute evaluation.
  it("pass every promtool unit test fixture", () => {
    const r = promtool("test", "rules", ...testFiles);
    expect(r.status, r.out).toBe(0);
    expect(r.out).not.toContain("FAILED");
  }, 300_000);

  it("give every alert a duration, a severity and summary, description and runbook text", () => {
    expect(alerts.length).toBeGreaterThanOrEqual(12);
    for (const a of alerts) {
      expect(a.for, a.alert).toMatch(/^\d+[smh]$/);
      expect(["warning", "critical"], a.alert).toContain(a.labels?.severity);
      for (const key of ["summary", "description", "runbook"])
        expect(a.annotations?.[key]?.length ?? 0, `${a.alert} ${key}`).toBeGreaterThan(20);
    }
  });

  it("name recorded series level:metric:operation, so they never clash with exported names", () => {
    for (const g of rules.groups)
      for (const r of g.rules)
        if (r.record !== undefined)
          expect(r.record).toMatch(/^[a-z_]+:sandbox_[a-z0-9_]+:[a-z0-9_]+$/);
  });

  it("unit-test every alert rule both firing and silent", () => {
    const cases = fixtures.flatMap((f) => f.tests.flatMap((t) => t.alert_rule_test ?? []));
    for (const a of alerts) {
      const mine = cases.filter((c) => c.alertname === a.alert);
      const fires = mine.some((c) =>
        c.exp_alerts.some((e) => e.exp_labels?.severity === a.labels?.severity),
      );
      expect(fires, `${a.alert} (${a.labels?.severity}) has no firing case`).toBe(true);
      expect(
        mine.some((c) => c.exp_alerts.length === 0),
        `${a.alert} has no silent case`,
      ).toBe(true);
    }
  });

  it("keep every alert with a `for:` of 10 minutes or more silent for six healthy hours from a start through a rollout", () => {
    const long = alerts.filter((a) => seconds(a.for ?? "0s") >= HEALTHY_FOR_S);
    expect(long.length).toBeGreaterThanOrEqual(15);
    const healthy = fixtures.flatMap((f) => f.tests.filter(rollsOut));
    const firing = fixtures.flatMap((f) =>
      f.tests.flatMap((t) => (t.alert_rule_test ?? []).filter((c) => c.exp_alerts.length > 0)),
    );
    const missing = long
      .map((a) => a.alert!)
      .filter((name) => !healthy.some((t) => keepsSilent(t, name)));
    expect(missing, "no healthy 6 h test with a rollout keeps these silent").toEqual([]);
    const neverFire = long
      .map((a) => a.alert!)
      .filter((name) => !firing.some((c) => c.alertname === name));
    expect(neverFire, "no test makes these fire").toEqual([]);
  });

  it("fail their unit tests when any one alert can no longer fire", async () => {
    /** Copies the rules with alert i never firing, and the fixtures naming it; runs promtool. */
    const survives = async (i: number): Promise<boolean> => {
      const a = alerts[i]!;
      const dir = join(scratch, `mutant-${i}`);
      mkdirSync(join(dir, "rules"), { recursive: true });
      mkdirSync(join(dir, "tests"), { recursive: true });
      const mutant = structuredClone(rules);
      const target = mutant.groups.flatMap((g) => g.rules.filter((r) => r.alert))[i]!;
      target.expr = "vector(1) == 0";
      writeFileSync(join(dir, "rules", "sandbox-exporter.rules.yml"), stringify(mutant));
      // Only the files with a firing case of it: a silent case passes whatever the alert does.
      const copies = fixtures
        .filter((f) =>
          f.tests.some((t) =>
            (t.alert_rule_test ?? []).some(
              (c) => c.alertname === a.alert && c.exp_alerts.length > 0,
            ),
          ),
        )
        .map(({ file: f }) => {
          const to = join(dir, "tests", basename(f));
          writeFileSync(to, read(f));
          return to;
        });
      return (await run("promtool", ["test", "rules", ...copies])).code === 0;
    };
    const survivors: string[] = [];
    // Two at a time: promtool is CPU-bound and the policy fixture evaluates a day of rules.
    for (let i = 0; i < alerts.length; i += 2) {
      const batch = [i, i + 1].filter((j) => j < alerts.length);
      const results = await Promise.all(batch.map(survives));
      batch.forEach((j, k) => {
        if (results[k]) survivors.push(`${alerts[j]?.alert} (${alerts[j]?.labels?.severity})`);
      });
    }
    expect(survivors).toEqual([]);
    // One promtool run per alert (about 60): minutes on 2 busy cores.
  }, 480_000);

  it("are carried unchanged by the PrometheusRule for the Prometheus Operator", () => {
    const doc = z
      .looseObject({ kind: z.literal("PrometheusRule"), spec: RuleGroups })
      .parse(parse(read(join(K8S, "prometheusrule.yaml"))));
    expect(doc.spec.groups).toEqual(rules.groups);
  });
});

// biome-ignore lint/suspicious/noTemplateCurlyInString: Grafana's variable syntax, not a JS template.
const DS_UID = "${datasource}";
const Target = z.looseObject({
  expr: z.string().optional(),
  legendFormat: z.string().optional(),
  refId: z.string(),
  datasource: z.looseObject({ type: z.string(), uid: z.string() }).optional(),
});
const Panel = z.looseObject({
  id: z.number(),
  type: z.string(),
  title: z.string(),
  datasource: z.looseObject({ type: z.string(), uid: z.string() }).optional(),
  targets: z.array(Target).optional(),
});
const Variable = z.looseObject({
  name: z.string(),
  type: z.string(),
  query: z.unknown(),
  datasource: z.looseObject({ uid: z.string() }).optional(),
});
const Dashboard = z.looseObject({
  uid: z.string().min(1).max(40),
  title: z.string(),
  schemaVersion: z.number(),
  templating: z.looseObject({ list: z.array(Variable) }),
  panels: z.array(Panel),
});
const GRAFANA_VARS = new Set(["__rate_interval", "__interval", "__range", "__all"]);
const DASHBOARDS = ["platform-overview", "sandboxes", "probes", "policy", "exporter", "spend"];

const dashboards = DASHBOARDS.map((name) => ({
  name,
  d: Dashboard.parse(JSON.parse(read(join(GRAFANA, "dashboards", `${name}.json`)))),
}));

describe("Grafana dashboards", () => {
  it("ship the six dashboards with distinct stable uids", () => {
    expect(readdirSync(join(GRAFANA, "dashboards")).sort()).toEqual(
      DASHBOARDS.map((n) => `${n}.json`).sort(),
    );
    const uids = dashboards.map(({ d }) => d.uid);
    expect(new Set(uids).size).toBe(uids.length);
    for (const uid of uids) expect(uid).toMatch(/^sandbox-[a-z-]+$/);
  });

  it.each(DASHBOARDS)("%s is templated on datasource and job", (name) => {
    const { d } = dashboards.find((x) => x.name === name)!;
    expect(d.schemaVersion).toBeGreaterThanOrEqual(39);
    const byName = new Map(d.templating.list.map((v) => [v.name, v]));
    expect(byName.get("datasource")).toMatchObject({ type: "datasource", query: "prometheus" });
    expect(byName.get("job"), "job").toMatchObject({ type: "query", datasource: { uid: DS_UID } });
  });

  // Only the sandbox families carry a shard label: a shard variable elsewhere would filter nothing.
  it.each(DASHBOARDS)("%s uses every variable it defines", (name) => {
    const { d } = dashboards.find((x) => x.name === name)!;
    const used = new Set<string>();
    const texts = [
      ...d.panels.flatMap((p) => [p.title ?? "", ...(p.targets ?? []).map((t) => t.expr ?? "")]),
      ...d.templating.list.map((v) => JSON.stringify(v.query ?? "")),
      JSON.stringify(d.panels.map((p) => p.datasource)),
    ];
    for (const t of texts) for (const [, v] of t.matchAll(/\$\{?(\w+)\}?/g)) used.add(v!);
    const unused = d.templating.list.map((v) => v.name).filter((v) => !used.has(v));
    expect(unused).toEqual([]);
    const shard = d.templating.list.find((v) => v.name === "shard");
    if (shard) {
      expect(shard, "shard").toMatchObject({ type: "query", datasource: { uid: DS_UID } });
      expect(JSON.stringify(shard.query)).toContain("shard)");
    }
  });

  it.each(DASHBOARDS)("%s names no optional label in a legend beside fixed text", (name) => {
    // An unsharded exporter has no shard label: "shard {{shard}}" would read "shard ".
    const { d } = dashboards.find((x) => x.name === name)!;
    for (const p of d.panels)
      for (const t of p.targets ?? []) {
        const legend = t.legendFormat ?? "";
        if (legend.includes("{{shard}}")) expect(legend, p.title).toBe("{{shard}}");
        if (legend.includes("{{shard}}")) expect(t.expr, p.title).toContain('"unsharded"');
      }
  });

  it.each(DASHBOARDS)("%s has non-empty queries on the templated datasource", (name) => {
    const { d } = dashboards.find((x) => x.name === name)!;
    const defined = new Set(d.templating.list.map((v) => v.name));
    const panels = d.panels.filter((p) => p.type !== "row");
    expect(panels.length).toBeGreaterThan(5);
    expect(new Set(d.panels.map((p) => p.id)).size).toBe(d.panels.length);
    for (const p of panels) {
      expect(p.datasource?.uid, p.title).toBe(DS_UID);
      expect(p.targets?.length ?? 0, p.title).toBeGreaterThan(0);
      for (const t of p.targets ?? []) {
        expect(t.expr?.trim() ?? "", `${p.title} ${t.refId}`).not.toBe("");
        expect(t.datasource?.uid ?? DS_UID).toBe(DS_UID);
        expect(t.expr, p.title).toMatch(/job=~"\$job"/);
        for (const [, v] of (t.expr ?? "").matchAll(/\$\{?(\w+)\}?/g))
          expect(GRAFANA_VARS.has(v!) || defined.has(v!), `${p.title}: $${v}`).toBe(true);
      }
    }
  });

  it("has only queries that promtool accepts as PromQL", () => {
    const exprs = dashboards.flatMap(({ d }) =>
      d.panels.flatMap((p) => (p.targets ?? []).map((t) => concrete(t.expr ?? ""))),
    );
    const file = join(scratch, "dashboard-queries.yml");
    const records = exprs.map((expr, i) => ({ record: `dashboard:query_${i}:check`, expr }));
    writeFileSync(file, stringify({ groups: [{ name: "dashboards", rules: records }] }));
    const r = promtool("check", "rules", file);
    expect(r.status, r.out).toBe(0);
  });

  it("provision the dashboards from files and a Prometheus data source", () => {
    const dash = z
      .looseObject({
        apiVersion: z.literal(1),
        providers: z.array(
          z.looseObject({ type: z.literal("file"), options: z.looseObject({ path: z.string() }) }),
        ),
      })
      .parse(parse(read(join(GRAFANA, "provisioning", "dashboards.yml"))));
    expect(dash.providers).toHaveLength(1);
    const ds = z
      .looseObject({
        apiVersion: z.literal(1),
        datasources: z.array(z.looseObject({ type: z.string(), url: z.string() })),
      })
      .parse(parse(read(join(GRAFANA, "provisioning", "datasources.yml"))));
    expect(ds.datasources.map((d) => d.type)).toContain("prometheus");
  });
});

const Manifest = z.looseObject({
  apiVersion: z.string(),
  kind: z.string(),
  metadata: z.looseObject({
    name: z.string(),
    labels: z.record(z.string(), z.string()).optional(),
  }),
  spec: z.unknown().optional(),
});
type Manifest = z.infer<typeof Manifest>;

const manifestFiles = readdirSync(K8S).filter(
  (f) => f.endsWith(".yaml") && f !== "kustomization.yaml",
);
const manifests: Manifest[] = manifestFiles.flatMap((f) =>
  parseAllDocuments(read(join(K8S, f))).map((doc) => {
    expect(doc.errors, f).toEqual([]);
    return Manifest.parse(doc.toJS());
  }),
);
const ofKind = (kind: string): Manifest[] => manifests.filter((m) => m.kind === kind);

const Container = z.looseObject({
  args: z.array(z.string()),
  env: z.array(z.looseObject({ name: z.string() })),
  ports: z.array(z.looseObject({ name: z.string(), containerPort: z.number() })),
  livenessProbe: z.looseObject({ httpGet: z.looseObject({ path: z.string() }) }),
  readinessProbe: z.looseObject({ httpGet: z.looseObject({ path: z.string() }) }),
  resources: z.looseObject({
    requests: z.looseObject({ cpu: z.string(), memory: z.string() }),
    limits: z.looseObject({ cpu: z.string(), memory: z.string() }),
  }),
  securityContext: z.looseObject({
    readOnlyRootFilesystem: z.literal(true),
    allowPrivilegeEscalation: z.literal(false),
    runAsNonRoot: z.literal(true),
  }),
  volumeMounts: z.array(z.looseObject({ name: z.string(), mountPath: z.string() })),
});
const StatefulSetSpec = z.looseObject({
  replicas: z.number(),
  serviceName: z.string(),
  template: z.looseObject({
    metadata: z.looseObject({ labels: z.record(z.string(), z.string()) }),
    spec: z.looseObject({
      securityContext: z.looseObject({ runAsNonRoot: z.literal(true) }),
      containers: z.array(Container).length(1),
      volumes: z.array(z.looseObject({ name: z.string() })),
    }),
  }),
});
const sts = StatefulSetSpec.parse(ofKind("StatefulSet")[0]?.spec);
const stsName = z.object({ name: z.string() }).parse(ofKind("StatefulSet")[0]?.metadata).name;
const container = sts.template.spec.containers[0]!;
const podLabels = sts.template.metadata.labels;

function argValue(flag: string): string | undefined {
  const i = container.args.indexOf(flag);
  return i >= 0 ? container.args[i + 1] : undefined;
}
const matches = (selector: Record<string, string>, labels: Record<string, string> = {}): boolean =>
  Object.entries(selector).every(([k, v]) => labels[k] === v);

describe("Kubernetes manifests", () => {
  it("parse, every document a named object, all listed in the kustomization", () => {
    expect(manifests.length).toBeGreaterThanOrEqual(10);
    const k = z
      .looseObject({ resources: z.array(z.string()) })
      .parse(parse(read(join(K8S, "kustomization.yaml"))));
    expect([...k.resources].sort()).toEqual([...manifestFiles].sort());
    for (const kind of [
      "StatefulSet",
      "Service",
      "ServiceMonitor",
      "PrometheusRule",
      "NetworkPolicy",
      "PodDisruptionBudget",
    ])
      expect(ofKind(kind).length, kind).toBeGreaterThan(0);
  });

  it("mount the example policy rules, unchanged, where SANDBOX_EXPORTER_POLICY_FILE points", () => {
    const cm = z
      .looseObject({ data: z.object({ "rules.yaml": z.string() }) })
      .parse(ofKind("ConfigMap").find((d) => d.metadata.name === "sandbox-exporter-policy"));
    const example = read(join(ROOT, "deploy", "policy", "example.yaml"));
    expect(parse(cm.data["rules.yaml"])).toEqual(parse(example));
    expect(container.env.find((e) => e.name === "SANDBOX_EXPORTER_POLICY_FILE")).toMatchObject({
      value: "/etc/sandbox-exporter/policy/rules.yaml",
    });
  });

  it("build with kubectl kustomize when kubectl is installed", () => {
    const r = spawnSync("kubectl", ["kustomize", K8S], { encoding: "utf8" });
    if (r.error) return; // kubectl is optional; the parse checks above still run.
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toContain("kind: StatefulSet");
  });

  it("run one shard per StatefulSet pod: the shard from the pod's hostname, --total-shards = replicas", () => {
    expect(argValue("--total-shards")).toBe(String(sts.replicas));
    expect(container.args).toContain("--shard-from-hostname");
    expect(container.args).not.toContain("--shard");
    expect(container.command, "no shell wrapper").toBeUndefined();
    expect(argValue("--listen")).toBe("0.0.0.0:9464");
    // What each pod's exporter would load: pod N of the set is shard N of replicas.
    for (let n = 0; n < sts.replicas; n++) {
      const { config } = loadConfig({
        argv: container.args,
        env: { SANDBOX_API_URL: "http://api.test", HOSTNAME: `${stsName}-${n}` },
      });
      expect(config.shard).toMatchObject({ index: n, total: sts.replicas });
    }
    const flags = new Set(SETTINGS.map((s) => (s.flag ? `--${s.flag}` : "")));
    for (const a of container.args.filter((x) => x.startsWith("--")))
      expect(flags.has(a), a).toBe(true);
  });

  it("run non-root and read-only, with requests, limits and health probes", () => {
    expect(container.resources.requests).toMatchObject({ cpu: "100m", memory: "256Mi" });
    expect(container.resources.limits).toMatchObject({ cpu: "1", memory: "512Mi" });
    expect(container.livenessProbe.httpGet.path).toBe("/healthz");
    expect(container.readinessProbe.httpGet.path).toBe("/readyz");
    expect(container.ports.find((p) => p.name === "metrics")?.containerPort).toBe(9464);
  });

  it("read the API key from a mounted Secret file", () => {
    const keyFile = container.env.find((e) => e.name === "SANDBOX_API_KEY_FILE");
    const path = z.looseObject({ value: z.string() }).parse(keyFile).value;
    const mount = container.volumeMounts.find((m) => path.startsWith(`${m.mountPath}/`));
    expect(mount, path).toBeDefined();
    const volume = sts.template.spec.volumes.find((v) => v.name === mount?.name);
    expect(volume).toMatchObject({ secret: { secretName: expect.any(String) } });
    expect(container.env.some((e) => e.name === "SANDBOX_API_KEY")).toBe(false);
  });

  it("scrape each pod once, through the Service the ServiceMonitor selects", () => {
    const services = ofKind("Service");
    const headless = services.find((s) => s.metadata.name === sts.serviceName);
    expect(headless?.spec).toMatchObject({ clusterIP: "None" });
    const sm = z
      .looseObject({
        jobLabel: z.string(),
        selector: z.looseObject({ matchLabels: z.record(z.string(), z.string()) }),
        endpoints: z.array(z.looseObject({ port: z.string() })),
      })
      .parse(ofKind("ServiceMonitor")[0]?.spec);
    const selected = services.filter((s) => matches(sm.selector.matchLabels, s.metadata.labels));
    expect(selected.map((s) => s.metadata.name)).toEqual([JOB]);
    expect(selected[0]?.metadata.labels?.[sm.jobLabel]).toBe(JOB);
    expect(sm.endpoints.map((e) => e.port)).toEqual(["metrics"]);
  });

  it("select the exporter pods in the NetworkPolicy and PodDisruptionBudget", () => {
    for (const kind of ["NetworkPolicy", "PodDisruptionBudget"]) {
      const spec = z
        .looseObject({
          podSelector: z.looseObject({ matchLabels: z.record(z.string(), z.string()) }).optional(),
          selector: z.looseObject({ matchLabels: z.record(z.string(), z.string()) }).optional(),
        })
        .parse(ofKind(kind)[0]?.spec);
      const selector = spec.podSelector ?? spec.selector;
      expect(matches(selector?.matchLabels ?? { none: "x" }, podLabels), kind).toBe(true);
    }
    expect(JSON.stringify(ofKind("NetworkPolicy")[0]?.spec)).toContain('"port":9464');
  });

  it("set only environment variables the exporter knows", () => {
    const known = new Set(SETTINGS.map((s) => s.env));
    const cm = z
      .looseObject({ data: z.record(z.string(), z.string()) })
      .parse(ofKind("ConfigMap")[0]);
    for (const key of Object.keys(cm.data)) expect(known.has(key), key).toBe(true);
  });
});

describe("systemd unit", () => {
  const unit = read(join(ROOT, "deploy", "systemd", "sandbox-exporter.service"));
  const directives = new Set(unit.split("\n").filter((l) => /^[A-Z]\w*=/.test(l)));

  it("runs hardened under a dynamic user with the key as a credential", () => {
    for (const d of [
      "DynamicUser=yes",
      "ProtectSystem=strict",
      "NoNewPrivileges=yes",
      "LoadCredential=api-key:/etc/sandbox-exporter/api-key",
      "Environment=SANDBOX_API_KEY_FILE=%d/api-key",
      "ExecStart=/usr/bin/node --max-semi-space-size=4 /opt/sandbox-exporter/dist/cli.js",
      "RestartPreventExitStatus=2",
    ])
      expect(directives.has(d), d).toBe(true);
  });

  it("ships an environment file example of known settings only, without a key", () => {
    const file = join(ROOT, "deploy", "systemd", "sandbox-exporter.env.example");
    expect(existsSync(file)).toBe(true);
    const known = new Set(SETTINGS.map((s) => s.env));
    const keys = [...read(file).matchAll(/^#? ?([A-Z][A-Z0-9_]+)=/gm)].map((m) => m[1]!);
    expect(keys.length).toBeGreaterThan(3);
    for (const k of keys) expect(known.has(k), k).toBe(true);
    expect(keys).not.toContain("SANDBOX_API_KEY");
  });
});
