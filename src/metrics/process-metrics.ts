// The standard process_* series (CPU, memory, file descriptors, start time) from prom-client's own
// collectors. collectDefaultMetrics would also start an event-loop monitor and a GC observer and
// emit nodejs_* gauges named `_total`, which `promtool check metrics` rejects; so only these.
import { createRequire } from "node:module";
import type { Registry } from "prom-client";
import { counter, gauge } from "../exposition/descriptor.js";

const require = createRequire(import.meta.url);

/** prom-client's default-metric modules that produce the process_* names (prom-client 15). */
const PROCESS_COLLECTORS = [
  "processCpuTotal",
  "processStartTime",
  "osMemoryHeap",
  "processOpenFileDescriptors",
  "processMaxFileDescriptors",
];

/** Named without the exporter's namespace, as prom-client names them. */
const BARE = { bare: true };
/**
 * The process_* families those collectors register, with prom-client's HELP: prom-client builds
 * them, not these, so only the survey test (test/docs/metric-descriptors.test.ts) keeps them true.
 */
export const PROCESS_FAMILIES = [
  counter("process_cpu_user_seconds_total", "Total user CPU time spent in seconds.", [], BARE),
  counter("process_cpu_system_seconds_total", "Total system CPU time spent in seconds.", [], BARE),
  counter(
    "process_cpu_seconds_total",
    "Total user and system CPU time spent in seconds.",
    [],
    BARE,
  ),
  gauge(
    "process_start_time_seconds",
    "Start time of the process since unix epoch in seconds.",
    [],
    BARE,
  ),
  gauge("process_resident_memory_bytes", "Resident memory size in bytes.", [], BARE),
  gauge("process_virtual_memory_bytes", "Virtual memory size in bytes.", [], BARE),
  gauge("process_heap_bytes", "Process heap size in bytes.", [], BARE),
  gauge("process_open_fds", "Number of open file descriptors.", [], BARE),
  gauge("process_max_fds", "Maximum number of open file descriptors.", [], BARE),
] as const;

type DefaultCollector = (registry: Registry, config: Record<string, never>) => void;

/** Registers process_cpu_*seconds_total, process_*memory_bytes, process_*fds, process_start_time_seconds. */
export function registerProcessMetrics(registry: Registry): void {
  for (const name of PROCESS_COLLECTORS) {
    const collector = require(`prom-client/lib/metrics/${name}`) as DefaultCollector;
    collector(registry, {});
  }
}
