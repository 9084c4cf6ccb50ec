// Template build health (poll.templateBuilds, off by default): GET /templates every tick, and
// GET /templates/{id}/builds/{buildID}/status once per failed build, for the step and the reason.
// Cluster-wide (shard 0). Its own list read keeps a reading's statuses and reasons consistent;
// when nothing failed it costs that one request per tick.
import { PlatformHttpError, PlatformNotFoundError } from "../platform/http-errors.js";
import type { BuildStatusReason } from "../platform/normalize/normalize.js";
import { mapLimit } from "../util/concurrency.js";
import type { TickCollector } from "./collector.js";

/** Build-status reads in flight at once (only new failures are read). */
const STATUS_CONCURRENCY = 4;

/** E2B's TemplateBuildStatus values, every one exported as a state of the set. */
export const BUILD_STATUSES = ["building", "waiting", "ready", "error"] as const;

/** One template's latest build, as the template list reports it. */
export interface TemplateBuild {
  templateId: string;
  /** The build the list names (E2B's `buildID`, read as the template's version), if any. */
  buildId?: string;
  /** Lower-cased build status; `unknown` when the record has none. */
  status: string;
  /** Why that build failed: only for status `error`, read once per build. */
  failure?: BuildStatusReason;
}

declare module "./snapshot.js" {
  interface TickData {
    templateBuilds: readonly TemplateBuild[];
  }
}

export const templateBuildsCollector: TickCollector<"templateBuilds"> = {
  name: "templateBuilds",
  optional: true,
  runs: (where) => where.clusterWide && where.optIn.has("templateBuilds"),
  read: async ({ reader }, previous) => {
    const templates = await reader.listTemplates();
    // The reasons already read are the previous reading's: a failed build is asked about once.
    const known = new Map<string, BuildStatusReason>();
    for (const b of previous ?? [])
      if (b.failure && b.buildId) known.set(key(b.templateId, b.buildId), b.failure);
    let requests = 1;
    const value = await mapLimit(templates, STATUS_CONCURRENCY, async (t) => {
      const build: TemplateBuild = { templateId: t.id, status: t.status };
      if (t.version) build.buildId = t.version;
      if (t.status !== "error" || !t.version) return build;
      let failure = known.get(key(t.id, t.version));
      if (!failure) {
        requests++;
        try {
          // A failed build without a reason is remembered too, or it would be asked every tick.
          failure = (await reader.templateBuildStatus(t.id, t.version)).reason ?? { message: "" };
        } catch (err) {
          // An answer saying the route is not served decides the collector's capability; any
          // other failure costs only this template its reason, asked again next tick.
          if (notServed(err)) throw err;
          return build;
        }
      }
      build.failure = failure;
      return build;
    });
    return { value, requests };
  },
};

/** A 404, 405 or 403: the platform does not serve build status (see collector.ts failure()). */
function notServed(err: unknown): boolean {
  return (
    err instanceof PlatformNotFoundError ||
    (err instanceof PlatformHttpError && (err.status === 403 || err.status === 405))
  );
}

function key(templateId: string, buildId: string): string {
  return `${templateId}\n${buildId}`;
}
