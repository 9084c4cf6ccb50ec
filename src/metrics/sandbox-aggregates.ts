// Sandboxes rolled up by state x template (always on): count, CPU and memory sums, oldest start,
// and how many end soon; with the usage collector on, the CPU, memory and disk they use.
import { type SandboxList, visitFullRows } from "../collect/sandbox-table.js";
import {
  family,
  gauge,
  type LabelDescriptor,
  setting,
  TEAM_LABEL,
  WITH_SHARDS,
} from "../exposition/descriptor.js";
import { MAX_REMEMBERED_STATES } from "../exposition/state-memory.js";
import { type Family, labels } from "../exposition/text.js";
import { noGuard, type ValueGuard } from "../exposition/value-guard.js";
import type { SandboxUsage } from "../platform/types.js";
import { runSteps, type Steps } from "./render-steps.js";

const MIB = 1_048_576;
const CACHED = "Cached from the last successful walk of GET /v2/sandboxes.";
const USAGE_CACHED =
  "Sandboxes without a usage sample are left out (see sandboxes_usage_reported). Cached from the last read of GET /sandboxes/metrics.";
/** A sandbox whose endAt is at most this far after the snapshot's time is ending soon. */
export const ENDING_SOON_MS = 5 * 60_000;

/** The roll-up's labels: state, template, then the shard's of a sharded exporter. */
const GROUP: readonly LabelDescriptor[] = [
  "state",
  "template",
  { name: "shard", with: WITH_SHARDS },
  TEAM_LABEL,
];
export const SANDBOXES = gauge("sandboxes", `Sandboxes by state and template. ${CACHED}`, GROUP);
export const SANDBOXES_CPUS = gauge(
  "sandboxes_cpus",
  `Sum of the CPU counts of the sandboxes by state and template. ${CACHED}`,
  GROUP,
);
export const SANDBOXES_MEMORY = gauge(
  "sandboxes_memory_bytes",
  `Sum of the memory of the sandboxes by state and template. ${CACHED}`,
  GROUP,
);
export const SANDBOXES_OLDEST = gauge(
  "sandboxes_oldest_start_time_seconds",
  `Start time of the oldest sandbox by state and template, Unix seconds. ${CACHED}`,
  GROUP,
);
export const SANDBOXES_ENDING_SOON = gauge(
  "sandboxes_ending_soon",
  `Sandboxes by state and template whose endAt is within the next ${ENDING_SOON_MS / 60_000} minutes of the snapshot; only groups with a sandbox that has an endAt. ${CACHED}`,
  GROUP,
);
const USAGE = { on: setting("poll.usage") };
export const SANDBOXES_USAGE_REPORTED = gauge(
  "sandboxes_usage_reported",
  "Sandboxes by state and template with a usage sample: the ones the *_used sums cover. Cached from the last read of GET /sandboxes/metrics.",
  ["state", "template"],
  USAGE,
);
export const SANDBOXES_CPU_USED = gauge(
  "sandboxes_cpu_used",
  `CPUs in use by the sandboxes by state and template (cpuUsedPct / 100 x cpuCount, summed). ${USAGE_CACHED}`,
  ["state", "template"],
  USAGE,
);
export const SANDBOXES_MEMORY_USED = gauge(
  "sandboxes_memory_used_bytes",
  `Memory in use by the sandboxes by state and template. ${USAGE_CACHED}`,
  ["state", "template"],
  USAGE,
);
export const SANDBOXES_DISK_USED = gauge(
  "sandboxes_disk_used_bytes",
  `Disk in use by the sandboxes by state and template. ${USAGE_CACHED}`,
  ["state", "template"],
  USAGE,
);
export const AGGREGATE_FAMILIES = [
  SANDBOXES,
  SANDBOXES_CPUS,
  SANDBOXES_MEMORY,
  SANDBOXES_OLDEST,
  SANDBOXES_ENDING_SOON,
  SANDBOXES_USAGE_REPORTED,
  SANDBOXES_CPU_USED,
  SANDBOXES_MEMORY_USED,
  SANDBOXES_DISK_USED,
] as const;

interface Group {
  count: number;
  cpus: number;
  memory: number;
  oldest: number;
  /** Sandboxes with an endAt, and those of them ending within ENDING_SOON_MS. */
  withEnd: number;
  endingSoon: number;
  /** Sandboxes with a usage sample, and the sums of what those samples say they use. */
  reported: number;
  cpusUsed: number;
  memoryUsed: number;
  diskUsed: number;
}

const emptyGroup = (): Group => ({
  count: 0,
  cpus: 0,
  memory: 0,
  oldest: Number.POSITIVE_INFINITY,
  withEnd: 0,
  endingSoon: 0,
  reported: 0,
  cpusUsed: 0,
  memoryUsed: 0,
  diskUsed: 0,
});

/** Settings of the roll-up. */
export interface AggregateOptions {
  ns: string;
  /** Value of the `shard` label, when the sandboxes are one shard of several. */
  shardLabel?: string;
  /** States that count as running or paused: every template shows them, 0 when none are. */
  runningStates: readonly string[];
  pausedStates: readonly string[];
}

/**
 * Renders the roll-up. A state x template pair seen earlier keeps a 0 series while its template
 * is still present, and every present template shows the running and paused states seen this
 * run, so "no running sandboxes of template X" is a 0 to alert on, not a vanished series.
 */
export class SandboxAggregates {
  private readonly remembered = new Map<string, Set<string>>();
  private readonly liveStates = new Set<string>();
  private readonly seenLive = new Set<string>();

  constructor(private readonly o: AggregateOptions) {
    for (const s of [...o.runningStates, ...o.pausedStates]) this.liveStates.add(s.toLowerCase());
  }

  /**
   * Families of `sandboxes` (already this shard's); `templates` lists ids known to exist; `at`
   * (epoch ms) is the snapshot's time, from which ending soon is counted; `usage` (the usage
   * collector's samples by id, when it is on) adds the usage families.
   */
  render(
    sandboxes: SandboxList,
    templates: readonly string[],
    at: number,
    guard = noGuard(),
    usage?: ReadonlyMap<string, SandboxUsage>,
  ): Family[] {
    return runSteps(this.steps(sandboxes, templates, at, guard, Number.POSITIVE_INFINITY, usage));
  }

  /** The same render in steps, yielding after every `slice` records. */
  *steps(
    sandboxes: SandboxList,
    templates: readonly string[],
    at: number,
    guard: ValueGuard,
    slice: number,
    usage?: ReadonlyMap<string, SandboxUsage>,
  ): Steps<Family[]> {
    const groups = new Map<string, Map<string, Group>>();
    yield* visitFullRows(
      sandboxes,
      (id, templateId, state, cpuCount, memoryMB, startedAt, endAt) => {
        let byState = groups.get(templateId);
        if (!byState) {
          byState = new Map();
          groups.set(templateId, byState);
        }
        let g = byState.get(state);
        if (!g) {
          g = emptyGroup();
          byState.set(state, g);
          if (this.liveStates.has(state)) this.seenLive.add(state);
        }
        g.count++;
        g.cpus += guard.resource("cpu", cpuCount) ?? 0;
        g.memory += (guard.resource("memory", memoryMB) ?? 0) * MIB;
        if (startedAt !== undefined && startedAt < g.oldest) g.oldest = startedAt;
        if (endAt !== undefined) {
          g.withEnd++;
          if (endAt >= at && endAt - at <= ENDING_SOON_MS) g.endingSoon++;
        }
        const u = usage?.get(id);
        if (u !== undefined) addUsage(g, u, cpuCount, guard);
      },
      slice,
    );
    this.zeroFill(groups, templates);
    // Label sets made once: the guard counts every value it cuts.
    const rows = this.rows(groups, guard);
    const families = this.families(rows);
    return usage ? [...families, ...this.usageFamilies(rows)] : families;
  }

  private zeroFill(groups: Map<string, Map<string, Group>>, templates: readonly string[]): void {
    for (const t of templates) if (!groups.has(t)) groups.set(t, new Map());
    for (const t of [...this.remembered.keys()]) if (!groups.has(t)) this.remembered.delete(t);
    for (const [t, byState] of groups) {
      let seen = this.remembered.get(t);
      if (!seen) {
        seen = new Set();
        this.remembered.set(t, seen);
      }
      for (const st of byState.keys()) seen.add(st);
      for (const st of this.seenLive) seen.add(st);
      // Free-text states must not grow series without bound: forget absent ones past the limit.
      for (const st of seen) {
        if (seen.size <= MAX_REMEMBERED_STATES) break;
        if (!byState.has(st)) seen.delete(st);
      }
      for (const st of seen) if (!byState.has(st)) byState.set(st, emptyGroup());
    }
  }

  private families(rows: ReadonlyArray<[string, Group]>): Family[] {
    const ns = this.o.ns;
    const count = family(ns, SANDBOXES);
    const cpus = family(ns, SANDBOXES_CPUS);
    const memory = family(ns, SANDBOXES_MEMORY);
    const oldest = family(ns, SANDBOXES_OLDEST);
    const endingSoon = family(ns, SANDBOXES_ENDING_SOON);
    for (const [l, g] of rows) {
      count.add(l, g.count);
      cpus.add(l, g.cpus);
      memory.add(l, g.memory);
      if (g.oldest !== Number.POSITIVE_INFINITY) oldest.add(l, g.oldest / 1000);
      // No endAt known is not "none ending": the series is left out rather than 0.
      if (g.withEnd > 0) endingSoon.add(l, g.endingSoon);
    }
    return [count, cpus, memory, oldest, endingSoon];
  }

  /** The usage families; a group no sample covers has no sums (missing data is not 0). */
  private usageFamilies(rows: ReadonlyArray<[string, Group]>): Family[] {
    const ns = this.o.ns;
    const reported = family(ns, SANDBOXES_USAGE_REPORTED);
    const cpus = family(ns, SANDBOXES_CPU_USED);
    const memory = family(ns, SANDBOXES_MEMORY_USED);
    const disk = family(ns, SANDBOXES_DISK_USED);
    for (const [l, g] of rows) {
      reported.add(l, g.reported);
      if (g.reported === 0) continue;
      cpus.add(l, g.cpusUsed);
      memory.add(l, g.memoryUsed);
      disk.add(l, g.diskUsed);
    }
    return [reported, cpus, memory, disk];
  }

  /** Each group with its label set, sorted by state then template. */
  private rows(groups: Map<string, Map<string, Group>>, guard: ValueGuard): Array<[string, Group]> {
    const rows: Array<[string, string, Group]> = [];
    for (const [t, byState] of groups) for (const [st, g] of byState) rows.push([st, t, g]);
    rows.sort(([sa, ta], [sb, tb]) => compare(sa, sb) || compare(ta, tb));
    return rows.map(([state, template, g]) => {
      const pairs: Array<[string, string]> = [
        ["state", state],
        ["template", template],
      ];
      if (this.o.shardLabel !== undefined) pairs.push(["shard", this.o.shardLabel]);
      return [labels(pairs, guard), g];
    });
  }
}

/**
 * Adds a sandbox's usage sample to its group. CPUs in use are its share of its CPUs (the sample's
 * count, else the listed one); a negative or NaN value is left out and counted.
 */
function addUsage(
  g: Group,
  u: SandboxUsage,
  listedCpus: number | undefined,
  guard: ValueGuard,
): void {
  g.reported++;
  const count = u.cpuCount ?? listedCpus;
  const cpus =
    count === undefined ? undefined : guard.resource("cpu_used", (u.cpuPct / 100) * count);
  g.cpusUsed += cpus ?? 0;
  g.memoryUsed += guard.resource("memory_used", u.memUsedBytes) ?? 0;
  g.diskUsed += guard.resource("disk_used", u.diskUsedBytes) ?? 0;
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
