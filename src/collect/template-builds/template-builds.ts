// Template build health (poll.templateBuilds, off by default): GET /templates every tick, and
// GET /templates/{id}/builds/{buildID}/status once per failed build, for the step and the reason.
// Cluster-wide (shard 0). Its own list read keeps a reading's statuses and reasons consistent;
// when nothing failed it costs that one request per tick. Status reads are capped per tick
// (poll.templateBuildsMaxReads), longest-waiting first, each one attempt; a build whose read
// failed waits doubling ticks before the next, so a broken status route costs little.
import { PlatformHttpError, PlatformNotFoundError } from "../../platform/http-errors.js";
import type { BuildStatusReason } from "../../platform/normalize/normalize.js";
import { mapLimit } from "../../util/concurrency.js";
import type { Reading, TickCollector, TickContext } from "../collector.js";
import { TEMPLATE_BUILD_FAMILIES, templateBuildFamilies } from "./template-build-families.js";
import { templateBuildsSlice } from "./template-builds-settings.js";

/** Build-status reads in flight at once. */
const STATUS_CONCURRENCY = 4;
/** Most ticks a failed build waits between two status reads after reads that failed. */
export const MAX_BACKOFF_TICKS = 32;

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
  /** A failed build whose reason is not read yet: its place in the read queue and its backoff. */
  unread?: UnreadReason;
}

/** Where a failed build without its reason stands in the queue of status reads. */
export interface UnreadReason {
  /** When it joined the queue: first listed as failed, or its last status read (epoch ms). */
  queuedAt: number;
  /** Status reads of this build that failed in a row. */
  failures: number;
  /** Ticks it still waits before its next status read. */
  waitTicks: number;
}

/** One reading: every template's latest build, and whether build status was ever read here. */
export type TemplateBuilds = readonly TemplateBuild[] & {
  /** A status read has succeeded: from then on a 404, 403 or 405 is about one build, not the route. */
  readonly statusServed?: boolean;
};

declare module "../snapshot.js" {
  interface TickData {
    templateBuilds: TemplateBuilds;
  }
}

export const templateBuildsCollector: TickCollector<"templateBuilds", typeof templateBuildsSlice> =
  {
    name: "templateBuilds",
    optional: true,
    optIn: "templateBuilds",
    settings: templateBuildsSlice,
    runs: (where) => where.clusterWide,
    read: (ctx, previous) => readBuilds(ctx, previous),
    families: templateBuildFamilies,
    declares: TEMPLATE_BUILD_FAMILIES,
  };

/** One reading: the list, then the status of the failed builds due (at most the cap). */
async function readBuilds(
  { reader, clock, poll }: TickContext,
  previous: TemplateBuilds | undefined,
): Promise<Reading<TemplateBuilds>> {
  const templates = await reader.listTemplates();
  const now = clock.now();
  // What the previous reading knew of each build: its reason, or its place in the queue.
  const before = new Map<string, TemplateBuild>();
  for (const b of previous ?? []) if (b.buildId) before.set(key(b.templateId, b.buildId), b);
  const due: TemplateBuild[] = [];
  const value = templates.map((t): TemplateBuild => {
    const build: TemplateBuild = { templateId: t.id, status: t.status };
    if (t.version) build.buildId = t.version;
    if (t.status !== "error" || !t.version) return build;
    const was = before.get(key(t.id, t.version));
    if (was?.failure) {
      build.failure = was.failure;
      return build;
    }
    const unread = was?.unread ?? { queuedAt: now, failures: 0, waitTicks: 0 };
    build.unread = { ...unread, waitTicks: Math.max(0, unread.waitTicks - 1) };
    if (unread.waitTicks === 0) due.push(build);
    return build;
  });
  due.sort(byQueue);
  const chosen = due.slice(0, poll.templateBuildsMaxReads);
  let served = previous?.statusServed === true;
  let stopped: unknown;
  let asked = 0;
  await mapLimit(chosen, STATUS_CONCURRENCY, async (build) => {
    if (stopped !== undefined && !served) return;
    asked++;
    try {
      // A failed build without a reason is remembered too, or it would be asked every tick.
      const status = await reader.templateBuildStatus(build.templateId, build.buildId ?? "");
      build.failure = status.reason ?? { message: "" };
      delete build.unread;
      served = true;
    } catch (err) {
      // An answer saying the route is not served, before any read succeeded, decides the
      // collector's capability; once one did, it is about this build (deleted since, say), and
      // like any other failure costs only this build its reason, asked again after its backoff.
      if (notServed(err)) stopped ??= err;
      const failures = (build.unread?.failures ?? 0) + 1;
      build.unread = { queuedAt: now, failures, waitTicks: backoffTicks(failures) };
    }
  });
  if (stopped !== undefined && !served) throw stopped;
  return {
    value: served ? Object.assign(value, { statusServed: true }) : value,
    requests: 1 + asked,
  };
}

/** Ticks a build waits after `failures` status reads failed in a row: 1, 2, 4 ... capped. */
export function backoffTicks(failures: number): number {
  return Math.min(MAX_BACKOFF_TICKS, 2 ** Math.max(0, failures - 1));
}

/** Longest waiting first; at the same time, one never tried before one that failed. */
function byQueue(a: TemplateBuild, b: TemplateBuild): number {
  const [x, y] = [a.unread, b.unread];
  if (!x || !y) return 0;
  if (x.queuedAt !== y.queuedAt) return x.queuedAt - y.queuedAt;
  if (x.failures !== y.failures) return x.failures - y.failures;
  return a.templateId < b.templateId ? -1 : a.templateId > b.templateId ? 1 : 0;
}

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
