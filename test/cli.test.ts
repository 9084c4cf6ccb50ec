import { spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { loadConfig } from "../src/catalog.js";
import { startupSummary } from "../src/cli.js";
import { loadPolicySpec } from "../src/policy/policy-file.js";
import { dataPlaneFlags, startSimulator } from "../src/simulator/index.js";
import { listenerUrl, output, scrapeThenTerminate, waitForOutput } from "./helpers/child.js";

// node itself, not the tsx binary: a SIGKILL to tsx would leave its node child running.
const TSX = [process.execPath, "--import", "tsx", "src/cli.ts"];

const dir = mkdtempSync(join(tmpdir(), "sandbox-exporter-cli-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Writes `text` to a file of that name in the test's directory and returns its path. */
function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

/** Nine levels of nine aliases each: 9^9 strings once expanded ("billion laughs"). */
const ALIAS_BOMB = Array.from({ length: 9 }, (_, i) => {
  const items = i === 0 ? Array(9).fill('"lol"') : Array(9).fill(`*l${i - 1}`);
  return `l${i}: &l${i} [${items.join(", ")}]`;
}).join("\n");

/** Runs the CLI to its exit with a platform URL that is never reached. */
function runCli(args: string[]) {
  return spawnSync(TSX[0]!, [...TSX.slice(1), "--listen", "127.0.0.1:0", ...args], {
    env: { ...process.env, SANDBOX_API_URL: "http://127.0.0.1:1", SANDBOX_API_KEY: "k" },
    encoding: "utf8",
    timeout: 60_000,
  });
}

describe("sandbox-exporter CLI", () => {
  it("exits 2 with one line per problem naming field and source, never the key", () => {
    const r = spawnSync(TSX[0]!, [...TSX.slice(1), "--page-limit", "zero", "--timeout", "soon"], {
      env: {
        ...process.env,
        SANDBOX_API_URL: "http://127.0.0.1:1",
        SANDBOX_API_KEY: "super-secret-key",
        SANDBOX_EXPORTER_PROXY_SCHEME: "ftp",
      },
      encoding: "utf8",
    });
    expect(r.status).toBe(2);
    const lines = r.stderr.trim().split("\n").slice(1);
    expect(lines).toHaveLength(3);
    expect(r.stderr).toContain("poll.pageLimit (flag --page-limit)");
    expect(r.stderr).toContain("platform.proxyScheme (env SANDBOX_EXPORTER_PROXY_SCHEME)");
    expect(r.stderr + r.stdout).not.toContain("super-secret-key");
  });

  it.each([
    ["--config", "an alias bomb", "bomb.yaml", ALIAS_BOMB],
    ["--policy", "an alias bomb", "bomb.yaml", ALIAS_BOMB],
    ["--config", "an empty file", "empty.yaml", ""],
    ["--policy", "an empty file", "empty.yaml", ""],
    ["--config", "a file of comments only", "comments.yaml", "# poll:\n#   pageLimit: 5\n"],
    ["--policy", "a file of comments only", "comments.yaml", "# rules: []\n"],
    ["--config", "a syntax error", "syntax.yaml", "poll: {pageLimit: 5\n"],
    ["--policy", "a syntax error", "syntax.yaml", "rules:\n  - name: [x\n"],
  ])("exits 2 naming the file for %s with %s", (flag, _what, name, text) => {
    const path = file(`${flag.slice(2)}-${name}`, text);
    const r = runCli([flag, path]);
    expect(r.status, r.stderr).toBe(2);
    const [heading, ...problems] = r.stderr.trim().split("\n");
    expect(heading).toMatch(/^sandbox-exporter: invalid (configuration|policy)$/);
    expect(problems.join("\n")).toContain(path);
  });

  it("exits 2 for a config file that never ends, without reading it all", () => {
    const r = runCli(["--config", "/dev/zero"]);
    expect(r.status, r.stderr).toBe(2);
    expect(r.stderr).toContain("(config file) (file /dev/zero): expected a readable file");
  });

  it("answers POST /-/reload only with --web.enable-lifecycle (SIGHUP always), and warns about an open /probe", async () => {
    const sim = await startSimulator({ sandboxes: 5 });
    const start = (extra: string[]) => {
      // node --import tsx, not the tsx binary: SIGHUP must reach the exporter itself.
      const child = spawn(
        process.execPath,
        [
          ...["--import", "tsx", "src/cli.ts"],
          ...["--listen", "0.0.0.0:0", "--log-level", "debug", "--probe"],
          ...dataPlaneFlags(sim.dataPort),
          ...extra,
        ],
        { env: { ...process.env, SANDBOX_API_URL: sim.apiUrl, SANDBOX_DOMAIN: sim.domain } },
      );
      return { child, out: output(child) };
    };
    const plain = start([]);
    const lifecycle = start(["--web.enable-lifecycle"]);
    try {
      for (const { out } of [plain, lifecycle]) {
        const url = await listenerUrl(out);
        expect(url, out()).toBeDefined();
      }
      const port = (out: () => string) => /"url":"http:\/\/[^"]*:(\d+)"/.exec(out())?.[1];
      const reload = (out: () => string) =>
        fetch(`http://127.0.0.1:${port(out)}/-/reload`, { method: "POST" });
      const refused = await reload(plain.out);
      expect(refused.status).toBe(403);
      expect(await refused.text()).toBe("Lifecycle API is not enabled.");
      expect(plain.out()).not.toContain("configuration reloaded");
      expect((await reload(lifecycle.out)).status).toBe(200);
      const reloaded = (t: string) => t.includes("configuration reloaded");
      expect(reloaded(await waitForOutput(lifecycle.out, reloaded))).toBe(true);
      expect(plain.out()).toMatch(/"level":40.*reachable beyond loopback without authentication/);
      plain.child.kill("SIGHUP");
      expect(reloaded(await waitForOutput(plain.out, reloaded))).toBe(true);
    } finally {
      plain.child.kill("SIGKILL");
      lifecycle.child.kill("SIGKILL");
      await sim.close();
    }
  }, 30_000);

  it("serves /metrics, never logs the key, and exits 0 on SIGTERM", async () => {
    const sim = await startSimulator({ sandboxes: 20, apiKey: "log-secret-key" });
    const child = spawn(
      TSX[0]!,
      [...TSX.slice(1), "--listen", "127.0.0.1:0", "--log-level", "debug"],
      {
        env: { ...process.env, SANDBOX_API_URL: sim.apiUrl, SANDBOX_API_KEY: "log-secret-key" },
      },
    );
    const out = output(child);
    try {
      await scrapeThenTerminate(child, out);
      expect(out()).toContain('"apiKey":"***"');
      expect(out()).not.toContain("log-secret-key");
    } finally {
      child.kill("SIGKILL");
      await sim.close();
    }
  });

  it("runs the demo: simulator and exporter with probes and the example policy, exit 0 on SIGINT", async () => {
    // node --import tsx, not the tsx binary: the signal must reach the demo process itself.
    const child = spawn(
      process.execPath,
      ["--import", "tsx", "src/demo.ts", "--listen", "127.0.0.1:0", "--log-format", "json"],
      { env: process.env },
    );
    const out = output(child);
    try {
      const printed = await waitForOutput(out, (t) => /metrics:\s+http/.test(t), 300);
      const url = /metrics:\s+(http:\S+)\/metrics/.exec(printed)?.[1];
      expect(url, printed).toBeDefined();
      // Bounded wait for the first cycle's policy run (the gauge is 0 until then) and the first
      // run of both probe modules, the quick one and the pause/resume one.
      let text = "";
      const ran = (t: string) =>
        /^sandbox_policy_last_run_timestamp_seconds [1-9]/m.test(t) &&
        /^sandbox_probe_success\{module="quick",template="base"\} 1$/m.test(t) &&
        /^sandbox_probe_success\{module="lifecycle",template="base"\} 1$/m.test(t);
      for (let i = 0; i < 100 && !ran(text); i++) {
        text = await (await fetch(`${url}/metrics`)).text();
        if (!ran(text)) await new Promise((r) => setTimeout(r, 100));
      }
      expect(ran(text), text).toBe(true);
      expect(text).toContain("sandbox_platform_up 1");
      expect(text).toMatch(/sandbox_sandbox_info\{/);
      expect(text).toMatch(/sandbox_policy_candidates\{rule="idle-dev"\}/);
      expect(text).toMatch(
        /^sandbox_probe_phase_duration_seconds\{module="lifecycle",[^}]*phase="resume"\} /m,
      );
      const status = (await (await fetch(`${url}/status`)).json()) as {
        policy?: { rules: Array<{ name: string; dryRun: boolean }> };
        probe?: { modules: Array<{ module: string }> };
      };
      expect(status.probe?.modules.map((m) => m.module)).toEqual(["quick", "lifecycle", "http"]);
      expect(status.policy?.rules.map((r) => r.dryRun)).toEqual([true, true, true, true, true]);
      child.kill("SIGINT");
      const [code] = await once(child, "exit");
      expect(code).toBe(0);
    } finally {
      child.kill("SIGKILL");
    }
    // Above its own bounded waits (banner 15 s, first runs 10 s and more) and a cold tsx start.
  }, 90_000);

  it("names every opt-in collector on in its start-up line, storage too, and says the rules act when the file says dryRun: false", async () => {
    const sim = await startSimulator({ sandboxes: 5 });
    const rules = file(
      "acting.yaml",
      "dryRun: false\nrules:\n  - name: old\n    match: {states: [running]}\n    maxAge: 2d\n    action: log\n",
    );
    const child = spawn(
      TSX[0]!,
      [
        ...TSX.slice(1),
        "--listen",
        "127.0.0.1:0",
        "--poll-storage",
        "--poll-events",
        "--policy",
        rules,
      ],
      { env: { ...process.env, SANDBOX_API_URL: sim.apiUrl } },
    );
    const out = output(child);
    try {
      const printed = await waitForOutput(out, (t) => t.includes('"msg":"starting"'));
      const line = printed.split("\n").find((l) => l.includes('"msg":"starting"'));
      const starting = JSON.parse(line ?? "{}") as { optIn?: string; policy?: string };
      expect(starting.optIn).toBe("events,storage");
      expect(starting.policy).toBe(`${rules} (acting)`);
    } finally {
      child.kill("SIGKILL");
      await sim.close();
    }
  });

  it("says which rules act in the start-up line, from the effective rule set", () => {
    const rules = file(
      "mixed.yaml",
      [
        "rules:",
        "  - {name: planned, match: {states: [running]}, maxAge: 2d, action: log}",
        "  - {name: acts, match: {states: [running]}, maxAge: 2d, action: log, dryRun: false}",
        "",
      ].join("\n"),
    );
    const summary = (argv: string[]) => {
      const { config } = loadConfig({
        argv: ["--api-url", "http://127.0.0.1:1", "--policy", rules, ...argv],
        env: {},
        readFile: (path) => readFileSync(path, "utf8"),
      });
      return startupSummary(
        config,
        loadPolicySpec(config.policy, (p) => readFileSync(p, "utf8")),
      );
    };
    expect(summary([]).policy).toBe(`${rules} (acting: acts)`);
    expect(summary(["--policy-dry-run=false"]).policy).toBe(`${rules} (acting)`);
    expect(summary(["--poll-usage", "--poll-template-builds"]).optIn).toBe("templateBuilds,usage");
  });

  it("counts retention rules in the start-up line: whether they act, and the storage they read", () => {
    const rules = file(
      "retention.yaml",
      [
        "rules:",
        "  - {name: planned, match: {states: [running]}, maxAge: 2d, action: log}",
        "  - {name: reaper, target: snapshot, olderThan: 30d, action: delete, allowDelete: true, dryRun: false}",
        "",
      ].join("\n"),
    );
    const { config } = loadConfig({
      argv: ["--api-url", "http://127.0.0.1:1", "--policy", rules],
      env: {},
      readFile: (path) => readFileSync(path, "utf8"),
    });
    const line = startupSummary(
      config,
      loadPolicySpec(config.policy, (p) => readFileSync(p, "utf8")),
    );
    expect(line.policy).toBe(`${rules} (acting: reaper)`);
    expect(line.optIn).toBe("storage");
  });
});
