// `npm run bench -- --only profile`: V8's CPU profile of the exporter child (compiled, the image's
// node flags) over the cases of the performance table, and each profile's top frames by self time.
// The .cpuprofile files (open them in Chrome DevTools) go to .tmp/bench/profiles/.
import { mkdirSync, readFileSync } from "node:fs";
import { basename, join, resolve } from "node:path";
import { type ExporterChild, LIFTED_BUDGET } from "./exporter-case.js";
import { forkChild } from "./ipc.js";
import { PROMETHEUS_ACCEPT, ScrapeClient } from "./scrape-client.js";

const PAGE = 100;
const WARM = 2;
const PROFILED_CYCLES = 5;
const PROFILED_SCRAPES = 50;
const TOP = 12;
const DIR = resolve(".tmp/bench/profiles");

/** One frame's share of a profile. */
export interface Frame {
  frame: string;
  selfMs: number;
  /** Of the samples that were not idle. */
  selfPercent: number;
}

/** One profiled case. */
export interface ProfiledCase {
  name: string;
  file: string;
  /** Busy (non-idle) ms in the profile. */
  busyMs: number;
  top: Frame[];
}

interface CpuProfile {
  nodes: {
    id: number;
    callFrame: { functionName: string; url: string; lineNumber: number };
  }[];
  samples: number[];
  timeDeltas: number[];
}

/** A frame's name: function, file and line (1-based), so two closures of one file differ. */
function frameName(f: CpuProfile["nodes"][number]["callFrame"]): string {
  if (f.url === "") return f.functionName || "(anonymous)";
  const file = f.url.includes("node_modules")
    ? f.url.slice(f.url.lastIndexOf("node_modules/") + 13)
    : basename(f.url);
  return `${f.functionName || "(anonymous)"} ${file}:${f.lineNumber + 1}`;
}

/** Self time by frame, from the samples and their time deltas (µs). */
export function topFrames(path: string, top = TOP): { busyMs: number; top: Frame[] } {
  const p = JSON.parse(readFileSync(path, "utf8")) as CpuProfile;
  const names = new Map(p.nodes.map((n) => [n.id, frameName(n.callFrame)]));
  const self = new Map<string, number>();
  for (let i = 0; i < p.samples.length; i++) {
    const name = names.get(p.samples[i] as number) ?? "?";
    // A sample's time is the delta to the next one.
    const us = p.timeDeltas[i + 1] ?? 0;
    self.set(name, (self.get(name) ?? 0) + us);
  }
  self.delete("(idle)");
  const busyUs = [...self.values()].reduce((a, b) => a + b, 0);
  const frames = [...self.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([frame, us]) => ({
      frame,
      selfMs: Math.round(us / 100) / 10,
      selfPercent: Math.round((1000 * us) / busyUs) / 10,
    }));
  return { busyMs: Math.round(busyUs / 1000), top: frames };
}

/** Cycles of one child, profiled after `WARM` unprofiled ones (and, with `scrape`, gzip asked for). */
async function profileCycles(
  exporter: ExporterChild,
  apiUrl: string,
  name: string,
  flags: string[],
): Promise<ProfiledCase> {
  const child = await forkChild<{ url: string }>(
    exporter.script,
    [apiUrl, "--page-limit", String(PAGE), ...LIFTED_BUDGET, ...flags],
    exporter.nodeFlags,
  );
  const client = new ScrapeClient(child.ready.url);
  const style = { gzip: true, accept: PROMETHEUS_ACCEPT };
  try {
    for (let i = 0; i < WARM; i++) {
      await child.call("cycle");
      await client.get(style);
    }
    const file = join(DIR, `${name}.cpuprofile`);
    await child.call("profileStart");
    for (let i = 0; i < PROFILED_CYCLES; i++) await child.call("cycle");
    await child.call("profileStop", { path: file });
    // The scrapes of the cached body, in a profile of their own.
    const scrapes = join(DIR, `${name}-scrapes.cpuprofile`);
    await child.call("profileStart");
    for (let i = 0; i < PROFILED_SCRAPES; i++) await client.get(style);
    await child.call("profileStop", { path: scrapes });
    return { name, file, ...topFrames(file) };
  } finally {
    await client.close();
    await child.stop();
  }
}

const PER_SANDBOX = ["--per-sandbox-metrics", "--max-sandbox-series", "1000000"];

/** The three cycle cases: by id and newest first with per-sandbox off, newest first with it on. */
export async function profileCases(
  exporter: ExporterChild,
  sandboxes: number,
): Promise<ProfiledCase[]> {
  mkdirSync(DIR, { recursive: true });
  const out: ProfiledCase[] = [];
  for (const order of ["id", "started"] as const) {
    const sim = await forkChild<{ apiUrl: string }>("bench/sim-child.ts", [
      String(sandboxes),
      order,
    ]);
    try {
      const tag = order === "id" ? "by-id" : "newest-first";
      out.push(await profileCycles(exporter, sim.ready.apiUrl, `cycle-${tag}-off`, []));
      if (order === "started")
        out.push(await profileCycles(exporter, sim.ready.apiUrl, `cycle-${tag}-on`, PER_SANDBOX));
    } finally {
      await sim.stop();
    }
  }
  return out;
}

/** The top frames of each case, as the README of the bench shows them. */
export function printProfiles(cases: ProfiledCase[]): void {
  for (const c of cases) {
    console.log(`\n${c.name}: ${c.busyMs} ms busy over ${PROFILED_CYCLES} cycles (${c.file})`);
    for (const f of c.top)
      console.log(
        `  ${f.selfPercent.toFixed(1).padStart(5)} %  ${String(f.selfMs).padStart(7)} ms  ${f.frame}`,
      );
  }
}
