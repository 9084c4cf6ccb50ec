// The retention rules judged end to end by E2B's own SDK (2.51): snapshots made, used and paused
// through the SDK against the E2B-flavor simulator, an exporter on the same fake clock running
// three rules (keep the newest two, delete the unused, reap the paused), first in dry-run, then
// live after a reload; what remains is read back with the SDK, the plan over the real /status.
import { Writable } from "node:stream";
import { Sandbox, SandboxNotFoundError, type SnapshotPaginator } from "e2b";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Exporter, startExporter } from "../../src/app.js";
import { loadConfig } from "../../src/catalog.js";
import { type Simulator, startSimulator } from "../../src/simulator/index.js";
import { FakeClock } from "../../src/util/clock.js";
import { sampleOf, samples } from "../../tools/exposition.js";
import { SDK_API_KEY, sdkOpts } from "./sdk-setup.js";

const T0 = Date.parse("2026-11-23T12:00:00Z");
const SEC = 1_000;
/** The default poll schedule: what the clock moves before a cycle unless a step says otherwise. */
const INTERVAL = 15 * SEC;
/** The rules' default cooldown: a dry-run starts it too, and a reload keeps it. */
const COOLDOWN = 60 * 60 * SEC;
/** Real time a request to the exporter may take before the test gives up on it. */
const HTTP_MS = 5_000;
/** Upper bound on list pages walked by a test. */
const MAX_PAGES = 20;
const RULES_FILE = "rules.yaml";

/** The rule file; `live` adds the global `dryRun: false`. */
function rules(o: { live: boolean }): string {
  return `
maxMatchPercent: 100
consecutiveCycles: 1
${o.live ? "dryRun: false" : ""}
rules:
  - name: keep-two
    target: snapshot
    olderThan: 20s
    keepLatest: 2
    action: delete
    allowDelete: true
  - name: unused
    target: snapshot
    unusedFor: 30s
    action: delete
    allowDelete: true
  - name: reap-paused
    pausedFor: 20s
    action: delete
    allowDelete: true
`;
}

interface PlanEntry {
  rule: string;
  target?: string;
  snapshot?: string;
  sandbox?: string;
  action: string;
  dryRun: boolean;
  result: string;
  reason: string;
}

interface PolicyStatus {
  snapshots?: string;
  blocked: string | null;
  rules: Array<{ name: string; dryRun: boolean }>;
  plan: PlanEntry[];
}

describe("retention rules judged by E2B's SDK 2.51", () => {
  let sim: Simulator;
  let clock: FakeClock;
  let exporter: Exporter;
  const files = new Map([[RULES_FILE, rules({ live: false })]]);
  const lines: Array<Record<string, unknown>> = [];

  beforeAll(async () => {
    clock = new FakeClock(T0);
    // No generated fleet: every sandbox here is one the test made, so a rule acts on no other.
    sim = await startSimulator({
      flavor: "e2b",
      sandboxes: 0,
      templates: 1,
      nodes: 1,
      apiKey: SDK_API_KEY,
      clock,
    });
    const { config } = loadConfig({
      argv: [
        ...["--listen", "127.0.0.1:0", "--retries", "0", "--flavor", "e2b"],
        ...["--policy", RULES_FILE, "--web.enable-lifecycle"],
      ],
      env: {
        SANDBOX_API_URL: sim.apiUrl,
        SANDBOX_API_KEY: SDK_API_KEY,
        SANDBOX_DOMAIN: sim.domain,
      },
    });
    const sink = new Writable({
      write(chunk, _enc, done) {
        lines.push(JSON.parse(String(chunk)) as Record<string, unknown>);
        done();
      },
    });
    exporter = await startExporter(config, {
      logger: pino({ level: "info" }, sink),
      clock,
      manual: true,
      readFile: (path) => {
        const text = files.get(path);
        if (text === undefined) throw new Error(`ENOENT: ${path}`);
        return text;
      },
    });
  });
  afterAll(async () => {
    await exporter?.stop();
    await sim?.close();
  });

  /** One manual cycle after moving the clock `stepMs`; the policy run ends with it. */
  async function cycle(stepMs = INTERVAL): Promise<void> {
    clock.advance(stepMs);
    await exporter.runCycle();
  }

  async function policyStatus(): Promise<PolicyStatus> {
    const res = await fetch(`${exporter.server.url}/status`, {
      signal: AbortSignal.timeout(HTTP_MS),
    });
    expect(res.status).toBe(200);
    return ((await res.json()) as { policy: PolicyStatus }).policy;
  }

  /** The latest run's results as `rule -> snapshot or sandbox id -> results` (sorted). */
  function byRule(plan: readonly PlanEntry[]): Record<string, Record<string, string[]>> {
    const out: Record<string, Record<string, string[]>> = {};
    for (const d of plan) {
      const id = d.snapshot ?? d.sandbox ?? "?";
      const rule = out[d.rule] ?? {};
      rule[id] = [...(rule[id] ?? []), d.result].sort();
      out[d.rule] = rule;
    }
    return out;
  }

  async function decisions(rule: string, result: string): Promise<number> {
    const res = await fetch(`${exporter.server.url}/metrics`, {
      signal: AbortSignal.timeout(HTTP_MS),
    });
    const m = samples(await res.text());
    return sampleOf(m, "sandbox_policy_decisions_total", { rule, action: "delete", result }) ?? 0;
  }

  /** Every snapshot id the SDK lists, newest first, walking its pages (bounded). */
  async function listed(): Promise<string[]> {
    const paginator: SnapshotPaginator = Sandbox.listSnapshots({ ...sdkOpts(sim), limit: 2 });
    const ids: string[] = [];
    for (let i = 0; paginator.hasNext && i < MAX_PAGES; i++)
      ids.push(...(await paginator.nextItems()).map((s) => s.snapshotId));
    expect(paginator.hasNext).toBe(false);
    return ids;
  }

  // Filled by the dry-run case, judged again by the live one.
  let snaps: string[] = [];
  let paused: Sandbox;
  let child: Sandbox;

  it("dry-run (the default): plans the deletions on /status as dry_run and deletes nothing", async () => {
    const template = sim.state.templates[0]?.templateID as string;
    const source = await Sandbox.create(template, sdkOpts(sim));
    paused = await Sandbox.create(template, sdkOpts(sim));
    expect(await paused.pause()).toBe(true);
    // The first walk sees the pause: the pausedFor clock starts at its end (no events read).
    // No snapshot yet, so no retention rule has anything to decide.
    await cycle();
    let status = await policyStatus();
    expect(status.snapshots).toBe("evaluated");
    expect(status.plan).toEqual([]);

    // Four unnamed snapshots 20 s apart (the platform serves their details: created, last used),
    // and a sandbox started from the oldest that goes on running.
    snaps = [(await source.createSnapshot()).snapshotId];
    clock.advance(10 * SEC);
    child = await Sandbox.create(snaps[0] as string, sdkOpts(sim));
    const oldestRaw = (snaps[0] as string).split(":")[0];
    expect((await child.getInfo()).templateId).toBe(oldestRaw);
    for (let i = 1; i < 4; i++) {
      clock.advance(i === 1 ? 10 * SEC : 20 * SEC);
      snaps.push((await source.createSnapshot()).snapshotId);
    }
    expect(snaps.every((id) => /^[a-z0-9]{20}:default$/.test(id))).toBe(true);
    // Evaluated 40 s after the newest: 100, 80, 60 and 40 s old; the oldest last used 90 s ago,
    // the others never; the sandbox paused since the first walk, 100 s ago.
    await cycle(40 * SEC);
    const [s0, s1, s2, s3] = snaps as [string, string, string, string];

    status = await policyStatus();
    expect(status.blocked).toBeNull();
    expect(status.snapshots).toBe("evaluated");
    // Both snapshot rules want the 80 s one: keep-two, first in the file, takes it, and a target
    // one rule acts on is taken by no later rule in the same run. The newest two are kept by
    // keep-two whatever any rule says; the oldest is in use by the running child (the walk shows
    // it, nothing is asked).
    expect(byRule(status.plan)).toEqual({
      "keep-two": {
        [s0]: ["skipped_in_use"],
        [s1]: ["dry_run"],
        [s2]: ["skipped_protected"],
        [s3]: ["skipped_protected"],
      },
      unused: {
        [s0]: ["skipped_in_use"],
        [s2]: ["skipped_protected"],
        [s3]: ["skipped_protected"],
      },
      "reap-paused": { [paused.sandboxId]: ["dry_run"] },
    });
    const planned = status.plan.filter((d) => d.result === "dry_run");
    for (const d of planned.filter((x) => x.rule !== "reap-paused"))
      expect(d).toMatchObject({ target: "snapshot", snapshot: s1, action: "delete", dryRun: true });
    expect(planned.find((d) => d.rule === "reap-paused")).toMatchObject({
      sandbox: paused.sandboxId,
      action: "delete",
      dryRun: true,
    });
    expect(planned.find((d) => d.rule === "keep-two")?.reason).toMatch(/^age 1m20s > 20s/);
    expect(status.plan.find((d) => d.snapshot === s0)?.reason).toContain(
      "a sandbox of this shard was started from it",
    );
    expect(status.plan.find((d) => d.snapshot === s2)?.reason).toContain(
      'among the newest 2 rule "keep-two" keeps',
    );
    for (const [rule, n] of [
      ["keep-two", 1],
      ["unused", 0],
      ["reap-paused", 1],
    ] as const) {
      expect(await decisions(rule, "dry_run"), rule).toBe(n);
      expect(await decisions(rule, "done"), rule).toBe(0);
    }

    // Nothing deleted: the SDK lists all four, and the paused sandbox is still there.
    expect(await listed()).toEqual([s3, s2, s1, s0]);
    expect((await Sandbox.getInfo(paused.sandboxId, sdkOpts(sim))).state).toBe("paused");
    expect(sim.counters.get("DELETE /templates/{id}")).toBe(0);
    expect(sim.counters.get("DELETE /sandboxes/{id}")).toBe(0);
  });

  it("live after a reload: deletes the planned snapshot and the paused sandbox, keeps the newest two and the one in use", async () => {
    const [s0, s1, s2, s3] = snaps as [string, string, string, string];
    files.set(RULES_FILE, rules({ live: true }));
    const res = await fetch(`${exporter.server.url}/-/reload`, {
      method: "POST",
      signal: AbortSignal.timeout(HTTP_MS),
    });
    expect(res.status).toBe(200);
    let status = await policyStatus();
    expect(status.rules.map((r) => [r.name, r.dryRun])).toEqual([
      ["reap-paused", false],
      ["keep-two", false],
      ["unused", false],
    ]);

    // The dry run started keep-two's and reap-paused's cooldowns, and the reload kept them. A
    // cooldown leaves the snapshot alone, not only the rule: unused does not take it either.
    await cycle();
    status = await policyStatus();
    expect(byRule(status.plan)["keep-two"]?.[s1]).toEqual(["skipped_cooldown"]);
    expect(byRule(status.plan).unused?.[s1]).toEqual(["skipped_cooldown"]);
    expect(sim.counters.get("DELETE /templates/{id}")).toBe(0);
    expect(byRule(status.plan)["reap-paused"]?.[paused.sandboxId]).toEqual(["skipped_cooldown"]);
    expect(sim.counters.get("DELETE /sandboxes/{id}")).toBe(0);

    // Past the cooldown.
    await cycle(COOLDOWN);

    // What E2B's SDK sees: the newest two and the one in use; the paused sandbox gone.
    expect(await listed()).toEqual([s3, s2, s0]);
    await expect(Sandbox.getInfo(paused.sandboxId, sdkOpts(sim))).rejects.toBeInstanceOf(
      SandboxNotFoundError,
    );
    expect((await child.getInfo()).state).toBe("running");
    expect(sim.counters.get("DELETE /templates/{id}")).toBe(1);

    status = await policyStatus();
    const expected = {
      [s0]: ["skipped_in_use"],
      [s2]: ["skipped_protected"],
      [s3]: ["skipped_protected"],
    };
    expect(byRule(status.plan)).toEqual({
      "keep-two": { ...expected, [s1]: ["done"] },
      unused: expected,
      "reap-paused": { [paused.sandboxId]: ["done"] },
    });
    const audit = lines.filter((l) => l.audit === true && l.result === "done");
    expect(audit.map((l) => l.snapshot ?? l.sandbox).sort()).toEqual([s1, paused.sandboxId].sort());
  });

  it("deletes the used snapshot once the sandbox started from it ends and its cooldown passes", async () => {
    const [s0, , s2, s3] = snaps as [string, string, string, string];
    await child.kill();
    // skipped_in_use cools down like an attempt: neither rule takes it for an hour.
    await cycle();
    const cooling = byRule((await policyStatus()).plan);
    expect([cooling["keep-two"]?.[s0], cooling.unused?.[s0]]).toEqual([
      ["skipped_cooldown"],
      ["skipped_cooldown"],
    ]);
    expect(await listed()).toEqual([s3, s2, s0]);
    await cycle(COOLDOWN);
    const plan = (await policyStatus()).plan.filter((d) => d.snapshot === s0);
    expect(plan.map((d) => [d.rule, d.result])).toEqual([["keep-two", "done"]]);
    expect(await listed()).toEqual([s3, s2]);
    expect(sim.counters.get("DELETE /templates/{id}")).toBe(2);
  });
});
