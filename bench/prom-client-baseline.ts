// The prom-client baseline: its own registry rendering the same per-sandbox series. Prints one JSON line.
import { Gauge, Registry } from "prom-client";

const N = Number(process.argv[2] ?? 100_000);
const RUNS = Number(process.argv[3] ?? 5);
const registry = new Registry();
const registers = [registry];
const info = new Gauge({
  name: "sandbox_sandbox_info",
  help: "x",
  labelNames: ["sandbox_id", "template", "state"],
  registers,
});
const start = new Gauge({
  name: "sandbox_sandbox_start_time_seconds",
  help: "x",
  labelNames: ["sandbox_id"],
  registers,
});
const cpus = new Gauge({
  name: "sandbox_sandbox_cpus",
  help: "x",
  labelNames: ["sandbox_id"],
  registers,
});
const mem = new Gauge({
  name: "sandbox_sandbox_memory_bytes",
  help: "x",
  labelNames: ["sandbox_id"],
  registers,
});
for (let i = 0; i < N; i++) {
  const id = `sb${i.toString(36).padStart(18, "0")}`;
  info.labels(id, `tpl${i % 5}`, i % 7 ? "running" : "paused").set(1);
  start.labels(id).set(1_790_000_000 + i);
  cpus.labels(id).set(2);
  mem.labels(id).set(536_870_912);
}
const times: number[] = [];
let bytes = 0;
for (let i = 0; i < RUNS; i++) {
  const t0 = performance.now();
  const text = await registry.metrics();
  times.push(performance.now() - t0);
  bytes = Buffer.byteLength(text);
}
times.sort((a, b) => a - b);
process.stdout.write(
  `${JSON.stringify({ series: N * 4, renderP50Ms: times[Math.floor(RUNS / 2)], renderMaxMs: times[RUNS - 1], bytes })}\n`,
);
