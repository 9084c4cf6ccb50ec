// The demo's fleet under a real Prometheus for a minute and a half, changing every second the way
// a platform does (pauses, resumes, creates, deletes, metadata edits), with per-sandbox series,
// probes and the example policy on: every scrape must parse (up stays 1) and no cycle may fail.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, describe, expect, it, onTestFailed } from "vitest";
import type { Exporter } from "../../src/app.js";
import { type Simulator, startSimulator } from "../../src/simulator/index.js";
import { startDemoLike } from "../helpers/exporter.js";
import { type RunningPrometheus, startPrometheus } from "../helpers/prometheus.js";

const JOB = "sandbox-exporter";
const SOAK_S = 90;
const TEST_TIMEOUT_MS = (SOAK_S + 45) * 1_000;

let sim: Simulator | undefined;
let exporter: Exporter | undefined;
let prom: RunningPrometheus | undefined;
const scratch = mkdtempSync(join(tmpdir(), "demo-soak-"));
const logLines: string[] = [];

afterAll(async () => {
  await prom?.stop();
  await exporter?.stop();
  await sim?.close();
  rmSync(scratch, { recursive: true, force: true });
});

/** One change of the kind a live platform makes, at a pseudo-random sandbox. */
function churn(s: Simulator, step: number): void {
  const ids = s.state.sortedIds();
  const pick = (k: number): string | undefined => ids[(step * 7919 + k * 104_729) % ids.length];
  const a = pick(1);
  const b = pick(2);
  if (a) s.state.setState(a, s.state.sandbox(a)?.state === "running" ? "paused" : "running");
  if (b) {
    const sb = s.state.sandbox(b);
    if (sb) sb.metadata = { ...sb.metadata, team: `team-${step % 5}` };
  }
  if (step % 3 === 0) s.state.addSandbox({});
  const c = pick(3);
  if (step % 4 === 0 && c) s.state.removeSandbox(c);
}

async function query(
  q: string,
): Promise<Array<{ metric: Record<string, string>; value: [number, string] }>> {
  return (
    await prom!.api<{ result: Array<{ metric: Record<string, string>; value: [number, string] }> }>(
      `/api/v1/query?query=${encodeURIComponent(q)}`,
    )
  ).result;
}

describe("the demo's fleet under a real Prometheus", () => {
  it(
    "keeps every scrape valid and every cycle whole while the fleet changes each second",
    async () => {
      onTestFailed(() => {
        console.error(`--- prometheus output ---\n${prom?.output() ?? "(not started)"}`);
        console.error(`--- exporter log (last 40) ---\n${logLines.slice(-40).join("")}`);
      });
      sim = await startSimulator({ sandboxes: 300, templates: 5, nodes: 4, apiKey: "demo-key" });
      sim.faults.route("GET /nodes", { errorRate: 0.05, status: 503 });
      exporter = await startDemoLike(sim, "3s", logLines, ["--metadata-labels", "team"]);
      prom = await startPrometheus({
        job: JOB,
        targets: [new URL(exporter.server.url).host],
        ruleFiles: [],
        interval: "1s",
      });
      // Bounded: one change a second for SOAK_S seconds.
      for (let step = 0; step < SOAK_S; step++) {
        churn(sim, step);
        await sleep(1_000);
      }
      const window = `${SOAK_S - 10}s`;
      const up = await query(`min_over_time(up{job="${JOB}"}[${window}])`);
      const scrapes = await query(`count_over_time(up{job="${JOB}"}[${window}])`);
      expect(up.map((r) => r.value[1])).toEqual(["1"]);
      expect(Number(scrapes[0]?.value[1])).toBeGreaterThan((SOAK_S - 10) / 2);
      // The exposition was read whole: every per-sandbox series of the fleet reached Prometheus.
      const info = await query(`count(sandbox_sandbox_info{job="${JOB}"})`);
      expect(Number(info[0]?.value[1])).toBeGreaterThan(250);
      const walks = await query(
        `min_over_time(sandbox_exporter_collect_success{job="${JOB}",collector="sandboxes"}[${window}])`,
      );
      expect(walks.map((r) => r.value[1])).toEqual(["1"]);
      const cycles = await query(
        `increase(sandbox_exporter_poll_cycles_total{job="${JOB}"}[${window}])`,
      );
      expect(Number(cycles[0]?.value[1])).toBeGreaterThan((SOAK_S - 10) / 2);
      const failed = logLines.filter(
        (l) => l.includes("poll cycle failed") || l.includes("RangeError"),
      );
      expect(failed).toEqual([]);
    },
    TEST_TIMEOUT_MS,
  );
});
