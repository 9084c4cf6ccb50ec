// Two builds of the exporter measured in turn, for a change too small for one full run to show:
// one simulator, the bare loop, then the old and the new exporter child polled one after the other
// in every round; medians of the rounds' process CPU and wall time. Each build is a compiled bench
// child directory (`npx tsc -p bench/tsconfig.child.json` in each checkout, then copy package.json
// into its .tmp/bench-build/).
// `npx tsx bench/paired-cycles.ts <old>/.tmp/bench-build/bench <new>/.tmp/bench-build/bench [id|started] [off|on] [rounds]`
import { imageEnv, imageNodeFlags } from "../tools/dockerfile.js";
import { LIFTED_BUDGET } from "./exporter-case.js";
import { forkChild } from "./ipc.js";
import { median } from "./scrape-client.js";

const [oldDir, newDir, order = "started", mode = "off", roundsArg = "11"] = process.argv.slice(2);
if (!oldDir || !newDir)
  throw new Error(
    "usage: paired-cycles.ts <old build dir> <new build dir> [id|started] [off|on] [rounds]",
  );
const WARM = 2;
// Every child as the image runs the exporter: its ENTRYPOINT's node flags, its ENV.
const flags = imageNodeFlags();
Object.assign(process.env, imageEnv());
const perSandbox =
  mode === "on" ? ["--per-sandbox-metrics", "--max-sandbox-series", "1000000"] : [];
const sim = await forkChild<{ apiUrl: string }>("bench/sim-child.ts", ["100000", order]);
const args = [sim.ready.apiUrl, "--page-limit", "100", ...LIFTED_BUDGET, ...perSandbox];
const bare = await forkChild(`${newDir}/bare-loop-child.js`, [sim.ready.apiUrl], flags);
const old = await forkChild(`${oldDir}/exporter-child.js`, args, flags);
const fresh = await forkChild(`${newDir}/exporter-child.js`, args, flags);
type Run = { ms: number; cpuMs: number };
const runs: Record<"bare" | "old" | "new", Run[]> = { bare: [], old: [], new: [] };
try {
  for (let r = 0; r < WARM + Number(roundsArg); r++) {
    const b = await bare.call<Run>("run");
    const o = await old.call<Run>("cycle");
    const n = await fresh.call<Run>("cycle");
    if (r < WARM) continue;
    runs.bare.push(b);
    runs.old.push(o);
    runs.new.push(n);
  }
  for (const [name, rs] of Object.entries(runs))
    console.log(
      `${name.padEnd(5)} wall ${median(rs.map((x) => x.ms)).toFixed(0)} ms, CPU ${median(rs.map((x) => x.cpuMs)).toFixed(0)} ms`,
    );
  for (const [name, child] of [
    ["old", old],
    ["new", fresh],
  ] as const) {
    const m = await child.call<{ now: { rss: number } }>("memory");
    console.log(`${name} RSS ${m.now.rss.toFixed(0)} MB`);
  }
} finally {
  for (const c of [bare, old, fresh, sim]) await c.stop();
}
