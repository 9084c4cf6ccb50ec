// The http step: starts a service in the sandbox and requests its port through the platform's
// proxy as a user's own users do (blackbox_exporter's http prober on a sandbox port). With
// http.allowPublicTraffic false, create asks for a restricted sandbox and the step checks that a
// request without the traffic token is refused.

import type { ProbeControl, ProbeRun } from "../../phase.js";
import { defineStep } from "../../step.js";
import { askingForTraffic, httpRequestPhase, httpWaitReadyPhase } from "./http.js";

/** `control` whose create asks for restricted traffic when the http settings say so. */
export function askingForRestrictedTraffic(control: ProbeControl, run: ProbeRun): ProbeControl {
  if (run.settings.http?.allowPublicTraffic !== false) return control;
  return askingForTraffic(control, { autoResume: false, allowPublicTraffic: false }, (c) => {
    if (c.trafficToken !== undefined) run.trafficToken = c.trafficToken;
  });
}

export const httpStep = defineStep({
  name: "http",
  description:
    "starts a service on a sandbox port and requests it through the proxy: status, the nonce in the body, the traffic token",
  phases: ["http_wait_ready", "http_request"],
  reasons: [
    "port_closed",
    "not_found",
    "bad_status",
    "body_mismatch",
    "body_too_large",
    "not_restricted",
    "wrong_output",
    "exit_code",
    "missing_end",
  ],
  create: askingForRestrictedTraffic,
  run: (ctx) =>
    ctx.phases([
      ["http_wait_ready", httpWaitReadyPhase],
      ["http_request", httpRequestPhase],
    ]),
});
