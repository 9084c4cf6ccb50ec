// Sandbox families: aggregates by state x template (always), churn counters, opt-in per-sandbox series.

import { sanitizeLabelName } from "../platform/normalize.js";
import type { Sandbox } from "../platform/types.js";
import { Family, labels } from "./text.js";

const MIB = 1_048_576;
const CACHED = "Cached from the last walk of /v2/sandboxes.";

/** Options of the per-sandbox families. */
export interface PerSandboxOptions {
  enabled: boolean;
  /** metadata key -> label name. */
  metadataLabels: ReadonlyArray<readonly [string, string]>;
  maxSeries: number;
}

interface Group {
  state: string;
  template: string;
  count: number;
  cpus: number;
  memory: number;
  oldest: number;
}

/** Metadata allow-list entries as [key, label name], renaming names that clash with fixed labels. */
export function metadataLabelNames(keys: readonly string[]): Array<[string, string]> {
  const fixed = new Set(["sandbox_id", "template", "state", "shard"]);
  return keys.map((k) => {
    const name = sanitizeLabelName(k);
    return [k, fixed.has(name) ? `metadata_${name}` : name];
  });
}

/** Aggregates of the sandboxes given (already filtered to this shard). */
export function aggregateFamilies(
  ns: string,
  sandboxes: readonly Sandbox[],
  shardLabel: string | undefined,
): Family[] {
  const groups = new Map<string, Group>();
  for (const s of sandboxes) {
    const key = `${s.state}\u0000${s.templateId}`;
    let g = groups.get(key);
    if (!g) {
      g = {
        state: s.state,
        template: s.templateId,
        count: 0,
        cpus: 0,
        memory: 0,
        oldest: Number.POSITIVE_INFINITY,
      };
      groups.set(key, g);
    }
    g.count++;
    g.cpus += s.cpuCount ?? 0;
    g.memory += (s.memoryMB ?? 0) * MIB;
    if (s.startedAt !== undefined && s.startedAt < g.oldest) g.oldest = s.startedAt;
  }
  const count = new Family(
    `${ns}_sandboxes`,
    "gauge",
    `Sandboxes by state and template. ${CACHED}`,
  );
  const cpus = new Family(
    `${ns}_sandboxes_cpus`,
    "gauge",
    `Sum of CPU counts of the sandboxes by state and template. ${CACHED}`,
  );
  const memory = new Family(
    `${ns}_sandboxes_memory_bytes`,
    "gauge",
    `Sum of memory of the sandboxes by state and template. ${CACHED}`,
  );
  const oldest = new Family(
    `${ns}_sandboxes_oldest_start_time_seconds`,
    "gauge",
    `Start time of the oldest sandbox by state and template, Unix seconds. ${CACHED}`,
  );
  const sorted = [...groups.values()].sort(
    (a, b) => a.state.localeCompare(b.state) || a.template.localeCompare(b.template),
  );
  for (const g of sorted) {
    const pairs: Array<[string, string]> = [
      ["state", g.state],
      ["template", g.template],
    ];
    if (shardLabel !== undefined) pairs.push(["shard", shardLabel]);
    const l = labels(pairs);
    count.add(l, g.count);
    cpus.add(l, g.cpus);
    memory.add(l, g.memory);
    if (g.oldest !== Number.POSITIVE_INFINITY) oldest.add(l, g.oldest / 1000);
  }
  return [count, cpus, memory, oldest];
}

/** Per-sandbox families, capped; returns the families and how many sandboxes were left out. */
export function perSandboxFamilies(
  ns: string,
  sandboxes: readonly Sandbox[],
  o: PerSandboxOptions,
): { families: Family[]; dropped: number } {
  const info = new Family(
    `${ns}_sandbox_info`,
    "gauge",
    `One series per sandbox, value 1; metadata keys only from the allow-list. ${CACHED}`,
  );
  const start = new Family(
    `${ns}_sandbox_start_time_seconds`,
    "gauge",
    `Start time of the sandbox, Unix seconds. ${CACHED}`,
  );
  const cpus = new Family(`${ns}_sandbox_cpus`, "gauge", `CPU count of the sandbox. ${CACHED}`);
  const memory = new Family(
    `${ns}_sandbox_memory_bytes`,
    "gauge",
    `Memory of the sandbox. ${CACHED}`,
  );
  const n = Math.min(sandboxes.length, o.maxSeries);
  for (let i = 0; i < n; i++) {
    const s = sandboxes[i] as Sandbox;
    const id = labels([["sandbox_id", s.id]]);
    const pairs: Array<[string, string]> = [
      ["sandbox_id", s.id],
      ["template", s.templateId],
      ["state", s.state],
    ];
    for (const [key, name] of o.metadataLabels) pairs.push([name, s.metadata[key] ?? ""]);
    info.add(labels(pairs), 1);
    if (s.startedAt !== undefined) start.add(id, s.startedAt / 1000);
    if (s.cpuCount !== undefined) cpus.add(id, s.cpuCount);
    if (s.memoryMB !== undefined) memory.add(id, s.memoryMB * MIB);
  }
  return { families: [info, start, cpus, memory], dropped: sandboxes.length - n };
}

/** Counts sandboxes appearing and vanishing between consecutive complete walks, by template. */
export class ChurnTracker {
  private previous: Map<string, string> | undefined;
  readonly created = new Map<string, number>();
  readonly disappeared = new Map<string, number>();

  /** Feeds one walk; incomplete walks are skipped and do not become the new baseline. */
  observe(sandboxes: readonly Sandbox[], complete: boolean): void {
    if (!complete) return;
    const now = new Map<string, string>();
    for (const s of sandboxes) now.set(s.id, s.templateId);
    if (this.previous) {
      for (const [id, tpl] of now) if (!this.previous.has(id)) bump(this.created, tpl);
      for (const [id, tpl] of this.previous) if (!now.has(id)) bump(this.disappeared, tpl);
    }
    this.previous = now;
  }

  families(ns: string): Family[] {
    const created = new Family(
      `${ns}_sandboxes_created`,
      "counter",
      "Sandboxes that appeared between two complete walks of /v2/sandboxes, by template.",
    );
    const gone = new Family(
      `${ns}_sandboxes_disappeared`,
      "counter",
      "Sandboxes that vanished between two complete walks of /v2/sandboxes, by template.",
    );
    if (!this.previous) return [];
    const templates = new Set([
      ...this.previous.values(),
      ...this.created.keys(),
      ...this.disappeared.keys(),
    ]);
    for (const t of [...templates].sort()) {
      created.add(labels([["template", t]]), this.created.get(t) ?? 0);
      gone.add(labels([["template", t]]), this.disappeared.get(t) ?? 0);
    }
    return [created, gone];
  }
}

function bump(m: Map<string, number>, key: string): void {
  m.set(key, (m.get(key) ?? 0) + 1);
}
