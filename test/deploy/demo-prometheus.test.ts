// `npm run demo -- --prometheus`: a real Prometheus with the shipped rules against the demo, as the
// README offers. Two demos side by side for a minute: the default E2B one (every feature on) keeps
// every alert inactive; the `--faults` one makes SandboxExporterApiErrorRatioHigh pend on /nodes.
// Faults that need more than a minute (orphaned kills) are impossible by construction in the
// default demo: test/simulator/demo-fleet.test.ts.
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, describe, expect, it } from "vitest";
import { output, waitForOutput } from "../helpers/child.js";
import { freePort } from "../helpers/prometheus.js";

/** How long both demos are watched at least once their Prometheus is ready. */
const WATCH_S = 60;
/**
 * How long at most, while the faulty demo's alert has not pended: it needs 10 node-list reads in
 * its window (a read every 5 s), so a loaded machine that starts the demos late takes longer.
 */
const MAX_WATCH_S = 150;
const QUERY_EVERY_MS = 5_000;
const PENDING = "SandboxExporterApiErrorRatioHigh{/nodes} pending";

interface Sample {
  metric: Record<string, string>;
  value: [number, string];
}

interface Demo {
  child: ChildProcess;
  out: () => string;
  prom: string;
}

const started: ChildProcess[] = [];
afterAll(() => {
  for (const c of started) c.kill("SIGKILL");
});

/** Starts the demo with its Prometheus on a free port; resolves once the banner names it. */
async function demo(...args: string[]): Promise<Demo> {
  const port = await freePort();
  const child = spawn(
    process.execPath,
    [
      ...["--import", "tsx", "src/demo.ts", "--listen", "127.0.0.1:0", "--log-format", "json"],
      ...[`--prometheus=127.0.0.1:${port}`, ...args],
    ],
    { env: process.env },
  );
  started.push(child);
  const out = output(child);
  const printed = await waitForOutput(out, (t) => /prometheus:\s+http/.test(t), 900);
  const prom = /prometheus:\s+(http:\/\/\S+)\/alerts/.exec(printed)?.[1];
  if (prom === undefined) throw new Error(`no Prometheus in the banner:\n${printed}`);
  return { child, out, prom };
}

async function query(prom: string, q: string): Promise<Sample[]> {
  const body = (await (
    await fetch(`${prom}/api/v1/query?query=${encodeURIComponent(q)}`)
  ).json()) as { data: { result: Sample[] } };
  return body.data.result;
}

/** `alertname{endpoint} state`: what an alert says, for a readable failure. */
function alertText(s: Sample): string {
  return `${s.metric.alertname}{${s.metric.endpoint ?? s.metric.template ?? ""}} ${s.metric.alertstate}`;
}

describe("npm run demo -- --prometheus", () => {
  it(
    "shows the shipped rules against the demo: none pending by default, one pending with --faults",
    async () => {
      const [healthy, faulty] = await Promise.all([demo("--flavor", "e2b"), demo("--faults")]);
      const seen = { healthy: new Set<string>(), faulty: new Set<string>() };
      // Bounded: one query of each every 5 s for WATCH_S seconds, and on up to MAX_WATCH_S until
      // the faulty demo's alert pends (an external process: sleeps).
      const least = WATCH_S / (QUERY_EVERY_MS / 1000);
      for (let i = 0; i < MAX_WATCH_S / (QUERY_EVERY_MS / 1000); i++) {
        if (i >= least && seen.faulty.has(PENDING)) break;
        for (const s of await query(healthy.prom, "ALERTS")) seen.healthy.add(alertText(s));
        for (const s of await query(faulty.prom, "ALERTS")) seen.faulty.add(alertText(s));
        await sleep(QUERY_EVERY_MS);
      }
      const up = await query(healthy.prom, 'up{job="sandbox-exporter"}');
      expect(up.map((s) => s.value[1])).toEqual(["1"]);
      const rules = (await (await fetch(`${healthy.prom}/api/v1/rules`)).json()) as {
        data: { groups: Array<{ rules: Array<{ name: string; health: string }> }> };
      };
      const all = rules.data.groups.flatMap((g) => g.rules);
      expect(all.length).toBeGreaterThan(50);
      expect(all.filter((r) => r.health === "err")).toEqual([]);
      expect([...seen.healthy]).toEqual([]);
      expect([...seen.faulty]).toContain(PENDING);
      // Ctrl-C stops the exporter, then Prometheus and the simulator: exit 0, Prometheus gone.
      for (const d of [healthy, faulty]) {
        d.child.kill("SIGINT");
        const [code] = await once(d.child, "exit");
        expect(code, d.out()).toBe(0);
        await expect(fetch(`${d.prom}/-/ready`)).rejects.toThrow();
      }
    },
    (MAX_WATCH_S + 75) * 1_000,
  );
});
