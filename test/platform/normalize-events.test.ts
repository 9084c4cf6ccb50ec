import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import {
  normalizeLifecycleEvent,
  normalizeLifecycleEventPage,
} from "../../src/platform/normalize/events.js";
import { InvalidValues } from "../../src/platform/normalize/invalid-values.js";
import { NormalizeError } from "../../src/platform/normalize/values.js";

const DIR = new URL("../fixtures/e2b/lifecycle-events/", import.meta.url);
const fixture = (name: string): unknown => JSON.parse(readFileSync(new URL(name, DIR), "utf8"));

describe("normalizeLifecycleEvent", () => {
  it("reads the events API answer of E2B's documentation (camelCase, prefixed types, eventData null)", () => {
    const page = normalizeLifecycleEventPage(fixture("events-api.json"), undefined);
    expect(page.items).toEqual([
      {
        id: "f5911677-cb60-498f-afed-f68143b3cc59",
        type: "killed",
        // biome-ignore lint/suspicious/noTemplateCurlyInString: E2B's document writes it literally.
        sandboxId: "${SANDBOX_ID}",
        templateId: "rki5dems9wqfm4r03t7g",
        executionId: "1dae9e1c-9957-4ce7-a236-a99d5779aadf",
        buildId: "a979a14b-bdcc-49e6-bc04-1189fc9fe7c2",
        teamId: "460355b3-4f64-48f9-9a16-4442817f79f5",
        timestamp: Date.UTC(2025, 7, 6, 20, 59, 36),
        // eventData null: E2B's own default for a kill without a reason.
        killReason: "unknown",
      },
      expect.objectContaining({ type: "updated", timestamp: Date.UTC(2025, 7, 6, 20, 59, 29) }),
      expect.objectContaining({ type: "created", id: "0568572b-a2ac-4e5f-85fa-fae90905f556" }),
    ]);
    expect(page.items[1]).not.toHaveProperty("killReason");
  });

  it("reads the webhook payload of E2B's documentation", () => {
    const e = normalizeLifecycleEvent(fixture("webhook-payload.json"));
    expect(e).toEqual({
      id: "<event-id>",
      type: "<sandbox-event-type>",
      sandboxId: "<your-sandbox-id>",
      templateId: "<your-template-id>",
      executionId: "<sandbox-unique-execution-id>",
      buildId: "<template-build-id>",
      teamId: "<your-team-id>",
      timestamp: Date.UTC(2025, 7, 6, 20, 59, 24),
      metadata: { "<custom-key>": "<custom-value>" },
    });
  });

  it("reads the snake_case spelling with the orchestrator's kill_reason and execution_time (ms)", () => {
    const e = normalizeLifecycleEvent(fixture("webhook-snake-case.json"));
    expect(e).toEqual({
      id: "6c3b2f0e-8f1a-4f5e-9a55-2b7d0c1e4a90",
      type: "killed",
      sandboxId: "<your-sandbox-id>",
      templateId: "rki5dems9wqfm4r03t7g",
      executionId: "1dae9e1c-9957-4ce7-a236-a99d5779aadf",
      buildId: "a979a14b-bdcc-49e6-bc04-1189fc9fe7c2",
      teamId: "460355b3-4f64-48f9-9a16-4442817f79f5",
      timestamp: Date.UTC(2025, 7, 6, 20, 59, 36, 123),
      killReason: "timeout",
      executionSeconds: 12.123,
      execution: {
        startedAt: Date.UTC(2025, 7, 6, 20, 59, 24),
        vcpuCount: 2,
        memoryMB: 512,
        durationMs: 12_123,
      },
      metadata: { "<custom-key>": "<custom-value>" },
    });
  });

  it("takes a type without the prefix, and an unlisted kill reason as unknown (counted)", () => {
    const invalid = new InvalidValues();
    const e = normalizeLifecycleEvent(
      {
        id: "e1",
        type: "KILLED",
        sandbox_id: "s1",
        timestamp: "2025-08-06T20:59:36+02:00",
        event_data: { kill_reason: "meteor" },
      },
      invalid,
    );
    expect(e).toMatchObject({ type: "killed", killReason: "unknown", templateId: "" });
    expect(e.timestamp).toBe(Date.UTC(2025, 7, 6, 18, 59, 36));
    expect(invalid.get("event", "kill_reason")).toBe(1);
  });

  it("drops an optional field that does not parse, counts it, and keeps the event", () => {
    const invalid = new InvalidValues();
    const e = normalizeLifecycleEvent(
      {
        id: "e2",
        type: "sandbox.lifecycle.killed",
        sandboxId: "s2",
        timestamp: "2025-08-06T20:59:36Z",
        sandboxTemplateId: 42,
        eventData: { kill_reason: "orphaned", execution: { execution_time: "long" } },
      },
      invalid,
    );
    expect(e).toMatchObject({ killReason: "orphaned", templateId: "" });
    expect(e).not.toHaveProperty("executionSeconds");
    expect(invalid.entries()).toEqual([
      { resource: "event", field: "template_id", count: 1 },
      { resource: "event", field: "execution_time", count: 1 },
    ]);
  });

  it.each([
    ["id", { type: "created", sandboxId: "s", timestamp: "2025-08-06T20:59:36Z" }],
    ["type", { id: "e", sandboxId: "s", timestamp: "2025-08-06T20:59:36Z" }],
    ["sandboxId", { id: "e", type: "created", timestamp: "2025-08-06T20:59:36Z" }],
    ["timestamp", { id: "e", type: "created", sandboxId: "s", timestamp: "yesterday" }],
  ])("rejects a record without a valid %s with a NormalizeError naming it", (field, raw) => {
    let caught: unknown;
    try {
      normalizeLifecycleEvent(raw);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(NormalizeError);
    expect(caught).toMatchObject({ code: "ERR_NORMALIZE", path: `event.${field}` });
  });

  it("keeps a bad record's slot in a page and counts it by the field that failed", () => {
    const invalid = new InvalidValues();
    const good = { id: "e", type: "created", sandboxId: "s", timestamp: "2025-08-06T20:59:36Z" };
    const page = normalizeLifecycleEventPage([good, { ...good, id: "" }, "x"], invalid);
    expect(page.items.map((e) => e?.id)).toEqual(["e", undefined, undefined]);
    expect(invalid.get("event", "id")).toBe(1);
    expect(invalid.get("event", "record")).toBe(1);
    expect(() => normalizeLifecycleEventPage({ events: [] }, invalid)).toThrow(NormalizeError);
  });
});
