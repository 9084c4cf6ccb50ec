// What cost accounting adds to the 100,000-sandbox poll cycle (`npm run bench -- --only cost`):
// three exporter children against one simulator: cost off (the self-hosted default), a second
// cost off (the control: off against off is the noise floor) and cost on (prices given; no
// attribution, so all keep the compact table). Each round runs one cycle of each, in an order
// that rotates round to round; CPU is each cycle's user + system time of its child. Memory is
// sampled during the run, each child scraped first, after a full GC and a second one a turn
// later (array buffers are freed after the GC that finds them dead, so the first reading still
// counts garbage). Then one accounting pass over the same number of rows, in this process.
import { Registry } from "prom-client";
import { SandboxTable } from "../src/collect/sandbox-table.js";
import { startCost, type WalkedSnapshot } from "../src/cost/cost-accounting.js";
import { E2B_PRICES } from "../src/cost/cost-settings.js";
import { FakeClock } from "../src/util/clock.js";
import { type ExporterChild, LIFTED_BUDGET } from "./exporter-case.js";
import { type BenchChild, forkChild } from "./ipc.js";

const PAGE = 100;
const WARM = 3;
const MEASURED = 15;
/** Memory is sampled after every this many measured rounds. */
const MEMORY_EVERY = 5;
const PASSES = 9;
const POLL_MS = 15_000;
const PRICES = ["--cost-vcpu-second", "0.000014", "--cost-memory-gib-second", "0.0000045"];
const ARMS = ["off", "control", "on"] as const;
type Arm = (typeof ARMS)[number];
const FLAGS: Record<Arm, string[]> = { off: ["--no-cost"], control: ["--no-cost"], on: PRICES };
const MEMORY_FIELDS = ["rss", "heapUsed", "external", "arrayBuffers"] as const;

type Memory = Record<string, number>;
type Run = { ms: number; cpuMs: number };

/** Median and spread of a sample. */
export interface Spread {
  median: number;
  p25: number;
  p75: number;
  min: number;
  max: number;
  n: number;
}

/** One child: its cycles and its memory samples (MB), as spreads. */
export interface CostArm {
  cycleCpuMs: Spread;
  cycleMs: Spread;
  memoryMB: Record<(typeof MEMORY_FIELDS)[number], Spread>;
}

/** Cost accounting on against off, and off against off to show the noise. */
export interface CostFigures {
  sandboxes: number;
  arms: Record<Arm, CostArm>;
  /** Per round, (arm - off) / off of the cycle's CPU, percent: on is the cost, control the noise. */
  extraCpuPercent: { on: Spread; control: Spread };
  /** arm - off of the median memory sample, MB; retained: heapUsed + arrayBuffers. */
  extraMemoryMB: { on: Memory; control: Memory };
  /** One accounting pass over `sandboxes` rows in this process (startCost's onSnapshot). */
  accountingPass: { ms: Spread; percentOfOnCycleCpu: number };
  /** sandbox_vcpu_seconds_total summed on the "on" child: the accounting ran. */
  vcpuSecondsCounted: number;
  measured: string;
}

function spread(xs: number[]): Spread {
  const s = [...xs].sort((a, b) => a - b);
  const at = (q: number): number => {
    const i = (s.length - 1) * q;
    const lo = Math.floor(i);
    const hi = Math.ceil(i);
    return (s[lo] as number) + ((s[hi] as number) - (s[lo] as number)) * (i - lo);
  };
  if (s.length === 0) return { median: NaN, p25: NaN, p75: NaN, min: NaN, max: NaN, n: 0 };
  const [min, max] = [s[0] as number, s[s.length - 1] as number];
  return { median: at(0.5), p25: at(0.25), p75: at(0.75), min, max, n: s.length };
}

export async function costCase(exporter: ExporterChild, sandboxes: number): Promise<CostFigures> {
  const sim = await forkChild<{ apiUrl: string }>("bench/sim-child.ts", [String(sandboxes)]);
  const maxPages = String(2 * Math.ceil(sandboxes / PAGE));
  const common = ["--page-limit", String(PAGE), "--max-pages", maxPages, ...LIFTED_BUDGET];
  const children: Partial<Record<Arm, BenchChild<{ url: string }>>> = {};
  try {
    for (const arm of ARMS)
      children[arm] = await forkChild<{ url: string }>(
        exporter.script,
        [sim.ready.apiUrl, ...common, ...FLAGS[arm]],
        exporter.nodeFlags,
      );
    const child = (arm: Arm) => children[arm] as BenchChild<{ url: string }>;
    const runs: Record<Arm, Run[]> = { off: [], control: [], on: [] };
    const memory: Record<Arm, Memory[]> = { off: [], control: [], on: [] };
    for (let i = 0; i < WARM + MEASURED; i++) {
      // Rotated, so no arm always runs right after another (caches, CPU frequency, the simulator).
      const order = ARMS.map((_, k) => ARMS[(i + k) % ARMS.length] as Arm);
      for (const arm of order) {
        const r = await child(arm).call<Run>("cycle");
        if (i >= WARM) runs[arm].push(r);
      }
      const measured = i + 1 - WARM;
      if (measured > 0 && measured % MEMORY_EVERY === 0)
        for (const arm of order) memory[arm].push(await settledMemory(child(arm)));
    }
    const body = await (await fetch(`${child("on").ready.url}/metrics`)).text();
    const vcpuSecondsCounted = body
      .split("\n")
      .filter((l) => l.startsWith("sandbox_vcpu_seconds_total{"))
      .reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(" ") + 1)), 0);
    const arm = (a: Arm): CostArm => ({
      cycleCpuMs: spread(runs[a].map((r) => r.cpuMs)),
      cycleMs: spread(runs[a].map((r) => r.ms)),
      memoryMB: Object.fromEntries(
        MEMORY_FIELDS.map((f) => [f, spread(memory[a].map((m) => m[f] ?? NaN))]),
      ) as CostArm["memoryMB"],
    });
    const arms = { off: arm("off"), control: arm("control"), on: arm("on") };
    const extraCpu = (a: Arm) =>
      spread(
        runs[a].map(
          (r, k) => (100 * (r.cpuMs - (runs.off[k]?.cpuMs ?? NaN))) / (runs.off[k]?.cpuMs ?? NaN),
        ),
      );
    // Retained (heap used + array buffers) is what the child keeps; RSS also holds what the
    // allocator and V8 kept of past garbage, which the control's RSS shows to be noisy.
    const extraMemory = (a: Arm): Memory => {
      const d = Object.fromEntries(
        MEMORY_FIELDS.map((f) => [f, arms[a].memoryMB[f].median - arms.off.memoryMB[f].median]),
      );
      return { ...d, retained: (d.heapUsed ?? NaN) + (d.arrayBuffers ?? NaN) };
    };
    const pass = accountingPass(sandboxes);
    return {
      sandboxes,
      arms,
      extraCpuPercent: { on: extraCpu("on"), control: extraCpu("control") },
      extraMemoryMB: { on: extraMemory("on"), control: extraMemory("control") },
      accountingPass: {
        ms: pass,
        percentOfOnCycleCpu: (100 * pass.median) / arms.on.cycleCpuMs.median,
      },
      vcpuSecondsCounted,
      measured: `one simulator of ${sandboxes} sandboxes; three exporter children (--no-cost; --no-cost as the control; prices given), ${WARM} warm-up rounds then ${MEASURED} measured rounds of one cycle each, the order rotating each round; CPU: each child's user + system time per cycle, extra percent per round against the off child's cycle of the same round; memory: every ${MEMORY_EVERY} rounds, after a scrape of each child, a forced full GC and a second one a turn later (process.memoryUsage, MB); accountingPass: startCost's onSnapshot over a compact table of ${sandboxes} running rows in the bench process (tsx), ${PASSES} passes after one warm-up, walks ${POLL_MS / 1000} s apart`,
    };
  } finally {
    for (const arm of ARMS) await children[arm]?.stop();
    await sim.stop();
  }
}

/** Memory after a scrape and two full GCs a turn apart: what the child keeps, not its garbage. */
async function settledMemory(child: BenchChild<{ url: string }>): Promise<Memory> {
  await (await fetch(`${child.ready.url}/metrics`)).text();
  await child.call("memory");
  return (await child.call<{ now: Memory; afterGc: Memory }>("memory")).afterGc;
}

/** Ms of one accounting pass over `n` sandboxes (the cost module's onSnapshot), per pass. */
function accountingPass(n: number): Spread {
  const t0 = Date.UTC(2026, 0, 1);
  const clock = new FakeClock(t0);
  const cost = startCost({
    settings: {
      enabled: true,
      prices: { ...E2B_PRICES, templates: {} },
      currency: "USD",
      attributeBy: [],
      maxAttributedValues: 20,
      budget: {},
    },
    registry: new Registry(),
    namespace: "sandbox",
    clock,
    shard: { index: 0, total: 1 },
    states: { running: ["running"], paused: ["paused"] },
    maxLabelValueLength: 128,
    maxTemplates: 200,
    scrub: (text) => text,
  });
  if (!cost) throw new Error("cost did not start");
  const builder = SandboxTable.builder();
  for (let i = 0; i < n; i++)
    builder.push({
      id: `sbx-${String(i).padStart(8, "0")}`,
      templateId: `tpl-${i % 20}`,
      state: "running",
      cpuCount: 2,
      memoryMB: 512,
      startedAt: t0 - (i % 3600) * 1000,
      endAt: t0 + 3_600_000,
      metadata: {},
      extra: {},
    });
  const table = builder.build();
  const ms: number[] = [];
  for (let k = 0; k <= PASSES; k++) {
    clock.advance(POLL_MS);
    const snapshot = {
      walked: true,
      sandboxesComplete: true,
      sandboxes: table,
      startedAt: clock.now(),
    } satisfies WalkedSnapshot;
    const start = performance.now();
    cost.onSnapshot(snapshot);
    if (k > 0) ms.push(performance.now() - start);
  }
  if (cost.accountant.size !== n) throw new Error(`tracked ${cost.accountant.size} of ${n}`);
  return spread(ms);
}
