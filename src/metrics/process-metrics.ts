// The standard process_* series. prom-client's collectDefaultMetrics also emits nodejs_*_total
// gauges that `promtool check metrics` rejects, so the few that operators use are declared here.
import { Counter, Gauge, type Registry } from "prom-client";

/** Registers process_cpu_seconds_total, process_resident_memory_bytes, heap and start time. */
export function registerProcessMetrics(registry: Registry, startTimeSeconds: number): void {
  const registers = [registry];
  new Counter({
    name: "process_cpu_seconds_total",
    help: "Total user and system CPU time spent in seconds.",
    registers,
    collect() {
      const u = process.cpuUsage();
      this.reset();
      this.inc((u.user + u.system) / 1e6);
    },
  });
  new Gauge({
    name: "process_resident_memory_bytes",
    help: "Resident memory size in bytes.",
    registers,
    collect() {
      this.set(process.memoryUsage.rss());
    },
  });
  new Gauge({
    name: "process_heap_bytes",
    help: "V8 heap in use, bytes.",
    registers,
    collect() {
      this.set(process.memoryUsage().heapUsed);
    },
  });
  new Gauge({
    name: "process_start_time_seconds",
    help: "Start time of the process since unix epoch in seconds.",
    registers,
  }).set(startTimeSeconds);
}
