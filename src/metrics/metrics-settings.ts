// The `metrics:` settings: the metric name prefix and the bounds on per-sandbox and label series.
import { z } from "zod";
import { bool, int, text } from "../config/fields.js";
import type { SectionOf } from "../config/slice.js";
import { defineSlice, ENV_PREFIX } from "../config/slice.js";

const X = ENV_PREFIX;

const metricPrefix = text.regex(/^[a-zA-Z_][a-zA-Z0-9_]*$/, {
  error: "a metric name prefix matching [a-zA-Z_][a-zA-Z0-9_]*",
});

/** A metadata key that still names something once snake_cased into a label (see exposition/naming.ts). */
const metadataKey = text.regex(/[A-Za-z0-9]/, {
  error: "a metadata key with at least one letter or digit",
});

export const metricsSlice = defineSlice({
  key: "metrics",
  fields: {
    namespace: metricPrefix.default("sandbox"),
    perSandboxMetrics: bool.default(false),
    metadataLabels: z.array(metadataKey, { error: "a list of metadata keys" }).default([]),
    maxSandboxSeries: int(0).default(50_000),
    /** Longer label values are truncated by the metrics layer. */
    maxLabelValueLength: int(16).default(1024),
    /** Templates with lifecycle event series of their own; the events of others count as `other`. */
    maxEventTemplates: int(1, 2_000).default(200),
  },
  settings: [
    {
      path: "metrics.namespace",
      env: `${X}NAMESPACE`,
      flag: "namespace",
      kind: "string",
      help: "metric name prefix",
    },
    {
      path: "metrics.perSandboxMetrics",
      env: `${X}PER_SANDBOX_METRICS`,
      flag: "per-sandbox-metrics",
      kind: "bool",
      help: "export per-sandbox series (bare flag or =true/false)",
    },
    {
      path: "metrics.metadataLabels",
      env: `${X}METADATA_LABELS`,
      flag: "metadata-labels",
      kind: "list",
      help: "metadata keys allowed as labels (comma list)",
    },
    {
      path: "metrics.maxSandboxSeries",
      env: `${X}MAX_SANDBOX_SERIES`,
      flag: "max-sandbox-series",
      kind: "int",
      help: "cap of per-sandbox series",
    },
    {
      path: "metrics.maxLabelValueLength",
      env: `${X}MAX_LABEL_VALUE_LENGTH`,
      flag: "max-label-value-length",
      kind: "int",
      help: "label values longer than this are truncated",
      doc: "label values longer than this (at least 16) are cut to it, ending in `...[truncated <hash>]`",
    },
    {
      path: "metrics.maxEventTemplates",
      env: `${X}MAX_EVENT_TEMPLATES`,
      flag: "max-event-templates",
      kind: "int",
      help: "templates with lifecycle event series of their own (the rest count as template other)",
      doc: "templates with lifecycle event series of their own (1–2,000); the events of the others count under template `other` (`sandbox_exporter_lifecycle_events_folded_total`). Each template has about 31 lines (6 event types, 8 kill reasons, the execution histogram): about 6,200 at 200",
    },
  ],
});

declare module "../config/settings.js" {
  interface Settings {
    metrics: SectionOf<typeof metricsSlice>;
  }
}
