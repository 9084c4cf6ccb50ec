// Two builds of the exporter through the latency case in turn (per-sandbox on, a cycle every 3 s
// for 30 s or BENCH_LATENCY_SECONDS, gzip scrapes every 100 ms, as in the full run), for a change
// to the render, its gzip or the scrapes that one full run cannot tell from the machine's spread.
// Builds as for paired-cycles.ts: compiled bench child directories. The order alternates from
// round to round.
// `npx tsx bench/paired-latency.ts <old>/.tmp/bench-build/bench <new>/.tmp/bench-build/bench [rounds]`
import { imageEnv, imageNodeFlags } from "../tools/dockerfile.js";
import { forkChild } from "./ipc.js";
import { type LatencyCase, latencyCase, latencyOptions } from "./latency-case.js";
import { median } from "./scrape-client.js";

const [oldDir, newDir, roundsArg = "3"] = process.argv.slice(2);
if (!oldDir || !newDir)
  throw new Error("usage: paired-latency.ts <old build dir> <new build dir> [rounds]");
// Every child as the image runs the exporter: its ENTRYPOINT's node flags, its ENV.
const nodeFlags = imageNodeFlags();
Object.assign(process.env, imageEnv());
const builds = [
  ["old", oldDir],
  ["new", newDir],
] as const;
const runs: Record<"old" | "new", LatencyCase[]> = { old: [], new: [] };
const sim = await forkChild<{ apiUrl: string }>("bench/sim-child.ts", ["100000"]);
const ms = (v: number) => v.toFixed(1);
try {
  for (let r = 0; r < Number(roundsArg); r++)
    for (const [name, dir] of r % 2 ? [...builds].reverse() : builds) {
      const exporter = { script: `${dir}/exporter-child.js`, nodeFlags: [...nodeFlags] };
      const x = await latencyCase(exporter, sim.ready.apiUrl, latencyOptions());
      runs[name].push(x);
      const d = x.duringCycles;
      console.log(
        `${r} ${name}: during cycles p50 ${ms(d.p50Ms)} p99 ${ms(d.p99Ms)} max ${ms(d.maxMs)} ms; idle p99 ${ms(x.idle.p99Ms)} ms; start to cached ${x.cycleToCachedMs.toFixed(0)} ms, ${x.cycleToCachedVsWalk.toFixed(3)}x the walk`,
      );
    }
  for (const [name, xs] of Object.entries(runs))
    console.log(
      `${name.padEnd(3)} medians of ${xs.length}: p99 during cycles ${ms(median(xs.map((x) => x.duringCycles.p99Ms)))} ms, max ${ms(median(xs.map((x) => x.duringCycles.maxMs)))} ms; start to cached ${median(xs.map((x) => x.cycleToCachedVsWalk)).toFixed(3)}x the walk`,
    );
} finally {
  await sim.stop();
}
