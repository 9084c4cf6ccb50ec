// The policy engine against the simulator over loopback, on a fake clock shared by both.
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { pino } from "pino";
import { Agent, type Dispatcher } from "undici";
import { afterEach, describe, expect, it } from "vitest";
import { type Exporter, startExporter } from "../../src/app.js";
import { loadConfig } from "../../src/catalog.js";
import type { SandboxDecision } from "../../src/policy/evaluate.js";
import type { SandboxInit } from "../../src/simulator/index.js";
import { type Simulator, startSimulator } from "../../src/simulator/index.js";
import { FakeClock } from "../../src/util/clock.js";
import { shardOf } from "../../src/util/shard.js";
import { samples, scrape } from "../helpers/exporter.js";

const T0 = Date.parse("2026-11-23T12:00:00Z");
const MIN = 60_000;
const PAUSE = "POST /sandboxes/{id}/pause";
const LOGS = "GET /v2/sandboxes/{id}/logs";

let sim: Simulator | undefined;
const exporters: Exporter[] = [];

afterEach(async () => {
  for (const e of exporters.splice(0)) await e.stop();
  await sim?.close();
  sim = undefined;
});

interface Setup {
  sim: Simulator;
  clock: FakeClock;
  template: string;
  /** Adds a running sandbox of the template whose only log line is `idleMs` old. */
  add(idleMs: number, init?: SandboxInit): string;
}

async function platform(): Promise<Setup> {
  const clock = new FakeClock(T0);
  const s = await startSimulator({ sandboxes: 0, clock });
  sim = s;
  const template = s.state.templates[0]?.templateID as string;
  let n = 0;
  return {
    sim: s,
    clock,
    template,
    add(idleMs, init = {}) {
      const id = `sbx-${String(++n).padStart(3, "0")}`;
      s.state.addSandbox({
        sandboxID: id,
        templateID: template,
        state: "running",
        startedAt: clock.now() - 3 * 60 * MIN,
        logs: [{ timestamp: clock.now() - idleMs, line: "work", level: "info" }],
        ...init,
      });
      return id;
    },
  };
}

interface Started {
  exporter: Exporter;
  audit: Array<Record<string, unknown>>;
  /** "policy notice" lines (notifyBefore). */
  notices: Array<Record<string, unknown>>;
  files: Map<string, string>;
  /** Flags added to the command line of the next reload. */
  reloadArgv: string[];
}

async function exporter(
  p: Setup,
  rules: string,
  argv: string[] = [],
  dispatcher: Dispatcher = new Agent(),
): Promise<Started> {
  const files = new Map([["rules.yaml", rules]]);
  const load = (extra: string[] = []) =>
    loadConfig({
      argv: [
        "--listen",
        "127.0.0.1:0",
        "--retries",
        "0",
        "--policy",
        "rules.yaml",
        ...argv,
        ...extra,
      ],
      env: { SANDBOX_API_URL: p.sim.apiUrl, SANDBOX_DOMAIN: p.sim.domain },
      readFile: (path) => readFileSync(path, "utf8"),
    }).config;
  const config = load();
  const reloadArgv: string[] = [];
  const audit: Array<Record<string, unknown>> = [];
  const notices: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      const line = JSON.parse(String(chunk)) as Record<string, unknown>;
      if (line.audit) audit.push(line);
      if (line.msg === "policy notice") notices.push(line);
      done();
    },
  });
  const e = await startExporter(config, {
    logger: pino({ level: "debug" }, sink),
    clock: p.clock,
    dispatcher,
    manual: true,
    readFile: (path) => {
      const text = files.get(path);
      if (text === undefined) throw new Error(`ENOENT: ${path}`);
      return text;
    },
    reloadConfig: () => load(reloadArgv),
  });
  exporters.push(e);
  return { exporter: e, audit, notices, files, reloadArgv };
}

const IDLE_RULE = (extra = "") => `
maxMatchPercent: 100
rules:
  - name: idle
    match: { states: [running] }
    idleFor: 30m
    action: pause
${extra}`;

function metric(text: string, key: string): number | undefined {
  return samples(text).get(key);
}

async function status(e: Exporter): Promise<{
  policy: {
    blocked: string | null;
    plan: Array<{ sandbox: string; result: string; reason: string }>;
  };
}> {
  return (await (await fetch(`${e.server.url}/status`)).json()) as never;
}

describe("policy engine against the simulator", () => {
  it("pauses an idle sandbox only after consecutiveCycles fresh snapshots; busy and protected ones stay", async () => {
    const p = await platform();
    const idle = p.add(2 * 60 * MIN);
    const busy = p.add(2 * 60 * MIN);
    const guarded = p.add(2 * 60 * MIN, { metadata: { "sandbox-exporter/protect": "true" } });
    const { exporter: e, audit } = await exporter(p, IDLE_RULE(), ["--policy-dry-run=false"]);

    await e.runCycle();
    expect(p.sim.counters.get(PAUSE)).toBe(0);
    const first = await status(e);
    expect(first.policy.plan.find((d) => d.sandbox === idle)?.result).toBe("pending");

    // New log lines make the busy one active again before the second snapshot.
    p.clock.advance(MIN);
    p.sim.state.appendLog(busy, "still working");
    await e.runCycle();

    expect(p.sim.counters.get(PAUSE)).toBe(1);
    expect(p.sim.state.sandbox(idle)?.state).toBe("paused");
    expect(p.sim.state.sandbox(busy)?.state).toBe("running");
    expect(p.sim.state.sandbox(guarded)?.state).toBe("running");
    const m = await scrape(e);
    expect(
      metric(m, 'sandbox_policy_decisions_total{rule="idle",action="pause",result="done"}'),
    ).toBe(1);
    expect(
      metric(
        m,
        'sandbox_policy_decisions_total{rule="idle",action="pause",result="skipped_protected"}',
      ),
    ).toBe(2);
    expect(metric(m, "sandbox_policy_last_run_timestamp_seconds")).toBe((T0 + MIN) / 1000);
    const done = audit.find((l) => l.result === "done");
    expect(done).toMatchObject({ rule: "idle", sandbox: idle, action: "pause", dryRun: false });
    expect(String(done?.reason)).toMatch(/idle 2h1m >= 30m/);
    expect(audit.some((l) => l.sandbox === busy && l.result !== "pending")).toBe(false);
  });

  it("honours maxActionsPerCycle exactly, globally and per rule", async () => {
    const p = await platform();
    for (let i = 0; i < 7; i++) p.add((60 + i) * MIN);
    const rules = `
maxMatchPercent: 100
maxActionsPerCycle: 3
consecutiveCycles: 1
rules:
  - name: first
    match: { states: [running] }
    idleFor: 30m
    action: pause
    maxActionsPerCycle: 2
  - name: second
    match: { states: [running] }
    idleFor: 30m
    action: pause
`;
    const { exporter: e } = await exporter(p, rules, ["--policy-dry-run=false"]);
    await e.runCycle();
    expect(p.sim.counters.get(PAUSE)).toBe(3);
    const m = await scrape(e);
    expect(
      metric(m, 'sandbox_policy_decisions_total{rule="first",action="pause",result="done"}'),
    ).toBe(2);
    expect(
      metric(m, 'sandbox_policy_decisions_total{rule="second",action="pause",result="done"}'),
    ).toBe(1);
    expect(
      metric(
        m,
        'sandbox_policy_decisions_total{rule="first",action="pause",result="skipped_limit"}',
      ),
    ).toBe(5);
    // The longest idle go first.
    expect(p.sim.state.sandbox("sbx-007")?.state).toBe("paused");
    expect(p.sim.state.sandbox("sbx-001")?.state).toBe("running");
    p.clock.advance(MIN);
    await e.runCycle();
    expect(p.sim.counters.get(PAUSE)).toBe(6);
  });

  it("makes zero mutating calls in dry-run while the plan and metrics show what would happen", async () => {
    const p = await platform();
    const ids = [p.add(90 * MIN), p.add(120 * MIN)];
    p.add(MIN);
    const { exporter: e, audit } = await exporter(p, IDLE_RULE());
    for (let i = 0; i < 3; i++) {
      await e.runCycle();
      p.clock.advance(MIN);
    }
    expect(p.sim.counters.mutating()).toBe(0);
    const m = await scrape(e);
    expect(
      metric(m, 'sandbox_policy_decisions_total{rule="idle",action="pause",result="dry_run"}'),
    ).toBe(2);
    expect(metric(m, 'sandbox_policy_dry_run{rule="idle"}')).toBe(1);
    expect(metric(m, 'sandbox_policy_candidates{rule="idle"}')).toBe(2);
    // The cooldown keeps a dry-run from repeating itself every cycle.
    const s = await status(e);
    expect(
      s.policy.plan
        .filter((d) => d.result === "skipped_cooldown")
        .map((d) => d.sandbox)
        .sort(),
    ).toEqual(ids);
    expect(
      audit
        .filter((l) => l.result === "dry_run")
        .map((l) => l.sandbox)
        .sort(),
    ).toEqual(ids);
  });

  it("makes zero mutating calls when a page fails, the snapshot is stale or health is down", async () => {
    const p = await platform();
    const idle = p.add(2 * 60 * MIN);
    for (let i = 0; i < 3; i++) p.add(MIN);
    const { exporter: e } = await exporter(p, IDLE_RULE(), [
      "--policy-dry-run=false",
      "--page-limit",
      "2",
    ]);
    await e.runCycle(); // streak 1 of 2
    // A page fails: the walk is incomplete, twice.
    p.sim.faults.route("GET /v2/sandboxes", { status: 500 });
    let failed = 0;
    for (let i = 0; i < 2; i++) {
      p.clock.advance(MIN);
      const snap = await e.runCycle();
      if (snap?.sandboxesComplete === false) failed++;
    }
    expect(failed).toBe(2);
    p.sim.faults.clear();
    p.sim.faults.healthDown = true;
    p.clock.advance(MIN);
    await e.runCycle();
    expect((await status(e)).policy.blocked).toBe("health_down");
    p.sim.faults.healthDown = false;
    p.clock.advance(MIN);
    await e.runCycle(); // streak restarts at 1: blocked runs break "in a row"
    expect(p.sim.counters.mutating()).toBe(0);
    // Two clean snapshots in a row, and only then, the idle one is paused.
    p.clock.advance(MIN);
    const snap = await e.runCycle();
    expect(p.sim.counters.mutating()).toBe(1);
    expect(p.sim.state.sandbox(idle)?.state).toBe("paused");
    // A complete snapshot evaluated long after it was taken acts on nothing.
    p.add(2 * 60 * MIN);
    p.clock.advance(10 * MIN);
    if (!snap || !e.policy) throw new Error("no snapshot or policy");
    const stale = await e.policy.run({ ...snap, cycle: snap.cycle + 1 });
    expect(stale.blocked).toBe("stale");
    expect(p.sim.counters.mutating()).toBe(1);
    const m = await scrape(e);
    expect(metric(m, 'sandbox_policy_blocked_total{reason="incomplete"}')).toBe(2);
    expect(metric(m, 'sandbox_policy_blocked_total{reason="health_down"}')).toBe(1);
    expect(metric(m, 'sandbox_policy_blocked_total{reason="stale"}')).toBe(1);
  });

  it("leaves a sandbox alone that was resumed, paused, protected or busy between evaluation and action", async () => {
    const p = await platform();
    const ids = [
      p.add(2 * 60 * MIN),
      p.add(2 * 60 * MIN),
      p.add(2 * 60 * MIN),
      p.add(2 * 60 * MIN),
    ];
    const untouched = p.add(2 * 60 * MIN);
    const [busy, paused, guarded, resumed] = ids as [string, string, string, string];
    let armed = false;
    // Runs just before the executor's re-read of each sandbox: the user acts in between.
    const between = new Agent().compose((dispatch) => (opts, handler) => {
      const m = /\/sandboxes\/([^/?]+)$/.exec(opts.path);
      if (armed && opts.method === "GET" && m && !opts.path.includes("/v2/")) {
        const id = m[1] as string;
        if (id === busy) p.sim.state.appendLog(busy, "a new line");
        if (id === paused) p.sim.state.setState(paused, "paused");
        if (id === guarded)
          (p.sim.state.sandbox(guarded) as { metadata: Record<string, string> }).metadata = {
            "sandbox-exporter/protect": "true",
          };
        if (id === resumed) {
          // Paused and resumed again: running, with the resume in its log.
          p.sim.state.setState(resumed, "paused");
          p.sim.state.setState(resumed, "running");
          p.sim.state.appendLog(resumed, "resumed");
        }
      }
      return dispatch(opts, handler);
    });
    const { exporter: e } = await exporter(p, IDLE_RULE(), ["--policy-dry-run=false"], between);
    await e.runCycle();
    armed = true;
    p.clock.advance(MIN);
    await e.runCycle();
    expect(p.sim.counters.get(PAUSE)).toBe(1);
    expect(p.sim.state.sandbox(untouched)?.state).toBe("paused");
    expect(p.sim.state.sandbox(busy)?.state).toBe("running");
    expect(p.sim.state.sandbox(resumed)?.state).toBe("running");
    const m = await scrape(e);
    expect(
      metric(
        m,
        'sandbox_policy_decisions_total{rule="idle",action="pause",result="skipped_changed"}',
      ),
    ).toBe(4);
    const plan = (await status(e)).policy.plan;
    expect(plan.find((d) => d.sandbox === busy)?.reason).toMatch(/active since the snapshot/);
    expect(plan.find((d) => d.sandbox === paused)?.reason).toMatch(
      /no longer matches \(state paused\)/,
    );
    expect(plan.find((d) => d.sandbox === guarded)?.reason).toMatch(/protected since the snapshot/);
  });

  it("reads each candidate once, then only the blast-radius sample: a warm cache answers the rest", async () => {
    const p = await platform();
    for (let i = 0; i < 20; i++) p.add(i * MIN); // active 0..19 minutes ago
    p.add(5 * 60 * MIN, { state: "paused" }); // a paused one is never read
    const { exporter: e } = await exporter(p, `${IDLE_RULE()}\nactivity: { sampleSize: 1 }\n`);
    await e.runCycle();
    // None is idle yet, so every unknown one was read looking for one that could be acted on.
    expect(p.sim.counters.get(LOGS)).toBe(20);
    p.clock.advance(5 * MIN);
    await e.runCycle();
    // Known ones are not read again; only the sample is read fresh.
    expect(p.sim.counters.get(LOGS)).toBe(21);
    p.clock.advance(6 * MIN);
    await e.runCycle();
    // Cached values that now look idle are not re-read either: the executor reads before acting.
    expect(p.sim.counters.get(LOGS)).toBe(22);
    const m = await scrape(e);
    expect(metric(m, "sandbox_policy_activity_cache_hits_total")).toBe(19 + 19);
    expect(metric(m, 'sandbox_policy_activity_reads_total{result="ok"}')).toBe(22);
  });

  it("reads lazily, oldest first, only until it knows enough idle sandboxes to fill the run's actions", async () => {
    const p = await platform();
    for (let i = 0; i < 100; i++) p.add(2 * 60 * MIN);
    const rules = `${IDLE_RULE()}\nmaxActionsPerCycle: 3\nactivity: { sampleSize: 5 }\n`;
    const { exporter: e } = await exporter(p, rules);
    await e.runCycle();
    // The 5 sampled are read fresh and idle. A sandbox found idle now is acted on 2 runs later
    // (consecutiveCycles), so 3 actions x 2 runs = 6 idle are worth knowing: one batch of 8 more.
    expect(p.sim.counters.get(LOGS)).toBe(13);
    await e.runCycle();
    // The next run reads only the 5 of its new sample: 13 idle are known, none acted on yet.
    expect(p.sim.counters.get(LOGS)).toBe(18);
    const s = (await (await fetch(`${e.server.url}/status`)).json()) as {
      policy: { rules: Array<{ sample?: { sampled: number; idle: number } }> };
    };
    expect(s.policy.rules[0]?.sample).toMatchObject({ sampled: 5, idle: 5 });
  });

  it("stops a rule by its sampled idle share without reading every candidate", async () => {
    const p = await platform();
    for (let i = 0; i < 200; i++) p.add(2 * 60 * MIN);
    const rules = IDLE_RULE()
      .replace("maxMatchPercent: 100", "maxMatchPercent: 50\nconsecutiveCycles: 1")
      .concat("\nmaxActionsPerCycle: 2\nactivity: { sampleSize: 50 }\n");
    const { exporter: e } = await exporter(p, rules, ["--policy-dry-run=false"]);
    await e.runCycle();
    // 50 reads of 200: the sample, all idle. Found idle: 50 of 200 (25 %), under the limit;
    // the sample says up to 100 %: the rule acts on none.
    expect(p.sim.counters.get(LOGS)).toBe(50);
    expect(p.sim.counters.mutating()).toBe(0);
    const m = await scrape(e);
    expect(metric(m, 'sandbox_policy_blast_radius_stops_total{rule="idle"}')).toBe(1);
    const s = (await (await fetch(`${e.server.url}/status`)).json()) as {
      policy: {
        rules: Array<{ sample?: { sampled: number; idle: number; upperPercent: number } }>;
      };
    };
    expect(s.policy.rules[0]?.sample).toMatchObject({ sampled: 50, idle: 50 });
    expect(s.policy.rules[0]?.sample?.upperPercent).toBeGreaterThan(90);
  });

  it("stops a rule that would act on more than maxMatchPercent of what it looked at", async () => {
    const p = await platform();
    for (let i = 0; i < 8; i++) p.add(2 * 60 * MIN);
    for (let i = 0; i < 4; i++) p.add(MIN);
    const rules = IDLE_RULE().replace(
      "maxMatchPercent: 100",
      "maxMatchPercent: 50\nconsecutiveCycles: 1",
    );
    const { exporter: e } = await exporter(p, rules, ["--policy-dry-run=false"]);
    await e.runCycle();
    expect(p.sim.counters.mutating()).toBe(0);
    const m = await scrape(e);
    expect(metric(m, 'sandbox_policy_blast_radius_stops_total{rule="idle"}')).toBe(1);
    expect(
      metric(
        m,
        'sandbox_policy_decisions_total{rule="idle",action="pause",result="skipped_blast_radius"}',
      ),
    ).toBe(8);
  });

  it("acts only on its own shard: two replicas split the sandboxes exactly", async () => {
    const p = await platform();
    for (let i = 0; i < 30; i++) p.add(2 * 60 * MIN);
    const rules = IDLE_RULE().replace(
      "maxMatchPercent: 100",
      "maxMatchPercent: 100\nmaxActionsPerCycle: 100\nconsecutiveCycles: 1",
    );
    const acted: string[][] = [];
    for (const shard of [0, 1]) {
      const { exporter: e, audit } = await exporter(p, rules, [
        "--shard",
        String(shard),
        "--total-shards",
        "2",
      ]);
      await e.runCycle();
      acted.push(audit.filter((l) => l.result === "dry_run").map((l) => String(l.sandbox)));
    }
    const [a, b] = acted as [string[], string[]];
    expect(a.every((id) => shardOf(id, 2) === 0)).toBe(true);
    expect(b.every((id) => shardOf(id, 2) === 1)).toBe(true);
    expect(new Set([...a, ...b]).size).toBe(30);
    expect(a.length + b.length).toBe(30);
  });

  it("reloads the rule file on POST /-/reload and keeps the old rules when the new file is bad", async () => {
    const p = await platform();
    p.add(2 * 60 * MIN);
    const { exporter: e, files } = await exporter(p, IDLE_RULE(), ["--web.enable-lifecycle"]);
    files.set("rules.yaml", IDLE_RULE().replace("name: idle", "name: renamed"));
    const ok = await fetch(`${e.server.url}/-/reload`, { method: "POST" });
    expect(ok.status).toBe(200);
    let m = await scrape(e);
    expect(metric(m, 'sandbox_policy_dry_run{rule="renamed"}')).toBe(1);
    expect(metric(m, 'sandbox_policy_dry_run{rule="idle"}')).toBeUndefined();
    expect(metric(m, "sandbox_exporter_config_last_reload_successful")).toBe(1);
    files.set("rules.yaml", IDLE_RULE().replace("action: pause", "action: delete"));
    const bad = await fetch(`${e.server.url}/-/reload`, { method: "POST" });
    expect(bad.status).toBe(500);
    expect(await bad.text()).toMatch(/rules\[0\] "idle"\.allowDelete/);
    m = await scrape(e);
    expect(metric(m, "sandbox_exporter_config_last_reload_successful")).toBe(0);
    expect(metric(m, 'sandbox_policy_dry_run{rule="renamed"}')).toBe(1);
  });

  it("never finds a paused sandbox idle from its start time; a configured activity field counts", async () => {
    const p = await platform();
    // Started three days ago, busy a minute ago, then paused.
    const fresh = p.add(MIN, { state: "paused", startedAt: T0 - 3 * 24 * 60 * MIN });
    const old = p.add(MIN, {
      state: "paused",
      startedAt: T0 - 3 * 24 * 60 * MIN,
      metadata: { "last-activity": new Date(T0 - 2 * 24 * 60 * MIN).toISOString() },
    });
    const rules = `
maxMatchPercent: 100
consecutiveCycles: 1
activity: { metadataField: last-activity }
rules:
  - name: stale-paused
    match: { states: [paused] }
    idleFor: 24h
    action: delete
    allowDelete: true
`;
    const { exporter: e } = await exporter(p, rules, ["--policy-dry-run=false"]);
    await e.runCycle();
    expect(p.sim.counters.get("DELETE /sandboxes/{id}")).toBe(1);
    expect(p.sim.state.sandbox(old)).toBeUndefined();
    expect(p.sim.state.sandbox(fresh)?.state).toBe("paused");
    // Paused sandboxes' logs are never read: a read may wake them.
    expect(p.sim.counters.get(LOGS)).toBe(0);
  });

  it("cools a failing action down instead of repeating it every cycle", async () => {
    const p = await platform();
    p.add(2 * 60 * MIN);
    p.sim.faults.route("POST /sandboxes/{id}/pause", { status: 500 });
    const { exporter: e } = await exporter(p, IDLE_RULE("    cooldown: 1h"), [
      "--policy-dry-run=false",
    ]);
    await e.runCycle();
    p.clock.advance(MIN);
    await e.runCycle();
    p.clock.advance(MIN);
    await e.runCycle();
    expect(p.sim.counters.get(PAUSE)).toBe(1);
    const m = await scrape(e);
    expect(
      metric(m, 'sandbox_policy_decisions_total{rule="idle",action="pause",result="failed"}'),
    ).toBe(1);
    expect(
      metric(
        m,
        'sandbox_policy_decisions_total{rule="idle",action="pause",result="skipped_cooldown"}',
      ),
    ).toBe(1);
  });

  it("stops acting mid-run when the rules are reloaded or the snapshot grows too old", async () => {
    const p = await platform();
    for (let i = 0; i < 6; i++) p.add((60 + i) * MIN);
    let hook: (() => void) | undefined;
    const between = new Agent().compose((dispatch) => (opts, handler) => {
      if (
        opts.method === "GET" &&
        /\/sandboxes\/[^/?]+$/.test(opts.path) &&
        !opts.path.includes("/v2/")
      ) {
        hook?.();
        hook = undefined;
      }
      return dispatch(opts, handler);
    });
    const rules = IDLE_RULE().replace(
      "maxMatchPercent: 100",
      "maxMatchPercent: 100\nconsecutiveCycles: 1",
    );
    const started = await exporter(p, rules, ["--policy-dry-run=false"], between);
    const e = started.exporter;
    // During the first re-read the operator reloads with the rule in dry-run.
    hook = () => {
      started.files.set(
        "rules.yaml",
        rules.replace("action: pause", "action: pause\n    dryRun: true"),
      );
      void e.reload();
    };
    await e.runCycle();
    expect(p.sim.counters.get(PAUSE)).toBe(1);
    let m = await scrape(e);
    expect(
      metric(
        m,
        'sandbox_policy_decisions_total{rule="idle",action="pause",result="skipped_changed"}',
      ),
    ).toBe(5);
    // Live again; this time the clock jumps past maxSnapshotAgeMs during the first re-read.
    started.files.set("rules.yaml", rules);
    expect((await e.reload()).ok).toBe(true);
    p.clock.advance(2 * 60 * MIN);
    hook = () => p.clock.advance(10 * MIN);
    await e.runCycle();
    expect(p.sim.counters.get(PAUSE)).toBe(2);
    m = await scrape(e);
    expect(
      metric(
        m,
        'sandbox_policy_decisions_total{rule="idle",action="pause",result="skipped_stale"}',
      ),
    ).toBe(4);
  });

  it("turns every rule off when a reload disables the policy, and announces notice periods", async () => {
    const p = await platform();
    p.add(2 * 60 * MIN);
    const rules = IDLE_RULE("    notifyBefore: 10m").replace(
      "maxMatchPercent: 100",
      "maxMatchPercent: 100\nconsecutiveCycles: 1",
    );
    const started = await exporter(p, rules, ["--policy-dry-run=false"]);
    const e = started.exporter;
    await e.runCycle();
    expect(started.notices).toHaveLength(1);
    expect(String(started.notices[0]?.reason)).toMatch(
      /notice period, acts from 2026-11-23T12:10:00.000Z/,
    );
    started.reloadArgv.push("--policy-enabled=false");
    expect((await e.reload()).ok).toBe(true);
    p.clock.advance(20 * MIN);
    await e.runCycle();
    expect(p.sim.counters.mutating()).toBe(0);
    expect(metric(await scrape(e), 'sandbox_policy_dry_run{rule="idle"}')).toBeUndefined();
  });
});

describe("the policy at fleet scale", () => {
  it("stops reading and acting when a run spends its time budget, and says so", async () => {
    const p = await platform();
    for (let i = 0; i < 10; i++) p.add(2 * 60 * MIN);
    // Each log read costs a second of the shared fake clock.
    const dispatcher = new Agent().compose((dispatch) => (opts, handler) => {
      if (String(opts.path).includes("/logs")) p.clock.advance(1_000);
      return dispatch(opts, handler);
    });
    const rules = `${IDLE_RULE()}\nmaxRunTimeMs: 3s\nactivity: { concurrency: 1 }\n`;
    const { exporter: e, audit } = await exporter(p, rules, [], dispatcher);
    await e.runCycle();
    expect(p.sim.counters.get(LOGS)).toBe(3);
    const s = (await (await fetch(`${e.server.url}/status`)).json()) as {
      policy: { overTimeBudget: boolean; timeBudgetSeconds: number; logReads: number };
    };
    expect(s.policy).toMatchObject({ overTimeBudget: true, timeBudgetSeconds: 3, logReads: 3 });
    expect(metric(await scrape(e), "sandbox_policy_runs_over_time_budget_total")).toBe(1);
    // Unread sandboxes are unknown, so not idle: no decision on them at all.
    expect(audit.filter((l) => l.sandbox !== undefined)).toEqual([]);
  });

  it("logs one line per action attempted and one summary per rule, however many it skips", async () => {
    const p = await platform();
    for (let i = 0; i < 20; i++) p.add(2 * 60 * MIN);
    const rules = `${IDLE_RULE()}\nconsecutiveCycles: 1\nmaxActionsPerCycle: 2\n`;
    const { exporter: e, audit } = await exporter(p, rules);
    for (let cycle = 0; cycle < 3; cycle++) {
      const before = audit.length;
      await e.runCycle();
      p.clock.advance(10_000);
      const lines = audit.slice(before);
      // 2 actions + 1 rule: <= actions + notices + rules + 1.
      expect(lines.filter((l) => l.result === "dry_run")).toHaveLength(2);
      const summary = lines.filter((l) => l.msg === "policy rule summary");
      // The 18 not acted on: over the limit, and from the second run on the ones acted on before.
      expect(summary).toEqual([
        expect.objectContaining({
          rule: "idle",
          skipped:
            cycle === 0
              ? { skipped_limit: 18 }
              : { skipped_cooldown: 2 * cycle, skipped_limit: 18 - 2 * cycle },
        }),
      ]);
      expect(lines).toHaveLength(3);
    }
    // Every decision is still counted.
    const m = await scrape(e);
    expect(
      metric(
        m,
        'sandbox_policy_decisions_total{rule="idle",action="pause",result="skipped_limit"}',
      ),
    ).toBe(18 + 16 + 14);
  });

  it("completes polls on time while a slow policy run is in flight", async () => {
    const p = await platform();
    p.add(2 * 60 * MIN);
    p.add(2 * 60 * MIN);
    const { exporter: e } = await exporter(p, IDLE_RULE());
    p.sim.faults.route(LOGS, { latencyMs: 1_500 });
    await e.poller.tick();
    await e.poller.walkDone();
    // The first walk's snapshot went to the policy, whose log reads take 1.5 s each...
    expect(e.policy?.lastRun).toBeUndefined();
    // ...and a second poll neither waits for it nor is skipped.
    await e.poller.tick();
    await e.poller.walkDone();
    expect(e.policy?.lastRun).toBeUndefined();
    const m = await scrape(e);
    expect(metric(m, "sandbox_exporter_poll_cycles_total")).toBe(2);
    expect(metric(m, "sandbox_exporter_poll_skipped_ticks_total")).toBe(0);
    // The run in flight ends; the newest snapshot offered meanwhile runs after it.
    await e.runCycle();
    expect(e.policy?.lastRun?.cycle).toBe(3);
    expect(e.policy?.lastRun?.logReads).toBe(2);
  });
});

describe("the policy webhook", () => {
  async function receiver(answer: (n: number) => number | "hang") {
    const got: Array<{ body: Record<string, unknown>; auth: string | undefined }> = [];
    let n = 0;
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const a = answer(++n);
        if (a === "hang") return; // never answers; the client's timeout ends it
        if (a === 200)
          got.push({
            body: JSON.parse(Buffer.concat(chunks).toString()) as Record<string, unknown>,
            auth: req.headers.authorization,
          });
        res.writeHead(a).end();
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const { port } = server.address() as AddressInfo;
    return {
      url: `http://127.0.0.1:${port}/hook`,
      got,
      attempts: () => n,
      close: () => new Promise<void>((r) => server.close(() => r())),
    };
  }

  it("posts each action with its secret header, retrying a failing endpoint", async () => {
    const hook = await receiver((n) => (n <= 2 ? 500 : 200));
    const p = await platform();
    p.add(2 * 60 * MIN);
    const secretFile = join(mkdtempSync(join(tmpdir(), "hook-")), "token");
    writeFileSync(secretFile, "Bearer hook-secret-123\n");
    const rules = `${IDLE_RULE()}\nconsecutiveCycles: 1\n`;
    const { exporter: e } = await exporter(p, rules, [
      "--config",
      writeConfig({ policy: { webhook: { url: hook.url, headerValueFile: secretFile } } }),
    ]);
    await e.runCycle();
    await e.policy?.webhookIdle();
    expect(hook.attempts()).toBe(3);
    expect(hook.got).toEqual([
      {
        auth: "Bearer hook-secret-123",
        body: expect.objectContaining({
          rule: "idle",
          action: "pause",
          dryRun: true,
          result: "dry_run",
        }),
      },
    ]);
    const m = await scrape(e);
    expect(metric(m, 'sandbox_policy_webhook_deliveries_total{result="ok"}')).toBe(1);
    expect(m).not.toContain("hook-secret-123");
    await hook.close();
  });

  it("never holds a run back: a hanging endpoint fails its deliveries on its own time", async () => {
    const hook = await receiver(() => "hang");
    const p = await platform();
    p.add(2 * 60 * MIN);
    const rules = `${IDLE_RULE()}\nconsecutiveCycles: 1\n`;
    const { exporter: e } = await exporter(p, rules, [
      "--config",
      writeConfig({ policy: { webhook: { url: hook.url, timeoutMs: 200, retries: 1 } } }),
    ]);
    await e.runCycle();
    // The run is over while its delivery still waits for an answer.
    expect(e.policy?.lastRun?.outcomes.map((o) => o.result)).toEqual(["dry_run"]);
    const failed = 'sandbox_policy_webhook_deliveries_total{result="failed"}';
    expect(metric(await scrape(e), failed)).toBeUndefined();
    await e.policy?.webhookIdle();
    // One attempt and one retry, each cut by the 200 ms timeout.
    expect(hook.attempts()).toBe(2);
    expect(metric(await scrape(e), failed)).toBe(1);
    await hook.close();
  });
});

/** A config file holding `doc` (JSON is YAML), for settings that have no flag. */
function writeConfig(doc: unknown): string {
  const file = join(mkdtempSync(join(tmpdir(), "policy-config-")), "config.json");
  writeFileSync(file, JSON.stringify(doc));
  return file;
}

describe("resource usage as an idle signal", () => {
  const USAGE_RULE = `${IDLE_RULE()}\nconsecutiveCycles: 1\nactivity: { usage: { cpuBelowPercent: 2 } }\n`;

  it("never makes a candidate of a sandbox busy on the CPU, however old its logs", async () => {
    const p = await platform();
    const quiet = p.add(2 * 60 * MIN, { cpuPct: 0.5 });
    const busy = p.add(2 * 60 * MIN, { cpuPct: 80 });
    const { exporter: e, audit } = await exporter(p, USAGE_RULE);
    await e.runCycle();
    const acted = audit.filter((l) => l.result === "dry_run").map((l) => l.sandbox);
    expect(acted).toEqual([quiet]);
    expect(acted).not.toContain(busy);
    const m = await scrape(e);
    expect(metric(m, 'sandbox_policy_candidates{rule="idle"}')).toBe(1);
    expect(metric(m, 'sandbox_policy_usage_reads_total{result="ok"}')).toBe(1);
  });

  it("fills the run's actions every run on a fleet idle far beyond them, checking held streaks first", async () => {
    const p = await platform();
    // More idle sandboxes than one usage batch (100 ids), and a budget that is a good share of it.
    for (let i = 0; i < 300; i++) p.add(2 * 60 * MIN + i * 1_000, { cpuPct: 0.5 });
    const rules = `${IDLE_RULE()}\nconsecutiveCycles: 2\nmaxActionsPerCycle: 40\nactivity: { sampleSize: 10, usage: { cpuBelowPercent: 2 } }\n`;
    const { exporter: e } = await exporter(p, rules);
    const perRun: number[] = [];
    for (let run = 0; run < 5; run++) {
      await e.runCycle();
      const outcomes = e.policy?.lastRun?.outcomes ?? [];
      perRun.push(outcomes.filter((o) => o.result === "dry_run").length);
      p.clock.advance(1_000);
    }
    // The first run starts the streaks; every later one acts on its full budget, on new sandboxes
    // (those acted on are in cooldown, and must not take the places of those that can be).
    expect(perRun).toEqual([0, 40, 40, 40, 40]);
  });

  it("confirms the streaks it started when the random sample alone fills a usage batch", async () => {
    const p = await platform();
    // All quiet by their logs, 90 % idle by CPU too: the default sample of 100 is a whole usage
    // batch of idle-by-logs sandboxes, and far more than a run's actions are idle by both.
    const busy = new Set<string>();
    for (let i = 0; i < 2_000; i++) {
      const id = p.add(2 * 60 * MIN + i * 1_000, { cpuPct: i % 10 === 0 ? 80 : 0.5 });
      if (i % 10 === 0) busy.add(id);
    }
    const rules = `${IDLE_RULE()}\nconsecutiveCycles: 2\nmaxActionsPerCycle: 10\nactivity: { usage: { cpuBelowPercent: 2 } }\n`;
    // The request budget is real time: unthrottled, the test does not wait on it.
    const { exporter: e } = await exporter(p, rules, [
      "--policy-dry-run=false",
      "--max-requests-per-second",
      "100000",
    ]);
    const perRun: number[] = [];
    const paused: string[] = [];
    for (let run = 0; run < 10; run++) {
      await e.runCycle();
      const done = (e.policy?.lastRun?.outcomes ?? []).filter((o) => o.result === "done");
      perRun.push(done.length);
      paused.push(...done.map((o) => (o as SandboxDecision).sandboxId));
      p.clock.advance(15_000);
    }
    // A streak started in one run is confirmed in the next: every run after the first pauses 10
    // (before, only the few held ones the next random sample happened to draw: 0 to 5 a run).
    expect(perRun).toEqual([0, 10, 10, 10, 10, 10, 10, 10, 10, 10]);
    expect(p.sim.counters.get(PAUSE)).toBe(90);
    expect(paused.filter((id) => busy.has(id))).toEqual([]);
  });

  it("finds nothing idle when usage cannot be read", async () => {
    const p = await platform();
    p.add(2 * 60 * MIN, { cpuPct: 0.5 });
    const { exporter: e, audit } = await exporter(p, USAGE_RULE);
    p.sim.faults.route("GET /sandboxes/metrics", { status: 500 });
    await e.runCycle();
    expect(audit.filter((l) => l.sandbox !== undefined)).toEqual([]);
    const m = await scrape(e);
    expect(metric(m, 'sandbox_policy_candidates{rule="idle"}')).toBe(0);
    expect(metric(m, 'sandbox_policy_usage_reads_total{result="error"}')).toBeGreaterThanOrEqual(1);
  });

  it("acts only after the CPU history over the whole idleFor confirms it, and not when it cannot be read", async () => {
    const p = await platform();
    const a = p.add(2 * 60 * MIN, { cpuPct: 0.5 });
    const { exporter: e } = await exporter(p, USAGE_RULE, ["--policy-dry-run=false"]);
    p.sim.faults.route("GET /sandboxes/{id}/metrics", { status: 500 });
    await e.runCycle();
    expect(p.sim.counters.mutating()).toBe(0);
    expect(e.policy?.lastRun?.outcomes).toEqual([
      expect.objectContaining({ sandboxId: a, result: "skipped_unverified" }),
    ]);
    p.sim.faults.clear();
    p.clock.advance(2 * 60 * MIN); // past the cooldown of the unverified attempt
    await e.runCycle();
    expect(e.policy?.lastRun?.outcomes).toEqual([
      expect.objectContaining({ sandboxId: a, result: "done" }),
    ]);
    expect(p.sim.counters.get(PAUSE)).toBe(1);
  });
});
