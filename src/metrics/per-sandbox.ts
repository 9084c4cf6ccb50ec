// Opt-in per-sandbox series (own shard, capped). As in kube-state-metrics, a sandbox whose fields
// did not change costs no string building: its lines are copied from the previous render's bytes.

import { gauge, helpOf, metricName, setting } from "../exposition/descriptor.js";
import { SectionWriter } from "../exposition/section-writer.js";
import { escapeLabel, formatValue, header } from "../exposition/text.js";
import { noGuard, type ValueGuard } from "../exposition/value-guard.js";
import { WalkIndex, type WalkRecord } from "../exposition/walk-index.js";
import type { Sandbox, SandboxUsage } from "../platform/types.js";
import { runSteps, type Steps } from "./render-steps.js";

const MIB = 1_048_576;
const CACHED = "Cached from the last successful walk of GET /v2/sandboxes.";
const USAGE_CACHED = "Cached from the last read of GET /sandboxes/metrics.";
const ID = ["sandbox_id"];
const ON = { on: setting("metrics.perSandboxMetrics") };
const USAGE = { on: `${setting("metrics.perSandboxMetrics")} and ${setting("poll.usage")}` };
/** In render order: info, start time, end time, cpus, memory, then CPU, memory and disk in use. */
export const PER_SANDBOX_FAMILIES = [
  gauge(
    "sandbox_info",
    `One series per sandbox, value 1; metadata labels only from the allow-list. ${CACHED}`,
    ["sandbox_id", "template", "state"],
    ON,
  ),
  gauge("sandbox_start_time_seconds", `Start time of the sandbox, Unix seconds. ${CACHED}`, ID, ON),
  gauge(
    "sandbox_end_timestamp_seconds",
    `Scheduled end time (endAt) of the sandbox, Unix seconds; no series when the platform sends none. ${CACHED}`,
    ID,
    ON,
  ),
  gauge("sandbox_cpus", `CPU count of the sandbox. ${CACHED}`, ID, ON),
  gauge("sandbox_memory_bytes", `Memory of the sandbox. ${CACHED}`, ID, ON),
  gauge(
    "sandbox_cpu_used_ratio",
    `Share of its CPUs the sandbox uses (cpuUsedPct / 100); no series without a usage sample. ${USAGE_CACHED}`,
    ID,
    USAGE,
  ),
  gauge(
    "sandbox_memory_used_bytes",
    `Memory the sandbox uses; no series without a usage sample. ${USAGE_CACHED}`,
    ID,
    USAGE,
  ),
  gauge(
    "sandbox_disk_used_bytes",
    `Disk the sandbox uses; no series without a usage sample. ${USAGE_CACHED}`,
    ID,
    USAGE,
  ),
] as const;
/** Families per sandbox. */
const FAMILIES = PER_SANDBOX_FAMILIES.length;
/** Bytes per sample line assumed when sizing a first render. */
const LINE_ESTIMATE = [120, 80, 84, 60, 72, 76, 80, 78];
/** Matches anything but printable ASCII, tab and newline: then UTF-8 length may differ from length. */
const NON_ASCII = /[^ -~\t\n]/;
/** The metadata values of every entry when no metadata label is configured (never written to). */
const NO_META: Array<string | undefined> = [];

function isAscii(s: string): boolean {
  return !NON_ASCII.test(s);
}

/** Settings of the per-sandbox families. */
export interface PerSandboxOptions {
  ns: string;
  /** Allow-listed metadata: [metadata key, label name]. */
  metadataLabels: ReadonlyArray<readonly [string, string]>;
  maxSeries: number;
}

/** One render: a Buffer per non-empty family, how many sandboxes got series, how many the cap cut. */
export interface PerSandboxOutput {
  chunks: Buffer[];
  written: number;
  dropped: number;
}

/** The fields a sandbox's lines were built from (its fingerprint). */
interface Entry extends WalkRecord {
  state: string;
  template: string;
  cpu: number | undefined;
  memory: number | undefined;
  start: number | undefined;
  end: number | undefined;
  /** From its usage sample: share of its CPUs in use, memory and disk in use (bytes). */
  cpuUsed: number | undefined;
  memoryUsed: number | undefined;
  diskUsed: number | undefined;
  meta: Array<string | undefined>;
  /** Label values its lines carry cut (see ValueGuard), counted again when the lines are reused. */
  cut: number;
}

/** Where each family's line of the record at position p sits: [p * FAMILIES + family]. */
interface Layout {
  sections: Buffer[];
  off: Int32Array;
  len: Int32Array;
}

/** Renders the per-sandbox families, reusing the bytes of sandboxes that did not change. */
export class PerSandboxSeries {
  private readonly entries = new WalkIndex<Entry>();
  private last: Layout = { sections: [], off: new Int32Array(0), len: new Int32Array(0) };
  private readonly heads: string[];
  private readonly prefix: string[];
  private readonly metaKeys: string[];

  constructor(private readonly o: PerSandboxOptions) {
    const names = PER_SANDBOX_FAMILIES.map((d) => metricName(o.ns, d));
    this.heads = PER_SANDBOX_FAMILIES.map((d, i) =>
      header(names[i] as string, d.type, helpOf(d), "prometheus"),
    );
    this.prefix = names.map((name) => `${name}{sandbox_id="`);
    this.metaKeys = o.metadataLabels.map(([key]) => key);
  }

  /**
   * Renders `sandboxes` (this shard's, in walk order); the first `maxSeries` distinct ids get
   * series, and the usage families too when `usage` (samples by id) is given.
   */
  render(
    sandboxes: readonly Sandbox[],
    guard = noGuard(),
    usage?: ReadonlyMap<string, SandboxUsage>,
  ): PerSandboxOutput {
    return runSteps(this.steps(sandboxes, guard, Number.POSITIVE_INFINITY, usage));
  }

  /**
   * The same render in steps, yielding after every `slice` sandboxes. Steps of two renders must not
   * interleave: each render continues the records of the one before.
   */
  *steps(
    sandboxes: readonly Sandbox[],
    guard: ValueGuard,
    slice: number,
    usage?: ReadonlyMap<string, SandboxUsage>,
  ): Steps<PerSandboxOutput> {
    const walk = this.entries.begin();
    const old = this.last;
    const expected = Math.min(sandboxes.length, this.o.maxSeries);
    const off = new Int32Array(expected * FAMILIES);
    const len = new Int32Array(expected * FAMILIES);
    const writers = this.heads.map((head, i) => {
      const prev = old.sections[i];
      const w = new SectionWriter(
        prev ? prev.length + (prev.length >> 4) : expected * (LINE_ESTIMATE[i] as number),
      );
      w.write(head, head.length);
      return w;
    });
    let written = 0;
    let dropped = 0;
    let left = slice;
    for (const s of sandboxes) {
      if (--left === 0) {
        yield;
        left = slice;
      }
      const e = this.entries.find(s.id);
      if (e?.walk === walk) continue; // the same id twice in one walk would be a duplicate series
      if (written >= this.o.maxSeries) {
        dropped++;
        continue;
      }
      const at = written * FAMILIES;
      const u = usageOf(usage?.get(s.id));
      if (e && this.unchanged(e, s, u)) {
        const was = e.pos * FAMILIES;
        for (let i = 0; i < FAMILIES; i++) {
          const w = writers[i] as SectionWriter;
          const from = old.off[was + i] as number;
          const bytes = old.len[was + i] as number;
          off[at + i] = w.position;
          len[at + i] = bytes;
          w.copy(old.sections[i] as Buffer, from, from + bytes);
        }
        guard.truncated += e.cut;
        this.entries.keep(e);
      } else {
        this.entries.keep(this.build(s, u, writers, at, off, len, e, guard));
      }
      written++;
    }
    yield;
    this.entries.end();
    const sections: Buffer[] = [];
    for (const w of writers) {
      yield;
      sections.push(w.finish());
    }
    this.last = { sections, off, len };
    const chunks = sections.filter((b, i) => b.length > (this.heads[i] as string).length);
    return { chunks, written, dropped };
  }

  private unchanged(e: Entry, s: Sandbox, u: Used): boolean {
    if (
      e.cpuUsed !== u.cpu ||
      e.memoryUsed !== u.memory ||
      e.diskUsed !== u.disk ||
      e.state !== s.state ||
      e.template !== s.templateId ||
      e.cpu !== s.cpuCount ||
      e.memory !== s.memoryMB ||
      e.start !== s.startedAt ||
      e.end !== s.endAt
    )
      return false;
    const keys = this.metaKeys;
    for (let j = 0; j < keys.length; j++)
      if (e.meta[j] !== s.metadata[keys[j] as string]) return false;
    return true;
  }

  /** Writes the sandbox's lines at record slot `at`; returns its entry (`e` updated, or a new one). */
  private build(
    s: Sandbox,
    u: Used,
    writers: SectionWriter[],
    at: number,
    off: Int32Array,
    len: Int32Array,
    e: Entry | undefined,
    guard: ValueGuard,
  ): Entry {
    const pInfo = this.prefix[0] as string;
    const before = guard.truncated;
    const id = escapeLabel(guard.label(s.id));
    const template = escapeLabel(guard.label(s.templateId));
    const state = escapeLabel(guard.label(s.state));
    // Only label values can be non-ASCII, and all of them are on the info line: the values are
    // tested, not the line, which would be flattened for it (a copy of every info line).
    let ascii = isAscii(id) && isAscii(template) && isAscii(state);
    let info = `${pInfo}${id}",template="${template}",state="${state}"`;
    const labels = this.o.metadataLabels;
    const meta: Array<string | undefined> = labels.length === 0 ? NO_META : [];
    for (const [key, name] of labels) {
      const v = s.metadata[key];
      meta.push(v);
      const value = v === undefined ? "" : escapeLabel(guard.label(v));
      if (ascii && !isAscii(value)) ascii = false;
      info += `,${name}="${value}"`;
    }
    const cut = guard.truncated - before;
    info += "} 1\n";
    put(writers, 0, at, off, len, info, ascii);
    const { startedAt, endAt, cpuCount, memoryMB } = s;
    // A negative size is not a size: left out here, counted by the aggregates.
    const cpus = cpuCount !== undefined && cpuCount >= 0 ? cpuCount : undefined;
    const memory = memoryMB !== undefined && memoryMB >= 0 ? memoryMB * MIB : undefined;
    const p = this.prefix;
    const start = startedAt === undefined ? undefined : startedAt / 1000;
    const end = endAt === undefined ? undefined : endAt / 1000;
    valueLine(writers, 1, at, off, len, p, id, start, ascii);
    valueLine(writers, 2, at, off, len, p, id, end, ascii);
    valueLine(writers, 3, at, off, len, p, id, cpus, ascii);
    valueLine(writers, 4, at, off, len, p, id, memory, ascii);
    valueLine(writers, 5, at, off, len, p, id, u.cpu, ascii);
    valueLine(writers, 6, at, off, len, p, id, u.memory, ascii);
    valueLine(writers, 7, at, off, len, p, id, u.disk, ascii);
    if (!e)
      return {
        id: s.id,
        walk: 0,
        pos: 0,
        state: s.state,
        template: s.templateId,
        cpu: cpuCount,
        memory: memoryMB,
        start: startedAt,
        end: endAt,
        cpuUsed: u.cpu,
        memoryUsed: u.memory,
        diskUsed: u.disk,
        meta,
        cut,
      };
    e.state = s.state;
    e.template = s.templateId;
    e.cpu = cpuCount;
    e.memory = memoryMB;
    e.start = startedAt;
    e.end = endAt;
    e.cpuUsed = u.cpu;
    e.memoryUsed = u.memory;
    e.diskUsed = u.disk;
    e.meta = meta;
    e.cut = cut;
    return e;
  }
}

/** What a sandbox's usage lines show; undefined for no line. */
interface Used {
  cpu: number | undefined;
  memory: number | undefined;
  disk: number | undefined;
}

const NONE: Used = { cpu: undefined, memory: undefined, disk: undefined };

/** The values of a usage sample as lines show them: a negative or NaN one has no line (the aggregates count it). */
function usageOf(u: SandboxUsage | undefined): Used {
  if (u === undefined) return NONE;
  return { cpu: size(u.cpuPct / 100), memory: size(u.memUsedBytes), disk: size(u.diskUsedBytes) };
}

function size(v: number | undefined): number | undefined {
  return v !== undefined && v >= 0 ? v : undefined;
}

/** The value line of family `f` (`prefix[f]`, the id, `v`), or none when `v` is undefined. */
function valueLine(
  writers: SectionWriter[],
  f: number,
  at: number,
  off: Int32Array,
  len: Int32Array,
  prefix: readonly string[],
  id: string,
  v: number | undefined,
  ascii: boolean,
): void {
  if (v === undefined) off[at + f] = (writers[f] as SectionWriter).position;
  else put(writers, f, at, off, len, `${prefix[f]}${id}"} ${formatValue(v)}\n`, ascii);
}

/** Appends one line of family `f` for record slot `at`, noting where it went. */
function put(
  writers: SectionWriter[],
  f: number,
  at: number,
  off: Int32Array,
  len: Int32Array,
  line: string,
  ascii: boolean,
): void {
  const w = writers[f] as SectionWriter;
  const bytes = ascii ? line.length : Buffer.byteLength(line, "utf8");
  off[at + f] = w.position;
  len[at + f] = bytes;
  w.write(line, bytes);
}
