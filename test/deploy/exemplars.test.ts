// End to end: the probe's exemplars reach a real Prometheus 2.42. The exporter runs as the demo
// does, probing every second; Prometheus scrapes it with exemplar storage on (it asks for
// OpenMetrics first, the only format that carries exemplars) and must return, from
// /api/v1/query_exemplars, exemplars naming sandboxes the probe created.
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, describe, expect, it, onTestFailed } from "vitest";
import type { Exporter } from "../../src/app.js";
import { type Simulator, startSimulator } from "../../src/simulator/index.js";
import { startDemoLike } from "../helpers/exporter.js";
import { type RunningPrometheus, startPrometheus } from "../helpers/prometheus.js";

const JOB = "sandbox-exporter";
/** Longest wait for Prometheus to be ready, and then for the first exemplars. */
const READY_MS = 20_000;
const WAIT_MS = 30_000;
const POLL_EVERY_MS = 500;
const TEST_TIMEOUT_MS = READY_MS + WAIT_MS + 20_000;

interface ExemplarSeries {
  seriesLabels: Record<string, string>;
  exemplars: Array<{ labels: Record<string, string>; value: string; timestamp: number }>;
}

let sim: Simulator | undefined;
let exporter: Exporter | undefined;
let prom: RunningPrometheus | undefined;
const logLines: string[] = [];

afterAll(async () => {
  await prom?.stop();
  await exporter?.stop();
  await sim?.close();
});

/** Exemplars Prometheus stored for `query` over the last ten minutes. */
async function exemplars(query: string): Promise<ExemplarSeries[]> {
  const end = Date.now() / 1000;
  const params = new URLSearchParams({ query, start: String(end - 600), end: String(end + 60) });
  const res = await fetch(`${prom!.url}/api/v1/query_exemplars?${params}`);
  const body = (await res.json()) as { status: string; data?: ExemplarSeries[]; error?: string };
  if (body.status !== "success") throw new Error(`query_exemplars ${query}: ${body.error}`);
  return body.data ?? [];
}

/** Polls Prometheus (an external process, so short sleeps) until `query` has exemplars. */
async function untilExemplars(query: string): Promise<ExemplarSeries[]> {
  const deadline = Date.now() + WAIT_MS;
  for (let i = 0; i < WAIT_MS / POLL_EVERY_MS && Date.now() < deadline; i++) {
    const found = await exemplars(query);
    if (found.some((s) => s.exemplars.length > 0)) return found;
    await sleep(POLL_EVERY_MS);
  }
  throw new Error(`no exemplars for ${query} within ${WAIT_MS} ms`);
}

describe("exemplars in Prometheus", () => {
  it(
    "stores the probe sandbox's id and module from the probe histograms' buckets",
    async () => {
      onTestFailed(() => {
        console.error(`--- prometheus output ---\n${prom?.output() ?? "(not started)"}`);
        console.error(`--- exporter log (last 40) ---\n${logLines.slice(-40).join("")}`);
      });
      sim = await startSimulator({ sandboxes: 20, templates: 2, nodes: 2, apiKey: "demo-key" });
      const created = new Set<string>();
      sim.state.onLifecycle((e) => {
        if (e.type === "created") created.add(e.sandbox.sandboxID);
      });
      exporter = await startDemoLike(sim, "1s", logLines);
      prom = await startPrometheus({
        job: JOB,
        targets: [new URL(exporter.server.url).host],
        ruleFiles: [],
        interval: "1s",
        readyTimeoutMs: READY_MS,
        flags: ["--enable-feature=exemplar-storage"],
      });

      for (const family of [
        "sandbox_probe_duration_seconds_bucket",
        "sandbox_probe_stream_latency_seconds_bucket",
      ]) {
        const series = await untilExemplars(`${family}{job="${JOB}"}`);
        const all = series.flatMap((s) =>
          s.exemplars.map((e) => ({ ...e, series: s.seriesLabels })),
        );
        expect(all.length, family).toBeGreaterThan(0);
        for (const e of all) {
          // A sandbox the probe created (the fleet's own sandboxes were there before the hook).
          expect(created, `${family} exemplar ${JSON.stringify(e.labels)}`).toContain(
            e.labels.sandbox_id,
          );
          expect(e.labels.module).toBe("default");
          expect(e.series.__name__).toBe(family);
          // On the bucket the value fell in: at most its upper bound.
          const le = e.series.le === "+Inf" ? Number.POSITIVE_INFINITY : Number(e.series.le);
          expect(Number(e.value)).toBeLessThanOrEqual(le);
          expect(Number(e.value)).toBeGreaterThan(0);
        }
      }
      // Only the two probe histograms carry exemplars.
      const others = await exemplars(
        `{job="${JOB}",__name__!~"sandbox_probe_(duration|stream_latency)_seconds_bucket"}`,
      );
      expect(others.filter((s) => s.exemplars.length > 0)).toEqual([]);
    },
    TEST_TIMEOUT_MS,
  );
});
