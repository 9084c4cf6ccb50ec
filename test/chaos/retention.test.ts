// The retention rules (target: snapshot) against a hostile E2B management API written apart from
// the simulator (snapshot-upstream.ts): dry-run by default, every DELETE answer E2B can give, a
// DELETE that never answers in time, a snapshot list that loops, and a snapshot used again
// between the list and the delete. The exporter runs whole (manual cycles, a fake clock shared
// with the server) and is read over its real listener.
import { Writable } from "node:stream";
import { pino } from "pino";
import { Agent } from "undici";
import { afterEach, describe, expect, it } from "vitest";
import { type Exporter, startExporter } from "../../src/app.js";
import { loadConfig } from "../../src/catalog.js";
import { FakeClock } from "../../src/util/clock.js";
import { sampleOf, samples } from "../../tools/exposition.js";
import { SnapshotUpstream } from "./snapshot-upstream.js";

const T0 = Date.parse("2026-11-23T12:00:00Z");
const MIN = 60_000;
const DAY = 86_400_000;
/** The default poll schedule: what the fake clock moves between two manual cycles. */
const INTERVAL = 15_000;
/** Real time a request to the exporter may take before the test gives up on it. */
const HTTP_MS = 5_000;
const RULES_FILE = "rules.yaml";

interface Rig {
  up: SnapshotUpstream;
  clock: FakeClock;
  e: Exporter;
  /** Every line logged, parsed. */
  lines: Array<Record<string, unknown>>;
}

interface PlanEntry {
  rule: string;
  target?: string;
  snapshot?: string;
  sandbox?: string;
  action: string;
  result: string;
  reason: string;
}

let rig: Rig | undefined;

afterEach(async () => {
  await rig?.e.stop();
  await rig?.up.close();
  rig = undefined;
});

/** A platform on `clock`, filled by `setup`, and an exporter (E2B flavor) reading `rules`. */
async function start(
  rules: string,
  setup: (up: SnapshotUpstream) => void,
  argv: string[] = [],
): Promise<Rig> {
  const clock = new FakeClock(T0);
  const up = await new SnapshotUpstream(clock).start();
  setup(up);
  const { config } = loadConfig({
    argv: [
      ...["--listen", "127.0.0.1:0", "--retries", "0", "--flavor", "e2b"],
      ...["--poll-storage", "--policy", RULES_FILE, ...argv],
    ],
    env: { SANDBOX_API_URL: up.url, SANDBOX_API_KEY: "chaos-key" },
  });
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      lines.push(JSON.parse(String(chunk)) as Record<string, unknown>);
      done();
    },
  });
  const e = await startExporter(config, {
    logger: pino({ level: "debug" }, sink),
    clock,
    dispatcher: new Agent(),
    manual: true,
    readFile: (path) => {
      if (path !== RULES_FILE) throw new Error(`ENOENT: ${path}`);
      return rules;
    },
  });
  rig = { up, clock, e, lines };
  return rig;
}

/** `n` manual cycles, the clock moved `stepMs` before each; the policy run ends with each. */
async function cycles(r: Rig, n: number, stepMs = INTERVAL): Promise<void> {
  for (let i = 0; i < n; i++) {
    r.clock.advance(stepMs);
    await r.e.runCycle();
  }
}

async function metrics(r: Rig): Promise<Map<string, number>> {
  const res = await fetch(`${r.e.server.url}/metrics`, { signal: AbortSignal.timeout(HTTP_MS) });
  expect(res.status).toBe(200);
  return samples(await res.text());
}

async function plan(r: Rig): Promise<{ blocked: string | null; plan: PlanEntry[] }> {
  const res = await fetch(`${r.e.server.url}/status`, { signal: AbortSignal.timeout(HTTP_MS) });
  const doc = (await res.json()) as { policy: { blocked: string | null; plan: PlanEntry[] } };
  return doc.policy;
}

function decisions(m: Map<string, number>, rule: string, action: string, result: string) {
  return sampleOf(m, "sandbox_policy_decisions_total", { rule, action, result }) ?? 0;
}

/** The result of the latest run's decision about `snapshot`. */
function resultOf(p: { plan: PlanEntry[] }, snapshot: string): string | undefined {
  return p.plan.find((d) => d.snapshot === snapshot)?.result;
}

/** A rule file: one retention rule `retention` (olderThan 7d unless `condition`), then `extra`. */
const RETENTION = (o: { extra?: string; condition?: string } = {}) => `
maxMatchPercent: 100
rules:
  - name: retention
    target: snapshot
    ${o.condition ?? "olderThan: 7d"}
    action: delete
    allowDelete: true
${o.extra ?? ""}`;

describe("retention rules against a hostile platform", () => {
  it("dry-runs by default: old snapshots planned and counted as dry_run, no DELETE sent", async () => {
    const r = await start(RETENTION(), (up) => {
      up.add({ templateID: "tpl-old-a", ageMs: 10 * DAY });
      up.add({ templateID: "tpl-old-b", ageMs: 12 * DAY, lastSpawnedAgoMs: 9 * DAY });
      up.add({ templateID: "tpl-young", ageMs: DAY });
      // Named: E2B serves no details for it, so its age counts from the first list (now).
      up.add({ templateID: "tpl-named", ageMs: 30 * DAY, names: ["team/nightly"] });
    });
    // consecutiveCycles is 2 by default: the first run holds, the second dry-runs, the third
    // finds them cooling down.
    await cycles(r, 3);
    expect(r.up.seen("DELETE")).toEqual([]);
    // The details were read by raw id; the name was asked, and not found.
    expect(r.up.seen("GET /templates/tpl-old-a")).not.toEqual([]);
    expect(r.up.seen("GET /templates/team%2Fnightly")).not.toEqual([]);
    const m = await metrics(r);
    expect(decisions(m, "retention", "delete", "dry_run")).toBe(2);
    expect(decisions(m, "retention", "delete", "done")).toBe(0);
    expect(sampleOf(m, "sandbox_policy_dry_run", { rule: "retention" })).toBe(1);
    // The run after the dry run: both in their cooldown, nothing else planned.
    const p = await plan(r);
    expect(resultOf(p, "tpl-old-a:default")).toBe("skipped_cooldown");
    expect(resultOf(p, "tpl-old-b:default")).toBe("skipped_cooldown");
    expect(resultOf(p, "tpl-young:default")).toBeUndefined();
    expect(resultOf(p, "team/nightly:default")).toBeUndefined();
    const audit = r.lines.filter((l) => l.audit === true && l.result === "dry_run");
    expect(audit.map((l) => l.snapshot).sort()).toEqual(["tpl-old-a:default", "tpl-old-b:default"]);
  });

  it("shows the dry_run results on /status in the run that plans them", async () => {
    const r = await start(RETENTION(), (up) => {
      up.add({ templateID: "tpl-old-a", ageMs: 10 * DAY });
      up.add({ templateID: "tpl-young", ageMs: DAY });
    });
    await cycles(r, 1);
    expect(resultOf(await plan(r), "tpl-old-a:default")).toBe("pending");
    await cycles(r, 1);
    const p = await plan(r);
    expect(p.blocked).toBeNull();
    const entry = p.plan.find((d) => d.snapshot === "tpl-old-a:default");
    expect(entry).toMatchObject({ target: "snapshot", action: "delete", result: "dry_run" });
    expect(entry?.reason).toMatch(/^age 240h(\d+s)? > 168h/);
    expect(resultOf(p, "tpl-young:default")).toBeUndefined();
    expect(r.up.seen("DELETE")).toEqual([]);
  });

  it("live: 204 done, 404 skipped_gone, 400 skipped_in_use (asked once, then cooling down), 500 failed", async () => {
    const BUSY = "cannot delete template 'tpl-busy' because there are running sandboxes using it";
    const r = await start(
      RETENTION(),
      (up) => {
        // Two days old now: old enough only once the clock has moved 8 days on, when the named
        // one (aged from its first list) is old enough too.
        up.add({ templateID: "tpl-named", ageMs: 2 * DAY, names: ["team/nightly"] });
        up.add({ templateID: "tpl-gone", ageMs: 2 * DAY + MIN });
        up.add({ templateID: "tpl-busy", ageMs: 2 * DAY + 2 * MIN });
        up.add({ templateID: "tpl-broken", ageMs: 2 * DAY + 3 * MIN });
        up.deleteAnswers.set("tpl-gone", { status: 404 });
        up.deleteAnswers.set("tpl-busy", { status: 400, message: BUSY });
        up.deleteAnswers.set("tpl-broken", { status: 500 });
      },
      // The channel's retries on: a DELETE is one attempt whatever it answers.
      ["--policy-dry-run=false", "--retries", "2"],
    );
    await cycles(r, 1);
    await cycles(r, 1, 8 * DAY);
    expect(r.up.seen("DELETE")).toEqual([]);
    await cycles(r, 1);
    // Each asked once; the named one by its name, `/` and `:` encoded as E2B's SDK sends them.
    expect([...r.up.seen("DELETE")].sort()).toEqual([
      "DELETE /templates/team%2Fnightly%3Adefault",
      "DELETE /templates/tpl-broken%3Adefault",
      "DELETE /templates/tpl-busy%3Adefault",
      "DELETE /templates/tpl-gone%3Adefault",
    ]);
    let p = await plan(r);
    expect(resultOf(p, "team/nightly:default")).toBe("done");
    expect(resultOf(p, "tpl-gone:default")).toBe("skipped_gone");
    expect(resultOf(p, "tpl-busy:default")).toBe("skipped_in_use");
    expect(resultOf(p, "tpl-broken:default")).toBe("failed");
    expect(p.plan.find((d) => d.snapshot === "tpl-busy:default")?.reason).toContain(
      "running sandboxes using it",
    );
    let m = await metrics(r);
    for (const [result, n] of [
      ["done", 1],
      ["skipped_gone", 1],
      ["skipped_in_use", 1],
      ["failed", 1],
    ] as const)
      expect(decisions(m, "retention", "delete", result), result).toBe(n);
    const audit = r.lines.filter((l) => l.audit === true);
    expect(audit.find((l) => l.snapshot === "team/nightly:default")).toMatchObject({
      result: "done",
      names: ["team/nightly"],
    });
    expect(audit.find((l) => l.snapshot === "tpl-broken:default")).toMatchObject({
      result: "failed",
      level: 40,
    });

    // The next run: the refused one and the failed one cool down, asked no more.
    await cycles(r, 1);
    expect(r.up.seen("DELETE")).toHaveLength(4);
    p = await plan(r);
    expect(resultOf(p, "tpl-busy:default")).toBe("skipped_cooldown");
    expect(resultOf(p, "tpl-broken:default")).toBe("skipped_cooldown");
    // What went (deleted, or gone) is no longer listed, so no longer decided.
    expect(resultOf(p, "team/nightly:default")).toBeUndefined();
    expect(resultOf(p, "tpl-gone:default")).toBeUndefined();
    m = await metrics(r);
    expect(decisions(m, "retention", "delete", "skipped_in_use")).toBe(1);
    expect(decisions(m, "retention", "delete", "failed")).toBe(1);
  });

  it("a DELETE held past the request timeout fails; the run goes on to the next and ends, /metrics answers", async () => {
    const r = await start(
      RETENTION(),
      (up) => {
        up.add({ templateID: "tpl-slow", ageMs: 20 * DAY });
        up.add({ templateID: "tpl-next", ageMs: 10 * DAY });
        up.deleteAnswers.set("tpl-slow", { hold: true });
      },
      // 1 s: room for the other requests on a loaded machine, far from the 5 s hold.
      ["--policy-dry-run=false", "--timeout", "1s", "--retries", "2"],
    );
    await cycles(r, 1);
    const started = performance.now();
    await cycles(r, 1);
    // The server holds for 5 s: the run ended at the 1 s timeout, not when the server let go.
    expect(performance.now() - started).toBeLessThan(3_000);
    expect(r.up.seen("DELETE")).toEqual([
      "DELETE /templates/tpl-slow%3Adefault",
      "DELETE /templates/tpl-next%3Adefault",
    ]);
    const p = await plan(r);
    const slow = p.plan.find((d) => d.snapshot === "tpl-slow:default");
    expect(slow?.result).toBe("failed");
    expect(slow?.reason).toContain("no response within");
    expect(resultOf(p, "tpl-next:default")).toBe("done");

    await cycles(r, 1);
    const m = await metrics(r);
    expect(decisions(m, "retention", "delete", "failed")).toBe(1);
    expect(decisions(m, "retention", "delete", "done")).toBe(1);
    expect(sampleOf(m, "sandbox_exporter_collect_success", { collector: "storage" })).toBe(1);
    // Cooling down: the slow one is not asked again.
    expect(r.up.seen("DELETE")).toHaveLength(2);
  });

  it("a /snapshots list that loops holds the snapshot rules; the sandbox rule of the same file still decides", async () => {
    const rules = RETENTION({
      extra: `  - name: old-sandboxes
    match: { states: [running] }
    maxAge: 1h
    action: pause
    dryRun: true
`,
      condition: "olderThan: 7d\n    maxActionsPerCycle: 1",
    });
    const r = await start(
      rules,
      (up) => {
        for (let i = 0; i < 6; i++) up.add({ templateID: `tpl-${i}`, ageMs: (10 + i) * DAY });
        for (let i = 0; i < 3; i++)
          up.sandboxes.push({
            sandboxID: `sbx-${i}`,
            templateID: "base",
            startedAt: T0 - 3 * 60 * MIN,
            state: "running",
          });
        up.paging = "sameToken";
      },
      ["--policy-dry-run=false"],
    );
    const blocked = (m: Map<string, number>) =>
      sampleOf(m, "sandbox_policy_blocked_total", { reason: "snapshots_incomplete" });

    // The same next token forever, from the first list on: never a whole list.
    await cycles(r, 4);
    let m = await metrics(r);
    expect(blocked(m)).toBe(4);
    expect(sampleOf(m, "sandbox_exporter_collect_success", { collector: "storage" })).toBe(0);
    expect(decisions(m, "old-sandboxes", "pause", "dry_run")).toBe(3);
    expect(decisions(m, "retention", "delete", "done")).toBe(0);
    expect(r.up.seen("DELETE")).toEqual([]);
    // The run as a whole was not blocked: only the retention rules were held.
    expect((await plan(r)).blocked).toBeNull();

    // Whole again: the rule acts (one a run) after its consecutive cycles.
    r.up.paging = "normal";
    await cycles(r, 2);
    expect(r.up.seen("DELETE")).toEqual(["DELETE /templates/tpl-5%3Adefault"]);
    m = await metrics(r);
    expect(blocked(m)).toBe(4);

    // Then back to an earlier page: the last whole list is still held, and not acted on.
    r.up.paging = "backToEarlier";
    await cycles(r, 3);
    m = await metrics(r);
    expect(blocked(m)).toBe(7);
    expect(r.up.seen("DELETE")).toHaveLength(1);
    expect(decisions(m, "retention", "delete", "done")).toBe(1);
  });

  it("unusedFor: a snapshot spawned from between the list and the delete is skipped_changed, not deleted", async () => {
    const r = await start(
      RETENTION({ condition: "unusedFor: 3d" }),
      (up) => {
        up.add({ templateID: "tpl-stale", ageMs: 30 * DAY, lastSpawnedAgoMs: 5 * DAY });
        up.add({ templateID: "tpl-revived", ageMs: 30 * DAY, lastSpawnedAgoMs: 4 * DAY });
      },
      ["--policy-dry-run=false"],
    );
    await cycles(r, 1);
    expect(resultOf(await plan(r), "tpl-revived:default")).toBe("pending");
    // The acting cycle: a sandbox starts from it as the list is served (its details, read an
    // hour ago at most, still say 4 days).
    r.up.onListPage = () => r.up.spawn("tpl-revived");
    const reads = r.up.seen("GET /templates/tpl-revived").length;
    await cycles(r, 1);
    r.up.onListPage = undefined;
    // Read again before the delete, and left alone.
    expect(r.up.seen("GET /templates/tpl-revived").length).toBe(reads + 1);
    expect(r.up.seen("DELETE")).toEqual(["DELETE /templates/tpl-stale%3Adefault"]);
    const p = await plan(r);
    expect(resultOf(p, "tpl-stale:default")).toBe("done");
    const revived = p.plan.find((d) => d.snapshot === "tpl-revived:default");
    expect(revived?.result).toBe("skipped_changed");
    expect(revived?.reason).toContain("used since the list");
    const m = await metrics(r);
    expect(decisions(m, "retention", "delete", "skipped_changed")).toBe(1);
    expect(decisions(m, "retention", "delete", "done")).toBe(1);
  });
});
