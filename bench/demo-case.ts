// How long `npm run demo` takes from start to the first /metrics answer (the demo on an
// ephemeral port; the same process `npm run demo` starts, minus npm's own start-up).
import { spawn } from "node:child_process";
import { once } from "node:events";
import { median } from "./scrape-client.js";

const RUNS = 3;
const DEADLINE_MS = 30_000;

/** Milliseconds from spawn to the first 200 from /metrics, per run. */
export interface DemoStartup {
  runs: number[];
  medianMs: number;
  maxMs: number;
}

async function startOnce(): Promise<number> {
  const t0 = performance.now();
  const child = spawn(process.execPath, [
    "--import",
    "tsx",
    "src/demo.ts",
    "--listen",
    "127.0.0.1:0",
    "--log-level",
    "warn",
  ]);
  let out = "";
  child.stdout.on("data", (d: Buffer) => {
    out += d.toString();
  });
  try {
    while (performance.now() - t0 < DEADLINE_MS) {
      const url = /metrics:\s+(http:\S+\/metrics)/.exec(out)?.[1];
      if (url && (await fetch(url)).status === 200) return performance.now() - t0;
      await new Promise((r) => setTimeout(r, 10));
    }
    throw new Error(`demo did not answer /metrics within ${DEADLINE_MS} ms`);
  } finally {
    child.kill("SIGINT");
    await once(child, "exit");
  }
}

/** Starts the demo RUNS times and times its first /metrics answer. */
export async function demoStartup(): Promise<DemoStartup> {
  const runs: number[] = [];
  for (let i = 0; i < RUNS; i++) runs.push(await startOnce());
  return { runs, medianMs: median(runs), maxMs: Math.max(...runs) };
}
