// The exporter under test in its own process: the parent drives cycles and probes over IPC and
// scrapes /metrics over loopback, so this process's RSS and event loop are the exporter's alone.
// Arguments: the simulator's base URL, then exporter flags.
import { readFileSync, writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import { type IntervalHistogram, monitorEventLoopDelay } from "node:perf_hooks";
import { getHeapSpaceStatistics, writeHeapSnapshot } from "node:v8";
import { pino } from "pino";
import { startExporter } from "../src/app.js";
import { loadConfig } from "../src/catalog.js";
import { systemClock } from "../src/util/clock.js";
import { epochMs, memoryMB, serveParent } from "./ipc.js";

const [apiUrl = "", ...flags] = process.argv.slice(2);
const { config } = loadConfig({
  argv: ["--listen", "127.0.0.1:0", ...flags],
  env: { SANDBOX_API_URL: apiUrl },
  readFile: (path) => readFileSync(path, "utf8"),
});
const exporter = await startExporter(config, {
  logger: pino({ level: "silent" }),
  clock: systemClock,
  manual: true,
});
global.gc?.();
const startMemory = memoryMB();
let loopDelay: IntervalHistogram | undefined;
let profiler: Session | undefined;

serveParent(
  { url: exporter.server.url, startMemoryMB: startMemory },
  {
    /**
     * One poll cycle: wall ms, CPU ms (user + system) of this process, the poller's own walk ms,
     * sandboxes and pages; and on the epoch clock its start, its end, and when its exposition
     * (gzip included, once a scraper asked for gzip) was cached.
     */
    cycle: async () => {
      const startAt = epochMs();
      const t0 = performance.now();
      const c0 = process.cpuUsage();
      await exporter.runCycle();
      const ms = performance.now() - t0;
      const cpu = process.cpuUsage(c0);
      const endAt = epochMs();
      await exporter.metrics.settled();
      const settledAt = epochMs();
      const s = exporter.poller.latest;
      return {
        ms,
        cpuMs: (cpu.user + cpu.system) / 1000,
        walkMs: s ? s.finishedAt - s.startedAt : Number.NaN,
        sandboxes: s?.sandboxes?.length ?? 0,
        pages: s?.collectors.sandboxes.requests ?? 0,
        startAt,
        endAt,
        settledAt,
      };
    },
    /** Starts recording this process's event-loop delay (10 ms resolution). */
    loopDelayStart: () => {
      loopDelay = monitorEventLoopDelay({ resolution: 10 });
      loopDelay.enable();
      return {};
    },
    /** Stops recording; the delay percentiles in ms (the timer's resolution included). */
    loopDelayStop: () => {
      const h = loopDelay;
      if (!h) throw new Error("loopDelayStart was not called");
      h.disable();
      loopDelay = undefined;
      const ms = (ns: number) => ns / 1e6;
      return { p50Ms: ms(h.percentile(50)), p99Ms: ms(h.percentile(99)), maxMs: ms(h.max) };
    },
    /** Memory as it is, then after a full GC (what a forced collection gives back). */
    memory: () => {
      const now = memoryMB();
      global.gc?.();
      return { now, afterGc: memoryMB() };
    },
    /** V8 heap spaces in MB, to see where heap memory sits. */
    heapSpaces: () =>
      Object.fromEntries(
        getHeapSpaceStatistics().map((s) => [s.space_name, s.space_used_size / 1048576]),
      ),
    heapSnapshot: (args) => writeHeapSnapshot(String(args.path)),
    /** Starts V8's sampling CPU profiler (every `intervalUs`, default 100 µs). */
    profileStart: async (args) => {
      profiler = new Session();
      profiler.connect();
      await profiler.post("Profiler.enable");
      await profiler.post("Profiler.setSamplingInterval", {
        interval: Number(args.intervalUs ?? 100),
      });
      await profiler.post("Profiler.start");
      return {};
    },
    /** Stops the profiler and writes its .cpuprofile (Chrome DevTools' format) to `path`. */
    profileStop: async (args) => {
      const s = profiler;
      if (!s) throw new Error("profileStart was not called");
      const { profile } = await s.post("Profiler.stop");
      s.disconnect();
      profiler = undefined;
      writeFileSync(String(args.path), JSON.stringify(profile));
      return { path: args.path };
    },
    /** One scheduled-style probe into the exporter's metrics; the result's stream points. */
    probe: async () => {
      const r = await exporter.prober?.runOnce();
      if (!r) throw new Error("no probe ran (probes disabled or one in flight)");
      return {
        success: r.success,
        points: r.stream.points,
        phases: r.phases,
        failures: r.failures,
      };
    },
  },
  () => exporter.stop(),
);
