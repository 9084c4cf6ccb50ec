// The first run as a new user makes it: `npm run demo`, both flavors. In process, the demo's own
// fleet and flags (src/simulator/demo-setup.ts): every landing-page link answers 200, the example
// policy plans a bounded set of dry-run pauses, usage is read, nothing warns. As a process: the
// start-up line is one line naming every collector that runs, the banner names the address it
// listens on, every probe module (http and autoresume too) fills its series, Ctrl-C through
// `npm run demo` exits 0, nothing warns, --help exits.
import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Exporter } from "../../src/app.js";
import { registerDemoWebhook, startDemoSimulator } from "../../src/simulator/demo-setup.js";
import type { Simulator } from "../../src/simulator/index.js";
import { output, waitForOutput } from "../helpers/child.js";
import { startDemoExporter } from "../helpers/demo-exporter.js";
import { samples } from "../helpers/exporter.js";

const TOO_MANY = "policy rule would act on too many sandboxes: acting on none";
/** The example policy's idle-dev rule: at most this many actions a run. */
const IDLE_DEV_PER_RUN = 5;
const CYCLES = 3;
/** The E2B demo's probe modules. */
const PROBE_MODULES = ["quick", "lifecycle", "autopause", "http", "autoresume"];

interface PolicyStatus {
  rules: Array<{ name: string; candidates: number; sample?: { sampled: number; idle: number } }>;
  plan: Array<{ rule: string; result: string }>;
}

describe.each([
  { flavor: "sandboxapi", e2b: false },
  { flavor: "e2b", e2b: true },
])("the $flavor demo, in process", ({ e2b }) => {
  let sim: Simulator;
  let exporter: Exporter;
  const dir = mkdtempSync(join(tmpdir(), "first-run-"));
  const lines: Array<Record<string, unknown>> = [];

  beforeAll(async () => {
    sim = await startDemoSimulator(e2b);
    ({ exporter } = await startDemoExporter(sim, e2b, dir, lines));
    if (e2b) registerDemoWebhook(sim, exporter.server.url);
    // The example policy acts on a sandbox found idle on two fresh snapshots in a row.
    for (let i = 0; i < CYCLES; i++) await exporter.runCycle();
  }, 60_000);

  afterAll(async () => {
    await exporter?.stop();
    await sim?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("logs no warning in its first cycles", () => {
    expect(lines.filter((l) => (l.level as number) >= 40)).toEqual([]);
  });

  it("answers 200 at every link of the landing page", async () => {
    const page = await (await fetch(`${exporter.server.url}/`)).text();
    const links = [...page.matchAll(/href="([^"]+)"/g)].map((m) =>
      (m[1] ?? "").replaceAll("&amp;", "&"),
    );
    expect(links).toEqual(["/metrics", "/status", "/healthz", "/readyz", "/probe?module=quick"]);
    const answers: Record<string, number> = {};
    for (const link of links) answers[link] = (await fetch(`${exporter.server.url}${link}`)).status;
    expect(answers).toEqual(Object.fromEntries(links.map((l) => [l, 200])));
  });

  it("shows the example policy planning a bounded set of dry-run pauses, and nothing too many", async () => {
    const status = (await (await fetch(`${exporter.server.url}/status`)).json()) as {
      policy: PolicyStatus;
    };
    const idleDev = status.policy.rules.find((r) => r.name === "idle-dev");
    expect(idleDev?.candidates).toBeGreaterThan(0);
    // The sample finds some idle, not all: the blast radius lets the rule act.
    expect(idleDev?.sample?.idle).toBeGreaterThan(0);
    expect(idleDev?.sample?.idle).toBeLessThan((idleDev?.sample?.sampled ?? 0) / 2);
    const planned = status.policy.plan.filter(
      (p) => p.rule === "idle-dev" && p.result === "dry_run",
    );
    expect(planned.length).toBeGreaterThan(0);
    expect(planned.length).toBeLessThanOrEqual(IDLE_DEV_PER_RUN * (CYCLES - 1));
    expect(lines.filter((l) => l.msg === TOO_MANY)).toEqual([]);
    // Dry-run: the plan is all there is.
    expect(sim.counters.get("POST /sandboxes/{id}/pause")).toBe(0);
  });

  it("reads resource usage, so the usage panels have data", async () => {
    const text = await (await fetch(`${exporter.server.url}/metrics`)).text();
    const reported = [...samples(text)]
      .filter(([k]) => k.startsWith("sandbox_sandboxes_usage_reported{"))
      .reduce((n, [, v]) => n + v, 0);
    expect(reported).toBeGreaterThan(0);
  });

  it.runIf(e2b)("lists the team's storage: the paused sandboxes' snapshots", async () => {
    const text = await (await fetch(`${exporter.server.url}/metrics`)).text();
    const value = (name: string): number | undefined =>
      [...samples(text)].find(([k]) => k === name || k.startsWith(`${name}{`))?.[1];
    expect(value("sandbox_storage_snapshots")).toBeGreaterThan(0);
    expect(value("sandbox_storage_volumes")).toBeDefined();
  });

  it("meters spend by template, owner and rule against a budget, so the Spend dashboard has data", async () => {
    const text = await (await fetch(`${exporter.server.url}/metrics`)).text();
    const sum = (prefix: string): number =>
      [...samples(text)].filter(([k]) => k.startsWith(prefix)).reduce((n, [, v]) => n + v, 0);
    expect(sum("sandbox_estimated_cost_total{")).toBeGreaterThan(0);
    expect(sum('sandbox_estimated_cost_attributed_total{key="team"')).toBeGreaterThan(0);
    expect(sum('sandbox_cost_budget{period="daily"')).toBeGreaterThan(0);
    expect(sum('sandbox_cost_price{resource="vcpu"')).toBeGreaterThan(0);
    // The example policy's dry-run rule declares its savings series from the start.
    expect(text).toMatch(
      /sandbox_policy_estimated_savings_total\{[^}]*rule="idle-dev"[^}]*mode="dry_run"/,
    );
  });
});

describe("the demo as a process", () => {
  /** node --import tsx, not the tsx binary: the signal must reach the demo process itself. */
  const demo = (...args: string[]) =>
    spawn(process.execPath, ["--import", "tsx", "src/demo.ts", ...args], { env: process.env });

  it("starts with a one-line summary and stops on Ctrl-C without a warning, probes in flight", async () => {
    const child = demo("--flavor", "e2b", "--listen", "127.0.0.1:0", "--log-format", "json");
    const out = output(child);
    try {
      const printed = await waitForOutput(out, (t) => /metrics:\s+http/.test(t), 400);
      // --listen goes on to the exporter: the demo's port moved off 9464.
      expect(printed).toMatch(/metrics:\s+http:\/\/127\.0\.0\.1:\d+\/metrics/);
      expect(printed).not.toMatch(/metrics:\s+\S+:9464\//);
      // The banner names the address it listens on, not the default.
      const host = /metrics:\s+http:\/\/(\S+)\/metrics/.exec(printed)?.[1];
      expect(printed).toContain(`The exporter listens on ${host} `);
      expect(printed).not.toContain("9464");
      // At once: the start-up probes are still running, the simulator must outlive them.
      child.kill("SIGINT");
      const [code] = await once(child, "exit");
      expect(code, out()).toBe(0);
      const logged = out()
        .split("\n")
        .filter((l) => l.startsWith("{"))
        .map(
          (l) => JSON.parse(l) as { level: number; msg: string; config?: unknown; policy?: string },
        );
      const starting = logged.find((l) => l.msg === "starting");
      expect(starting).toMatchObject({
        flavor: "e2b",
        probe: "quick,lifecycle,autopause,http,autoresume",
        optIn: "templateBuilds,events,teamMetrics,storage,usage",
      });
      expect(starting?.policy).toMatch(/example\.yaml \(dry-run\)$/);
      // One line of scalars, also in pretty logs; the whole configuration is at debug.
      for (const v of Object.values(starting ?? {})) expect(typeof v).not.toBe("object");
      expect(starting?.config).toBeUndefined();
      expect(JSON.stringify(starting).length).toBeLessThan(600);
      const stop = logged.findIndex((l) => l.msg === "shutting down");
      expect(stop).toBeGreaterThanOrEqual(0);
      const warnings = logged.slice(stop).filter((l) => l.level >= 40);
      expect(warnings, out()).toEqual([]);
    } finally {
      child.kill("SIGKILL");
    }
  }, 60_000);

  it("fills every probe module's series without a warning, and exits 0 on Ctrl-C through npm run demo", async () => {
    // As a terminal's Ctrl-C: SIGINT to the whole process group (npm, its shell, tsx, the demo).
    const child = spawn(
      "npm",
      ["run", "demo", "--", "--flavor", "e2b", "--listen", "127.0.0.1:0", "--log-format", "json"],
      { env: process.env, detached: true },
    );
    const out = output(child);
    const group = (signal: NodeJS.Signals): void => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, signal);
      } catch {
        // Already gone.
      }
    };
    try {
      const printed = await waitForOutput(out, (t) => /metrics:\s+http/.test(t), 600);
      const url = /metrics:\s+(http:\S+)\/metrics/.exec(printed)?.[1];
      expect(url, printed).toBeDefined();
      // Bounded: every module runs once at start; autopause waits out a 5 s timeout.
      const filled = (t: string) =>
        PROBE_MODULES.every((m) =>
          new RegExp(`^sandbox_probe_success\\{module="${m}",[^}]*\\} 1$`, "m").test(t),
        ) &&
        /^sandbox_probe_http_duration_seconds\{module="http",[^}]*point="total"\} /m.test(t) &&
        /^sandbox_probe_wake_seconds_count\{module="autoresume",[^}]*\} [1-9]/m.test(t);
      let text = "";
      for (let i = 0; i < 120 && !filled(text); i++) {
        text = await (await fetch(`${url}/metrics`)).text();
        if (!filled(text)) await new Promise((r) => setTimeout(r, 250));
      }
      expect(filled(text), text).toBe(true);
      group("SIGINT");
      const [code] = await once(child, "exit");
      expect(code, out()).toBe(0);
      const warnings = out()
        .split("\n")
        .filter((l) => l.startsWith("{"))
        .map((l) => JSON.parse(l) as { level: number; msg: string })
        .filter((l) => l.level >= 40);
      expect(warnings, out()).toEqual([]);
    } finally {
      group("SIGKILL");
    }
  }, 90_000);

  it("says how to move the port when it is taken, and exits 1", async () => {
    const taken = createServer();
    await new Promise<void>((r) => taken.listen(0, "127.0.0.1", r));
    const port = (taken.address() as AddressInfo).port;
    const child = demo("--listen", `127.0.0.1:${port}`, "--log-format", "json");
    const out = output(child);
    try {
      const [code] = await once(child, "exit");
      expect(code, out()).toBe(1);
      expect(out()).toContain("pick another with --listen");
    } finally {
      child.kill("SIGKILL");
      taken.close();
    }
  }, 60_000);

  it("exits after --help instead of keeping the simulator running", async () => {
    const child = demo("--help");
    const out = output(child);
    try {
      const exited = once(child, "exit").then(([code]) => code as number | null);
      const hung = new Promise<"hung">((r) => setTimeout(() => r("hung"), 20_000).unref());
      expect(await Promise.race([exited, hung])).toBe(0);
      expect(out()).toContain("--listen");
    } finally {
      child.kill("SIGKILL");
    }
  }, 30_000);
});
