// GET /templates/{templateID}/builds/{buildID}/status in E2B mode: the answer has the shape of
// E2B's TemplateBuildInfo, pinned by a fixture written by hand from e2b-dev/infra spec/openapi.yml
// (TemplateBuildInfo, BuildStatusReason, BuildLogEntry), not from the simulator.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { normalizeBuildStatus } from "../../src/platform/normalize/normalize.js";
import { type Simulator, startSimulator } from "../../src/simulator/index.js";

/** A failed build as E2B's document describes it: required templateID, buildID, status, logs, logEntries. */
const E2B_FAILED_BUILD = {
  templateID: "rki5dems9wqfm4r03t7g",
  buildID: "4c5b3a2e-1f0d-4e9c-8b7a-6d5c4b3a2f10",
  status: "error",
  logs: [],
  logEntries: [],
  reason: {
    message: 'failed to run command "npm ci": exit status 1',
    step: "run",
    logEntries: [
      {
        timestamp: "2026-03-01T10:00:00Z",
        message: "npm ERR! code ERESOLVE",
        level: "error",
        step: "run",
      },
    ],
  },
};

let sim: Simulator;
beforeAll(async () => {
  sim = await startSimulator({ flavor: "e2b", sandboxes: 0, templates: 2 });
});
afterAll(async () => {
  await sim.close();
});

async function status(templateId: string, buildId: string): Promise<Response> {
  return fetch(`${sim.apiUrl}/templates/${templateId}/builds/${buildId}/status`);
}

describe("E2B template build status", () => {
  it("reads E2B's documented answer: the status, and the failed step and message", () => {
    expect(
      normalizeBuildStatus(E2B_FAILED_BUILD, { templateId: "asked", buildId: "asked" }),
    ).toEqual({
      templateId: "rki5dems9wqfm4r03t7g",
      buildId: "4c5b3a2e-1f0d-4e9c-8b7a-6d5c4b3a2f10",
      status: "error",
      reason: { message: 'failed to run command "npm ci": exit status 1', step: "run" },
    });
    expect(() =>
      normalizeBuildStatus({ templateID: "t" }, { templateId: "t", buildId: "b" }),
    ).toThrow(/build\.status: expected a build status/);
  });

  it("answers a failed build with the fields and types of the fixture", async () => {
    const t = sim.state.templates[0]!.templateID;
    const build = sim.state.buildTemplate(t, "error", {
      message: 'failed to run command "npm ci": exit status 1',
      step: "run",
    });
    const r = await status(t, build);
    expect(r.status).toBe(200);
    const body = (await r.json()) as Record<string, unknown>;
    expect(Object.keys(body).sort()).toEqual(Object.keys(E2B_FAILED_BUILD).sort());
    for (const [k, v] of Object.entries(E2B_FAILED_BUILD)) expect(typeof body[k], k).toBe(typeof v);
    const reason = body.reason as Record<string, unknown>;
    expect(Object.keys(reason).sort()).toEqual(Object.keys(E2B_FAILED_BUILD.reason).sort());
    expect(body).toMatchObject({ templateID: t, buildID: build, status: "error" });
    expect(reason).toMatchObject({ step: "run" });
  });

  it("answers an earlier build of the template too, a ready build without a reason, and 404 for another's", async () => {
    const t = sim.state.templates[1]!.templateID;
    const failed = sim.state.buildTemplate(t, "error", { message: "out of disk" });
    const fixed = sim.state.buildTemplate(t);
    expect(sim.state.templates[1]!).toMatchObject({ buildID: fixed, status: "ready" });
    const old = (await (await status(t, failed)).json()) as Record<string, unknown>;
    expect(old).toMatchObject({ status: "error", reason: { message: "out of disk" } });
    const now = (await (await status(t, fixed)).json()) as Record<string, unknown>;
    expect(now).toMatchObject({ status: "ready" });
    expect(now).not.toHaveProperty("reason");
    const other = sim.state.templates[0]!.templateID;
    expect((await status(other, failed)).status).toBe(404);
  });
});
