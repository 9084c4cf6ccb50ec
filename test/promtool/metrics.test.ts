// promtool reads the bodies the metrics unit tests build (the same builders, test/metrics/): after
// a long run of random fleet changes, with the usage collector's families, and with a 1 MB label
// value cut to 1,024 characters.
import { beforeAll, describe, expect, it } from "vitest";
import { promtool, promtoolReady } from "../helpers/promtool.js";
import { longRunText } from "../metrics/fleet-ops.js";
import { hugeLabelText, usageText } from "../metrics/scenes.js";

beforeAll(async () => {
  expect(await promtoolReady(), "promtool never appeared at /usr/bin/promtool").toBe(true);
}, 90_000);

describe("promtool check metrics", () => {
  it("passes after a long run of changes with per-sandbox series on", async () => {
    const text = await longRunText();
    expect(text).toContain("sandbox_sandbox_info{");
    const r = promtool(text);
    expect(r.output).toBe("");
    expect(r.status).toBe(0);
  });

  it("passes the usage collector's series, data age, usage families and guard fields", async () => {
    const text = await usageText();
    expect(text).toContain('sandbox_sandbox_cpu_used_ratio{sandbox_id="a"} 0.5');
    expect(promtool(text).status).toBe(0);
  });

  it("passes a body whose 1 MB label value was cut", async () => {
    const text = await hugeLabelText();
    expect(text).toMatch(/team="v+\.\.\.\[truncated [0-9a-f]{8}\]"/);
    expect(promtool(text).status).toBe(0);
  });
});
