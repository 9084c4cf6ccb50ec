// The standard process_* series (CPU, memory, file descriptors, start time) from prom-client's own
// collectors. collectDefaultMetrics would also start an event-loop monitor and a GC observer and
// emit nodejs_* gauges named `_total`, which `promtool check metrics` rejects; so only these.
import { createRequire } from "node:module";
import type { Registry } from "prom-client";

const require = createRequire(import.meta.url);

/** prom-client's default-metric modules that produce the process_* names (prom-client 15). */
const PROCESS_COLLECTORS = [
  "processCpuTotal",
  "processStartTime",
  "osMemoryHeap",
  "processOpenFileDescriptors",
  "processMaxFileDescriptors",
];

type DefaultCollector = (registry: Registry, config: Record<string, never>) => void;

/** Registers process_cpu_*seconds_total, process_*memory_bytes, process_*fds, process_start_time_seconds. */
export function registerProcessMetrics(registry: Registry): void {
  for (const name of PROCESS_COLLECTORS) {
    const collector = require(`prom-client/lib/metrics/${name}`) as DefaultCollector;
    collector(registry, {});
  }
}
