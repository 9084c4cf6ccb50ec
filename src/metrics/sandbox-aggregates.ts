// Sandboxes rolled up by state x template (always on): count, CPU and memory sums, oldest start,
// and how many end soon.
import { type SandboxList, visitFullRows } from "../collect/sandbox-table.js";
import { MAX_REMEMBERED_STATES } from "./exposition/state-memory.js";
import { Family, labels } from "./exposition/text.js";
import { noGuard, type ValueGuard } from "./exposition/value-guard.js";
import { runSteps, type Steps } from "./render-steps.js";

const MIB = 1_048_576;
const CACHED = "Cached from the last successful walk of GET /v2/sandboxes.";
/** A sandbox whose endAt is at most this far after the snapshot's time is ending soon. */
export const ENDING_SOON_MS = 5 * 60_000;

interface Group {
  count: number;
  cpus: number;
  memory: number;
  oldest: number;
  /** Sandboxes with an endAt, and those of them ending within ENDING_SOON_MS. */
  withEnd: number;
  endingSoon: number;
}

const emptyGroup = (): Group => ({
  count: 0,
  cpus: 0,
  memory: 0,
  oldest: Number.POSITIVE_INFINITY,
  withEnd: 0,
  endingSoon: 0,
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
   * (epoch ms) is the snapshot's time, from which ending soon is counted.
   */
  render(
    sandboxes: SandboxList,
    templates: readonly string[],
    at: number,
    guard = noGuard(),
  ): Family[] {
    return runSteps(this.steps(sandboxes, templates, at, guard, Number.POSITIVE_INFINITY));
  }

  /** The same render in steps, yielding after every `slice` records. */
  *steps(
    sandboxes: SandboxList,
    templates: readonly string[],
    at: number,
    guard: ValueGuard,
    slice: number,
  ): Steps<Family[]> {
    const groups = new Map<string, Map<string, Group>>();
    yield* visitFullRows(
      sandboxes,
      (_id, templateId, state, cpuCount, memoryMB, startedAt, endAt) => {
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
      },
      slice,
    );
    this.zeroFill(groups, templates);
    return this.families(groups, guard);
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

  private families(groups: Map<string, Map<string, Group>>, guard: ValueGuard): Family[] {
    const ns = this.o.ns;
    const count = new Family(
      `${ns}_sandboxes`,
      "gauge",
      `Sandboxes by state and template. ${CACHED}`,
    );
    const cpus = new Family(
      `${ns}_sandboxes_cpus`,
      "gauge",
      `Sum of the CPU counts of the sandboxes by state and template. ${CACHED}`,
    );
    const memory = new Family(
      `${ns}_sandboxes_memory_bytes`,
      "gauge",
      `Sum of the memory of the sandboxes by state and template. ${CACHED}`,
    );
    const oldest = new Family(
      `${ns}_sandboxes_oldest_start_time_seconds`,
      "gauge",
      `Start time of the oldest sandbox by state and template, Unix seconds. ${CACHED}`,
    );
    const endingSoon = new Family(
      `${ns}_sandboxes_ending_soon`,
      "gauge",
      `Sandboxes by state and template whose endAt is within the next ${ENDING_SOON_MS / 60_000} minutes of the snapshot; only groups with a sandbox that has an endAt. ${CACHED}`,
    );
    const rows: Array<[string, string, Group]> = [];
    for (const [t, byState] of groups) for (const [st, g] of byState) rows.push([st, t, g]);
    rows.sort(([sa, ta], [sb, tb]) => compare(sa, sb) || compare(ta, tb));
    for (const [state, template, g] of rows) {
      const pairs: Array<[string, string]> = [
        ["state", state],
        ["template", template],
      ];
      if (this.o.shardLabel !== undefined) pairs.push(["shard", this.o.shardLabel]);
      const l = labels(pairs, guard);
      count.add(l, g.count);
      cpus.add(l, g.cpus);
      memory.add(l, g.memory);
      if (g.oldest !== Number.POSITIVE_INFINITY) oldest.add(l, g.oldest / 1000);
      // No endAt known is not "none ending": the series is left out rather than 0.
      if (g.withEnd > 0) endingSoon.add(l, g.endingSoon);
    }
    return [count, cpus, memory, oldest, endingSoon];
  }
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
