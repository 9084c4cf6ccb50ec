// The templates collector's families: status, version, replicas, error and every numeric field of
// each template, and the template count when the platform serves no cluster overview (E2B).

import { family, gauge, TEAM_LABEL } from "../../exposition/descriptor.js";
import {
  cached,
  numericFamilies,
  StatusSet,
  uniqueById,
} from "../../exposition/record-families.js";
import { type Family, labels } from "../../exposition/text.js";
import type { Template } from "../../platform/types.js";
import type { FamiliesContext, FamilyUpdater } from "../collector.js";

const ENDPOINT = "/templates";
const RESERVED = new Set(["status", "info", "replicas", "error"]);
const EP = cached(ENDPOINT);

export const TEMPLATE_STATUS = gauge(
  "template_status",
  `Status of the template as a state-set: 1 for the current value, 0 for others seen. ${EP}`,
  ["template", "status", TEAM_LABEL],
);
export const TEMPLATE_INFO = gauge("template_info", `Template version, value 1. ${EP}`, [
  "template",
  "version",
  TEAM_LABEL,
]);
export const TEMPLATE_REPLICAS = gauge("template_replicas", `Replicas. ${EP}`, ["template"]);
export const TEMPLATE_ERROR = gauge(
  "template_error",
  `1 when the template reports an error, else 0. ${EP}`,
  ["template", TEAM_LABEL],
);
/** A family per numeric field of the templates; the fields are the simulator's records'. */
export const TEMPLATE_FIELD = gauge(
  "template_{metric}",
  `Field {field} of the template. ${EP}`,
  ["template", TEAM_LABEL],
  {
    fields: [
      { field: "build_count" },
      { field: "cpu_count" },
      { field: "created_at_timestamp_seconds" },
      { field: "disk_size_mb" },
      { field: "last_spawned_at_timestamp_seconds", flavor: "e2b" },
      { field: "memory_mb" },
      { field: "spawn_count" },
      { field: "updated_at_timestamp_seconds" },
    ],
  },
);
/** The overview's template count, where the platform serves no overview (E2B). */
export const CLUSTER_TEMPLATES = gauge(
  "cluster_templates",
  `Templates listed. Derived from GET ${ENDPOINT} because the platform serves no GET /cluster/overview. ${EP}`,
  [TEAM_LABEL],
  { variant: true },
);
export const TEMPLATE_FAMILIES = [
  TEMPLATE_STATUS,
  TEMPLATE_INFO,
  TEMPLATE_REPLICAS,
  TEMPLATE_ERROR,
  TEMPLATE_FIELD,
  CLUSTER_TEMPLATES,
] as const;

/** Makes the families of the template list; the updater renders one reading. */
export function templateFamilies({ ns }: FamiliesContext): FamilyUpdater<readonly Template[]> {
  const status = new StatusSet(ns, TEMPLATE_STATUS);
  return (list, { snapshot, guard, skipped }) => {
    const templates = uniqueById(list);
    const out: Family[] = [];
    if (!snapshot.overview) out.push(family(ns, CLUSTER_TEMPLATES).add("", templates.length));
    out.push(status.render(templates, guard));
    const info = family(ns, TEMPLATE_INFO);
    const replicas = family(ns, TEMPLATE_REPLICAS);
    const error = family(ns, TEMPLATE_ERROR);
    for (const t of templates) {
      const l = labels([["template", t.id]], guard);
      info.add(
        labels(
          [
            ["template", t.id],
            ["version", t.version ?? ""],
          ],
          guard,
        ),
        1,
      );
      if (t.replicas !== undefined) replicas.add(l, t.replicas);
      error.add(l, t.error ? 1 : 0);
    }
    out.push(info, replicas, error);
    out.push(...numericFamilies(ns, TEMPLATE_FIELD, templates, RESERVED, ENDPOINT, skipped, guard));
    return out;
  };
}
