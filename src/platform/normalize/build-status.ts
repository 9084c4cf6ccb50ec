// E2B's TemplateBuildInfo (GET /templates/{templateID}/builds/{buildID}/status): the build's
// status and, for a failed build, the reason (message and the step that failed).
import { isRecord, NormalizeError } from "./values.js";

/** Longest reason message kept; the label guard cuts it further for metrics. */
const MAX_MESSAGE_CHARS = 4_096;

/** Why a build ended as it did (E2B: BuildStatusReason); reported for `error` builds. */
export interface BuildStatusReason {
  message: string;
  /** The build step that failed, when the platform says. */
  step?: string;
}

/** One template build's status. */
export interface TemplateBuildStatus {
  templateId: string;
  buildId: string;
  /** Lower-cased: building, waiting, ready, error (E2B's TemplateBuildStatus). */
  status: string;
  reason?: BuildStatusReason;
}

/**
 * Reads a TemplateBuildInfo; `status` is required, the ids default to the ones asked for, and a
 * reason without a string message is left out (its logs are not kept).
 */
export function normalizeBuildStatus(
  raw: unknown,
  asked: { templateId: string; buildId: string },
): TemplateBuildStatus {
  if (!isRecord(raw)) throw new NormalizeError("build", "a TemplateBuildInfo object", raw);
  const status = raw.status;
  if (typeof status !== "string" || status === "")
    throw new NormalizeError("build.status", "a build status", status);
  const out: TemplateBuildStatus = {
    templateId: typeof raw.templateID === "string" ? raw.templateID : asked.templateId,
    buildId: typeof raw.buildID === "string" ? raw.buildID : asked.buildId,
    status: status.toLowerCase(),
  };
  const r = raw.reason;
  if (isRecord(r) && typeof r.message === "string") {
    out.reason = { message: r.message.slice(0, MAX_MESSAGE_CHARS) };
    if (typeof r.step === "string" && r.step !== "") out.reason.step = r.step;
  }
  return out;
}
