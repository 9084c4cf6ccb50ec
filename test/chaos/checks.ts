// Assertions every chaos case makes after its fault: the exporter still serves, its output is
// valid, the key is nowhere, memory stayed bounded.
import { expect } from "vitest";
import { samples } from "../helpers/exporter.js";
import { promtool } from "../helpers/promtool.js";
import { get, leaks, type Rig, rssMb, statusOf } from "./harness.js";

/** RSS growth allowed over one case, MB (the exporter holds bodies up to its 32 MiB cap). */
export const RSS_BOUND_MB = 300;

/** `name{...}` -> value of one scrape. */
export type Samples = Map<string, number>;

export async function scrapeSamples(rig: Pick<Rig, "e">): Promise<Samples> {
  return samples((await get(rig, "/metrics")).text);
}

/** Sum of every series of `name` (exact family name, any labels). */
export function total(m: Samples, name: string): number {
  let sum = 0;
  for (const [k, v] of m) if (k === name || k.startsWith(`${name}{`)) sum += v;
  return sum;
}

/** Series of `name` whose label text contains every one of `parts`. */
export function series(m: Samples, name: string, ...parts: string[]): number | undefined {
  for (const [k, v] of m)
    if (k.startsWith(`${name}{`) && parts.every((p) => k.includes(p))) return v;
  return undefined;
}

/** /metrics answers 200 in both formats and passes promtool; the key is nowhere; RSS bounded. */
export async function expectHealthyAndSealed(
  rig: Rig,
  rssBefore: number,
  opts: { promtool?: boolean } = {},
): Promise<void> {
  const plain = await get(rig, "/metrics");
  expect.soft(plain.status, "GET /metrics status").toBe(200);
  const om = await get(rig, "/metrics", { accept: "application/openmetrics-text; version=1.0.0" });
  expect.soft(om.status, "GET /metrics (OpenMetrics) status").toBe(200);
  expect.soft((await get(rig, "/healthz")).status, "GET /healthz status").toBe(200);
  if (opts.promtool !== false) {
    const check = promtool(plain.text);
    expect.soft(check.output, "promtool check metrics output").toBe("");
    expect.soft(check.status, "promtool check metrics exit status").toBe(0);
  }
  const crashes = [...rig.log.find("poll cycle failed"), ...rig.log.find("request failed")];
  expect
    .soft(
      crashes.map((c) => String(c.err).slice(0, 300)),
      "cycle or server crashes",
    )
    .toEqual([]);
  const l = await leaks(rig);
  expect
    .soft(
      { logLines: l.logLines, status: l.status, metrics: l.metrics, openMetrics: l.openMetrics },
      `API key printed:\n${l.examples.join("\n")}`,
    )
    .toEqual({ logLines: 0, status: 0, metrics: 0, openMetrics: 0 });
  expect.soft(rig.up.unauthorized, "requests the upstream refused for a wrong key").toBe(0);
  expect.soft(rig.up.apiKeyOnDataPlane, "data-plane requests carrying the API key").toBe(0);
  const grown = rssMb() - rssBefore;
  expect.soft(grown, `RSS grew by ${grown.toFixed(0)} MB`).toBeLessThan(RSS_BOUND_MB);
}

/** One collector failed this cycle with `code` in /status and on /metrics (stale, not success). */
export async function expectCollectorFailed(
  rig: Rig,
  collector: string,
  code: string,
): Promise<void> {
  const m = await scrapeSamples(rig);
  const l = `{collector="${collector}"}`;
  expect.soft(m.get(`sandbox_exporter_collect_success${l}`), `collect_success${l}`).toBe(0);
  expect.soft(m.get(`sandbox_exporter_collect_stale${l}`), `collect_stale${l}`).toBe(1);
  const { doc } = await statusOf(rig);
  const c = doc.collectors[collector];
  expect.soft(c?.success, `/status ${collector}.success`).toBe(false);
  expect.soft(c?.stale, `/status ${collector}.stale`).toBe(true);
  expect.soft(c?.error?.code, `/status ${collector}.error.code (${c?.error?.message})`).toBe(code);
}

/** The request metrics counted a failure of `endpoint` with `reason`. */
export async function expectApiError(
  rig: Rig,
  endpoint: string,
  reason: string,
  method = "GET",
): Promise<void> {
  const m = await scrapeSamples(rig);
  const key = `sandbox_exporter_api_errors_total{endpoint="${endpoint}",method="${method}",reason="${reason}"}`;
  const seen = [...m.keys()].filter((k) => k.startsWith("sandbox_exporter_api_errors_total"));
  expect
    .soft(m.get(key) ?? 0, `${key}; series present: ${seen.join(" ") || "none"}`)
    .toBeGreaterThanOrEqual(1);
}

/** Every collector that runs succeeded in the last cycle. */
export async function expectAllCollectorsOk(rig: Rig, why: string): Promise<void> {
  const { doc } = await statusOf(rig);
  const failed = Object.entries(doc.collectors)
    .filter(([, c]) => !c.success)
    .map(([name, c]) => `${name}: ${c.error?.code} ${c.error?.message}`);
  expect(failed, why).toEqual([]);
}

/** Waits 100 ms between attempts (bounded by `tries`) while failed walks back off. */
const RECOVER_EVERY_MS = 100;

/**
 * Clears the faults and runs cycles until `collector` succeeds again, at most `tries` of them
 * (failed sandbox walks back off for half a poll interval first); whether it recovered.
 */
export async function recover(rig: Rig, collector: string, tries = 20): Promise<boolean> {
  rig.up.clearFaults();
  for (let i = 0; i < tries; i++) {
    await rig.e.runCycle();
    if ((await statusOf(rig)).doc.collectors[collector]?.success) return true;
    await new Promise((r) => setTimeout(r, RECOVER_EVERY_MS));
  }
  return false;
}
