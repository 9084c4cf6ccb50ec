import { spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import { describe, expect, it } from "vitest";
import { startSimulator } from "../src/simulator/index.js";
import { output, scrapeThenTerminate, waitForOutput } from "./helpers/child.js";

const TSX = ["node_modules/.bin/tsx", "src/cli.ts"];

describe("sandbox-exporter CLI", () => {
  it("exits 2 with one line per problem naming field and source, never the key", () => {
    const r = spawnSync(TSX[0]!, [TSX[1]!, "--page-limit", "zero", "--timeout", "soon"], {
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

  it("serves /metrics, never logs the key, and exits 0 on SIGTERM", async () => {
    const sim = await startSimulator({ sandboxes: 20, apiKey: "log-secret-key" });
    const child = spawn(TSX[0]!, [TSX[1]!, "--listen", "127.0.0.1:0", "--log-level", "debug"], {
      env: { ...process.env, SANDBOX_API_URL: sim.apiUrl, SANDBOX_API_KEY: "log-secret-key" },
    });
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
      // Bounded wait for the first cycle's policy run (the gauge is 0 until then).
      let text = "";
      const ran = (t: string) => /^sandbox_policy_last_run_timestamp_seconds [1-9]/m.test(t);
      for (let i = 0; i < 100 && !ran(text); i++) {
        text = await (await fetch(`${url}/metrics`)).text();
        if (!ran(text)) await new Promise((r) => setTimeout(r, 100));
      }
      expect(ran(text), text).toBe(true);
      expect(text).toContain("sandbox_platform_up 1");
      expect(text).toMatch(/sandbox_sandbox_info\{/);
      expect(text).toMatch(/sandbox_policy_candidates\{rule="idle-dev"\}/);
      expect(text).toContain("# TYPE sandbox_probe_success gauge");
      const status = (await (await fetch(`${url}/status`)).json()) as {
        policy?: { rules: Array<{ name: string; dryRun: boolean }> };
      };
      expect(status.policy?.rules.map((r) => r.dryRun)).toEqual([true, true, true]);
      child.kill("SIGINT");
      const [code] = await once(child, "exit");
      expect(code).toBe(0);
    } finally {
      child.kill("SIGKILL");
    }
  }, 30_000);
});
