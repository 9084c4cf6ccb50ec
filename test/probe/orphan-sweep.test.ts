import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Page, Sandbox } from "../../src/platform/types.js";
import { PROBE_TAG_KEY } from "../../src/platform/types.js";
import { sweepOrphans } from "../../src/probe/orphan-sweep.js";
import type { ProbeControl } from "../../src/probe/phase.js";
import { INSTANCE, type ProbeBed, probeBed, proberFor, seriesValue } from "./setup.js";

const TOTAL_MS = 10_000;
let bed: ProbeBed;
beforeAll(async () => {
  bed = await probeBed();
});
afterAll(async () => {
  await bed.close();
});

function add(metadata: Record<string, string>, ageMs: number): string {
  return bed.sim.state.addSandbox({
    metadata,
    startedAt: bed.clock.now() - ageMs,
    state: "running",
  }).sandboxID;
}

describe("the orphan sweep", () => {
  it("deletes old sandboxes tagged with this instance and nothing else", async () => {
    const old = add({ [PROBE_TAG_KEY]: INSTANCE }, TOTAL_MS + 1);
    const young = add({ [PROBE_TAG_KEY]: INSTANCE }, TOTAL_MS - 1);
    const untagged = add({ team: "a" }, TOTAL_MS * 10);
    const otherInstance = add({ [PROBE_TAG_KEY]: "another-exporter" }, TOTAL_MS * 10);
    const { prober, registry } = proberFor(bed, { totalTimeoutMs: TOTAL_MS });
    expect(await prober.sweepOrphans()).toBe(1);
    const left = bed.sim.state.sandboxes;
    expect(left.has(old)).toBe(false);
    expect([young, untagged, otherInstance].every((id) => left.has(id))).toBe(true);
    expect(await seriesValue(registry, "sandbox_probe_orphans_deleted_total")).toBe(1);
    expect(prober.status().lastSweep).toMatchObject({ deleted: 1, error: null });

    // The young one becomes an orphan once it is older than the total timeout.
    bed.clock.advance(2);
    expect(await prober.sweepOrphans()).toBe(1);
    expect(left.has(young)).toBe(false);
    expect(await seriesValue(registry, "sandbox_probe_orphans_deleted_total")).toBe(2);
  });

  it("runs at start, so a sandbox left by a killed exporter is deleted by the next one", async () => {
    const leftover = add({ [PROBE_TAG_KEY]: INSTANCE }, TOTAL_MS + 1);
    const { prober } = proberFor(bed, { totalTimeoutMs: TOTAL_MS });
    await prober.start();
    expect(bed.sim.state.sandboxes.has(leftover)).toBe(false);
    expect(prober.status().orphansDeleted).toBe(1);
    await prober.stop();
  });

  it("checks the tag itself when the platform ignores the metadata filter", async () => {
    const now = 1_000_000;
    const sandbox = (id: string, metadata: Record<string, string>): Sandbox => ({
      id,
      templateId: "t",
      state: "running",
      startedAt: 0,
      metadata,
      extra: {},
    });
    const deleted: string[] = [];
    const pages: Record<string, Page<Sandbox>> = {
      first: {
        items: [sandbox("a", { [PROBE_TAG_KEY]: INSTANCE }), sandbox("b", {})],
        nextToken: "n1",
      },
      n1: { items: [sandbox("c", { [PROBE_TAG_KEY]: "x" })], nextToken: "n1" },
    };
    const control = {
      listSandboxes: async (q: { nextToken?: string; metadata?: string }) => {
        expect(q.metadata).toBe(new URLSearchParams({ [PROBE_TAG_KEY]: INSTANCE }).toString());
        return pages[q.nextToken ?? "first"]!;
      },
      deleteSandbox: async (id: string) => {
        deleted.push(id);
      },
    } as unknown as ProbeControl;
    const r = await sweepOrphans(control, {
      instance: INSTANCE,
      minAgeMs: 10,
      now,
      signal: new AbortController().signal,
    });
    // The repeated token "n1" ends the walk instead of looping.
    expect(r.deleted).toEqual(["a"]);
    expect(deleted).toEqual(["a"]);
  });
});
