// Hand-built snapshots more than one metrics test renders: a small cluster, and the same with the
// usage collector's data (the unit tests read its lines, test/promtool/ runs promtool on it).
import type { CollectorStatus, Snapshot, UsageData } from "../../src/collect/snapshot.js";
import type { SandboxUsage } from "../../src/platform/types.js";
import { metricsWith, sandbox, scrapeText, snapshot, T0 } from "./fixtures.js";

/** A small cluster: every kind of data once. */
export function small() {
  return snapshot({
    health: { up: true, status: "ok" },
    overview: { numeric: { node_count: 2, memory_mb: 1024 } },
    nodes: [{ id: "n1", status: "ready", numeric: { cpu_count: 8 }, info: { version: "1.0" } }],
    templates: [
      {
        id: "base",
        status: "ready",
        version: "v2",
        replicas: 3,
        numeric: { spawn_count: 7 },
        info: {},
      },
    ],
    sandboxes: [
      sandbox("a", { metadata: { team: "ml", secret: "s3cr3t" }, endAt: T0 + 120_000 }),
      sandbox("b", { state: "paused", startedAt: T0 - 120_500, cpuCount: 4, memoryMB: 256 }),
    ],
  });
}

/** One usage sample of a 2-CPU sandbox at `cpuPct` percent, 1 MiB memory and 2 MiB disk used. */
export function usageSample(cpuPct: number): SandboxUsage {
  return {
    at: T0,
    cpuPct,
    cpuCount: 2,
    memUsedBytes: 1_048_576,
    memTotalBytes: undefined,
    diskUsedBytes: 2_097_152,
    diskTotalBytes: undefined,
  };
}

/** The usage collector's status: succeeded at T0 in 500 ms unless overridden. */
export function usageStatus(over: Partial<CollectorStatus> = {}): CollectorStatus {
  return {
    name: "usage",
    success: true,
    stale: false,
    lastAttemptAt: T0,
    lastSuccessAt: T0,
    durationMs: 500,
    requests: 1,
    ...over,
  };
}

/** small() with the usage collector's data and status. */
export function withUsage(usage: UsageData & { status: CollectorStatus }): Snapshot {
  const base = small();
  const { status: usageStatus, ...data } = usage;
  return {
    ...base,
    usage: data,
    refreshed: [...base.refreshed, "usage"],
    collectors: { ...base.collectors, usage: usageStatus },
  };
}

/** The text body of small() with usage for sandbox "a" (50% CPU), per-sandbox series on. */
export async function usageText(): Promise<string> {
  const { metrics } = metricsWith({ perSandboxMetrics: true });
  metrics.update(withUsage({ samples: new Map([["a", usageSample(50)]]), status: usageStatus() }));
  return scrapeText(metrics);
}

/**
 * The text body after two cycles with a 1 MB `team` label value on sandbox "a" (label values cut
 * at 1,024 characters, per-sandbox series on): the second render reuses the first one's bytes
 * and must count the cut value again.
 */
export async function hugeLabelText(): Promise<string> {
  const { metrics } = metricsWith({
    perSandboxMetrics: true,
    metadataLabels: ["team"],
    maxLabelValueLength: 1_024,
  });
  const huge = "v".repeat(1_048_576);
  for (const cycle of [1, 2])
    metrics.update(
      snapshot({ cycle, sandboxes: [sandbox("a", { metadata: { team: huge } }), sandbox("b")] }),
    );
  return scrapeText(metrics);
}
