// The scrape body of several teams: the exporter's part (its own families and the cluster's, no
// team label) and each team's part with `team="<id>"` on every sample, each family written once.
// A team's snapshot families are split and labelled once per snapshot; the merged body is made
// again only when a part's snapshot changed. The live registries are merged at every scrape.

import { type FamilyText, mergeFamilies, splitFamilies } from "../exposition/merge.js";
import { escapeLabel } from "../exposition/text.js";
import type { ExporterMetrics, Format, Rendered } from "../metrics/exporter-metrics.js";
import { gzipChunks, OPENMETRICS_TYPE, PROMETHEUS_TYPE } from "../metrics/scrape-format.js";

/** One part of the body: a team's metrics with its label, or the exporter's (no label). */
export interface ExpositionPart {
  readonly metrics: ExporterMetrics;
  /** The team id; undefined for the exporter's part. */
  readonly team?: string;
}

interface SplitCounters {
  readonly counters: Buffer;
  readonly families: FamilyText[];
}

interface SplitGauges {
  readonly gauges: readonly Buffer[];
  readonly families: FamilyText[];
}

/** The merged snapshot families, the parts' Buffers they were made from, and their gzip. */
interface MergedGauges {
  key: readonly (readonly Buffer[])[];
  body: Buffer;
  gzip?: Promise<Buffer[]>;
}

/** The merged body of every part, cached per snapshot of each. */
export class TeamsExposition {
  private readonly split = new Map<ExporterMetrics, SplitGauges>();
  /** Each part's snapshot counters, split and labelled once per snapshot and format. */
  private readonly counters = new Map<ExporterMetrics, Map<Format, SplitCounters>>();
  private merged: MergedGauges = { key: [], body: Buffer.alloc(0) };

  /**
   * `parts`: the parts now (a reload adds and removes teams); `info`: the exporter's extra
   * families (sandbox_team_info), written after its own.
   */
  constructor(
    private readonly parts: () => readonly ExpositionPart[],
    private readonly info: () => string,
  ) {}

  /** The scrape body: every part's snapshot families, then every part's live ones, merged. */
  async render(format: Format, gzip: boolean): Promise<Rendered> {
    const parts = this.parts();
    const read = await Promise.all(parts.map((p) => p.metrics.parts(format)));
    const gauges = this.gauges(
      parts,
      read.map((r) => r.gauges),
    );
    // The counters are the snapshot's (split once); only the registries' live part is made now.
    const tail = mergeFamilies(
      read.map((r, i) => {
        const part = parts[i] as ExpositionPart;
        const live = splitFamilies(r.live, teamLabel(part.team));
        return [...this.countersOf(part, format, r.counters), ...live];
      }),
    );
    const end = Buffer.from(format === "openmetrics" ? `${tail}# EOF\n` : tail, "utf8");
    const contentType = format === "openmetrics" ? OPENMETRICS_TYPE : PROMETHEUS_TYPE;
    if (!gzip) return { body: [gauges.body, end], contentType };
    gauges.gzip ??= gzipChunks([gauges.body]);
    // Every member on the zlib thread pool: a body of many teams runs to tens of MB.
    const [head, rest] = await Promise.all([gauges.gzip, gzipChunks([end])]);
    return { body: [...head, ...rest], contentType, contentEncoding: "gzip" };
  }

  /**
   * The merged snapshot families, made again only when a part's cached Buffers changed, or a part
   * came or went.
   */
  private gauges(
    parts: readonly ExpositionPart[],
    key: readonly (readonly Buffer[])[],
  ): TeamsExposition["merged"] {
    const same =
      key.length === this.merged.key.length && key.every((g, i) => g === this.merged.key[i]);
    if (same) return this.merged;
    // A team removed leaves nothing behind.
    for (const cache of [this.split, this.counters])
      for (const m of cache.keys()) if (!parts.some((p) => p.metrics === m)) cache.delete(m);
    const families = parts.map((p, i) => this.familiesOf(p, key[i] ?? []));
    const info = splitFamilies(this.info());
    const body = Buffer.from(
      mergeFamilies([families[0] ?? [], info, ...families.slice(1)]),
      "utf8",
    );
    this.merged = { key, body };
    return this.merged;
  }

  private countersOf(part: ExpositionPart, format: Format, counters: Buffer): FamilyText[] {
    const byFormat = this.counters.get(part.metrics) ?? new Map<Format, SplitCounters>();
    this.counters.set(part.metrics, byFormat);
    const known = byFormat.get(format);
    if (known?.counters === counters) return known.families;
    const families = splitFamilies(counters.toString("utf8"), teamLabel(part.team));
    byFormat.set(format, { counters, families });
    return families;
  }

  private familiesOf(part: ExpositionPart, gauges: readonly Buffer[]): FamilyText[] {
    const known = this.split.get(part.metrics);
    if (known?.gauges === gauges) return known.families;
    const text = Buffer.concat(gauges as Buffer[]).toString("utf8");
    const families = splitFamilies(text, teamLabel(part.team));
    this.split.set(part.metrics, { gauges, families });
    return families;
  }
}

/** `team="<id>"`, escaped; undefined for the exporter's part. */
function teamLabel(team: string | undefined): string | undefined {
  return team === undefined ? undefined : `team="${escapeLabel(team)}"`;
}
