// A simulator on loopback plus the clients and prober a probe test needs, on a shared fake clock.
import { Registry } from "prom-client";
import { Agent } from "undici";
import type { ControlClient } from "../../src/platform/control/control.js";
import { DataClient } from "../../src/platform/data/data.js";
import { PROBE_TAG_KEY } from "../../src/platform/types.js";
import { ProbeSchema } from "../../src/probe/probe-settings.js";
import { Prober, type ProberOptions } from "../../src/probe/prober.js";
import { type Simulator, startSimulator } from "../../src/simulator/index.js";
import { FakeClock } from "../../src/util/clock.js";
import { testControl } from "../helpers/control.js";

/** Everything a probe test works with. */
export interface ProbeBed {
  sim: Simulator;
  clock: FakeClock;
  control: ControlClient;
  data: DataClient;
  template: string;
  close(): Promise<void>;
}

export const INSTANCE = "test-probe";
/** Fixed wall-clock start, so ages and timestamps are exact. */
export const T0 = Date.UTC(2025, 0, 1);

/**
 * Starts a simulator (this platform's API, or E2B's with `flavor: "e2b"`) and clients that reach it
 * directly (no proxy) over 127.0.0.1.
 */
export async function probeBed(o: { flavor?: "e2b" } = {}): Promise<ProbeBed> {
  const clock = new FakeClock(T0);
  const sim = await startSimulator({ sandboxes: 3, clock, ...(o.flavor && { flavor: o.flavor }) });
  const control = testControl({
    apiUrl: sim.apiUrl,
    ...(o.flavor === "e2b" && { apiPrefix: "", flavor: "e2b" as const }),
    clock,
    dispatcher: new Agent(),
  });
  const data = new DataClient({
    sandboxDomain: sim.domain,
    proxyScheme: "http",
    proxyNodeIp: "127.0.0.1",
    proxyPortHttp: sim.dataPort,
    agentPort: 49_983,
    timeoutMs: 5_000,
  });
  const template = sim.state.templates.find((t) => t.status === "ready")!.templateID;
  return {
    sim,
    clock,
    control,
    data,
    template,
    async close() {
      await control.close();
      await data.close();
      await sim.close();
    },
  };
}

/** The default module's step settings, as the config fills them in (their one default). */
export function stepDefaults(): Pick<
  ProberOptions,
  "steps" | "lifecycleRounds" | "autoPauseTimeoutMs" | "http"
> {
  const m = ProbeSchema.parse({}).modules[0]!;
  return {
    steps: m.steps,
    lifecycleRounds: m.lifecycleRounds,
    autoPauseTimeoutMs: m.autoPauseTimeoutMs,
    http: m.http,
  };
}

/** A manual prober (no schedule, no run at start) against the bed. */
export function proberFor(
  bed: ProbeBed,
  extra: Partial<ProberOptions> = {},
): { prober: Prober; registry: Registry } {
  const registry = extra.registry ?? new Registry();
  const prober = new Prober({
    control: bed.control,
    data: bed.data,
    registry,
    clock: bed.clock,
    namespace: "sandbox",
    instance: INSTANCE,
    template: bed.template,
    command: "echo {nonce}",
    filePath: "/tmp/sandbox-exporter-probe.txt",
    schedule: null,
    runAtStart: false,
    phaseTimeoutMs: 5_000,
    totalTimeoutMs: 10_000,
    ...stepDefaults(),
    ...extra,
  });
  return { prober, registry };
}

/** Ids of the simulator's sandboxes carrying a probe tag (any instance). */
export function probeSandboxes(sim: Simulator): string[] {
  return [...sim.state.sandboxes.values()]
    .filter((s) => s.metadata[PROBE_TAG_KEY] !== undefined)
    .map((s) => s.sandboxID);
}

/** The value of one series of a registry, undefined when absent. */
export async function seriesValue(
  registry: Registry,
  name: string,
  labels: Record<string, string> = {},
): Promise<number | undefined> {
  for (const m of await registry.getMetricsAsJSON()) {
    for (const v of m.values) {
      const series = (v as { metricName?: string }).metricName ?? m.name;
      if (series !== name) continue;
      if (Object.entries(labels).every(([k, want]) => String(v.labels[k]) === want)) return v.value;
    }
  }
  return undefined;
}
