// The templates collector's families: status, version, replicas, error and every numeric field of
// each template, and the template count when the platform serves no cluster overview (E2B).

import {
  cached,
  numericFamilies,
  StatusSet,
  uniqueById,
} from "../../metrics/exposition/record-families.js";
import { Family, labels } from "../../metrics/exposition/text.js";
import type { Template } from "../../platform/types.js";
import type { FamiliesContext, FamilyUpdater } from "../collector.js";

const ENDPOINT = "/templates";
const RESERVED = new Set(["status", "info", "replicas", "error"]);

/** Makes the families of the template list; the updater renders one reading. */
export function templateFamilies({ ns }: FamiliesContext): FamilyUpdater<readonly Template[]> {
  const status = new StatusSet(ns, "template", ENDPOINT);
  return (list, { snapshot, guard, skipped }) => {
    const templates = uniqueById(list);
    const out: Family[] = [];
    if (!snapshot.overview)
      out.push(
        new Family(
          `${ns}_cluster_templates`,
          "gauge",
          `Templates listed. Derived from GET ${ENDPOINT} because the platform serves no GET /cluster/overview. ${cached(ENDPOINT)}`,
        ).add("", templates.length),
      );
    out.push(status.render(templates, guard));
    const ep = cached(ENDPOINT);
    const info = new Family(`${ns}_template_info`, "gauge", `Template version, value 1. ${ep}`);
    const replicas = new Family(`${ns}_template_replicas`, "gauge", `Replicas. ${ep}`);
    const error = new Family(
      `${ns}_template_error`,
      "gauge",
      `1 when the template reports an error, else 0. ${ep}`,
    );
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
    out.push(...numericFamilies(ns, "template", templates, RESERVED, ENDPOINT, skipped, guard));
    return out;
  };
}
