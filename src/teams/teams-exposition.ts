// The scrape body of several teams: the exporter's part (its own families and the cluster's, no
// team label) and each team's part with `team="<id>"` on every sample, each family written once.
// A team's snapshot families are split and labelled once per snapshot; the merged body is made
// again only when a part's snapshot changed. The live registries are merged at every scrape.
import { gzipSync } from "node:zlib";
import type { ExporterMetrics, Format, Rendered } from "../metrics/exporter-metrics.js";
import { type FamilyText, mergeFamilies, splitFamilies } from "../metrics/exposition/merge.js";
import { escapeLabel } from "../metrics/exposition/text.js";
import {
  GZIP_LEVEL,
  gzipChunks,
  OPENMETRICS_TYPE,
  PROMETHEUS_TYPE,
} from "../metrics/scrape-format.js";

/** One part of the body: a team's metrics with its label, or the exporter's (no label). */
export interface ExpositionPart {
  readonly metrics: ExporterMetrics;
  /** The team id; undefined for the exporter's part. */
  readonly team?: string;
}

interface SplitGauges {
  readonly gauges: readonly Buffer[];
  readonly families: FamilyText[];
}

/** The merged body of every part, cached per snapshot of each. */
export class TeamsExposition {
  private readonly split = new Map<ExporterMetrics, SplitGauges>();
  private merged: { key: readonly (readonly Buffer[])[]; body: Buffer; gzip?: Promise<Buffer> } = {
    key: [],
    body: Buffer.alloc(0),
  };

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
    const tail = mergeFamilies(
      read.map((r, i) => splitFamilies(r.tail.toString("utf8"), teamLabel(parts[i]?.team))),
    );
    const end = Buffer.from(format === "openmetrics" ? `${tail}# EOF\n` : tail, "utf8");
    const contentType = format === "openmetrics" ? OPENMETRICS_TYPE : PROMETHEUS_TYPE;
    if (!gzip) return { body: [gauges.body, end], contentType };
    gauges.gzip ??= gzipChunks([gauges.body]);
    return {
      body: [await gauges.gzip, gzipSync(end, { level: GZIP_LEVEL })],
      contentType,
      contentEncoding: "gzip",
    };
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
    for (const m of this.split.keys())
      if (!parts.some((p) => p.metrics === m)) this.split.delete(m);
    const families = parts.map((p, i) => this.familiesOf(p, key[i] ?? []));
    const info = splitFamilies(this.info());
    const body = Buffer.from(
      mergeFamilies([families[0] ?? [], info, ...families.slice(1)]),
      "utf8",
    );
    this.merged = { key, body };
    return this.merged;
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
