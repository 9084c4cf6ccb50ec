// Template build health (the templateBuilds collector, poll.templateBuilds): the latest build's
// status as a state-set, and why a failed build failed. Exported by shard 0 only. Build count,
// spawn count and last spawn time are the generic template families (sandbox_template_builds,
// sandbox_template_spawns, sandbox_template_last_spawned_at_timestamp_seconds): not repeated here.
import { family, gauge, setting } from "../../exposition/descriptor.js";
import { StateMemory } from "../../exposition/state-memory.js";
import { type Family, labels } from "../../exposition/text.js";
import type { ValueGuard } from "../../exposition/value-guard.js";
import type { FamiliesContext, FamilyUpdater } from "../collector.js";
import { BUILD_STATUSES, type TemplateBuild, type TemplateBuilds } from "./template-builds.js";

const LIST = "GET /templates";
const STATUS = "GET /templates/{id}/builds/{buildID}/status";

const ON = { on: setting("poll.templateBuilds"), flavor: "e2b" } as const;

export const BUILD_STATUS = gauge(
  "template_build_status",
  `Status of the template's latest build as a state-set (building, waiting, ready, error): 1 for the current value. Cached from the last successful poll of ${LIST}.`,
  ["template", "status"],
  ON,
);
export const BUILD_FAILURE_INFO = gauge(
  "template_build_failure_info",
  `The template's latest build failed: its id, the step that failed and the reason, value 1. Read once per failed build from ${STATUS}.`,
  ["template", "build_id", "step", "message"],
  ON,
);
export const BUILD_FAILURE_REASONS_UNREAD = gauge(
  "template_build_failure_reasons_unread",
  `Failed latest builds whose reason is not read yet: queued behind the status reads of earlier ticks (at most poll.templateBuildsMaxReads a tick, longest waiting first) or backing off after a read of ${STATUS} that failed.`,
  [],
  ON,
);
export const TEMPLATE_BUILD_FAMILIES = [
  BUILD_STATUS,
  BUILD_FAILURE_INFO,
  BUILD_FAILURE_REASONS_UNREAD,
] as const;

/** The collector's families: the updater renders each reading. */
export function templateBuildFamilies({ ns }: FamiliesContext): FamilyUpdater<TemplateBuilds> {
  const families = new TemplateBuildFamilies(ns);
  return (builds, { guard }) => families.render(builds, guard);
}

/** Renders the build families; remembers statuses outside E2B's four so they keep a 0 series. */
export class TemplateBuildFamilies {
  private readonly statuses = new StateMemory();

  constructor(private readonly ns: string) {}

  /** The families of the collector's latest data (one record per template id). */
  render(builds: readonly TemplateBuild[], guard: ValueGuard): Family[] {
    const unique = [...new Map(builds.map((b) => [b.templateId, b])).values()];
    const states = this.statuses.observe([...BUILD_STATUSES, ...unique.map((b) => b.status)]);
    const status = family(this.ns, BUILD_STATUS);
    const failure = family(this.ns, BUILD_FAILURE_INFO);
    const unread = family(this.ns, BUILD_FAILURE_REASONS_UNREAD);
    unread.add("", unique.filter((b) => b.unread !== undefined).length);
    for (const b of unique) {
      for (const st of states)
        status.add(
          labels(
            [
              ["template", b.templateId],
              ["status", st],
            ],
            guard,
          ),
          st === b.status ? 1 : 0,
        );
      if (b.status !== "error" || !b.failure) continue;
      failure.add(
        labels(
          [
            ["template", b.templateId],
            ["build_id", b.buildId ?? ""],
            ["step", b.failure.step ?? ""],
            ["message", b.failure.message],
          ],
          guard,
        ),
        1,
      );
    }
    return [status, failure, unread];
  }
}
