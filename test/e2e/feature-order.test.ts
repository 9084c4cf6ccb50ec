// The order of the features changes nothing (issue 37, item 3): cost subscribes to the event
// ledger instead of wrapping it, so a delivery to the E2B webhook is accounted whether cost starts
// before the webhook or after it (it was not, with cost listed after the webhook).
import { createHash } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { type Exporter, startExporter } from "../../src/app.js";
import { FEATURES, loadConfig } from "../../src/catalog.js";
import type { Feature } from "../../src/feature.js";
import { E2B_WEBHOOK_PATH } from "../../src/server/e2b-webhook.js";
import { type Simulator, startSimulator } from "../../src/simulator/index.js";
import { FakeClock } from "../../src/util/clock.js";
import { samples } from "../helpers/exporter.js";

const T0 = Date.UTC(2026, 10, 1);
const SECRET = "whsec-order-0123456789";
const iso = (ms: number): string => new Date(ms).toISOString();

const running: Array<{ sim: Simulator; exporter: Exporter }> = [];
afterEach(async () => {
  for (const r of running.splice(0)) {
    await r.exporter.stop();
    await r.sim.close();
  }
});

/** E2B's signature of a delivery: sha256 of secret + body, base64url without padding. */
function signature(body: string): string {
  return createHash("sha256")
    .update(SECRET + body)
    .digest("base64")
    .replace(/\+/g, "-")
    .replace(/\//g, "_")
    .replace(/=+$/, "");
}

/** A paused event of a 2-vCPU sandbox no walk saw: it ran 12 s up to T0 + 40 s. */
const PAUSED = JSON.stringify({
  version: "v2",
  id: "ev-order-1",
  type: "sandbox.lifecycle.paused",
  eventData: {
    execution: {
      started_at: iso(T0 + 28_000),
      vcpu_count: 2,
      memory_mb: 512,
      execution_time: 12_000,
    },
  },
  sandboxId: "sbx-unwalked",
  sandboxTemplateId: "tpl-events",
  timestamp: iso(T0 + 40_000),
});

/**
 * Starts an exporter with cost (0.001 per vCPU-second) and the webhook, its features in `order`,
 * over a simulator holding one running 2-vCPU sandbox; walks at 10 s, takes the paused event at
 * 50 s, walks at 100 s, and returns the running spend summed over templates.
 */
async function spendWith(order: readonly Feature[]): Promise<number> {
  const clock = new FakeClock(T0);
  const sim = await startSimulator({ flavor: "e2b", sandboxes: 0, templates: 1, nodes: 1, clock });
  sim.state.addSandbox({ cpuCount: 2, memoryMB: 1024, startedAt: T0, endAt: T0 + 86_400_000 });
  const secretFile = join(mkdtempSync(join(tmpdir(), "feature-order-")), "e2b.secret");
  writeFileSync(secretFile, `${SECRET}\n`);
  const { config } = loadConfig({
    argv: [
      ...["--listen", "127.0.0.1:0", "--retries", "0", "--flavor", "e2b"],
      ...["--cost-vcpu-second", "0.001", "--cost-memory-gib-second", "0"],
      ...["--e2b-webhook-secret-file", secretFile],
    ],
    env: { SANDBOX_API_URL: sim.apiUrl, SANDBOX_API_KEY: "k", SANDBOX_DOMAIN: sim.domain },
  });
  const exporter = await startExporter(config, {
    logger: pino({ level: "silent" }),
    clock,
    manual: true,
    features: order,
  });
  running.push({ sim, exporter });
  clock.set(T0 + 10_000);
  await exporter.runCycle();
  clock.set(T0 + 50_000);
  const res = await fetch(`${exporter.server.url}${E2B_WEBHOOK_PATH}`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "e2b-webhook-id": "wh-1",
      "e2b-delivery-id": "dl-1",
      "e2b-signature-version": "v1",
      "e2b-signature": signature(PAUSED),
    },
    body: PAUSED,
  });
  expect(res.status).toBe(200);
  clock.set(T0 + 100_000);
  await exporter.runCycle();
  const at = samples(await (await fetch(`${exporter.server.url}/metrics`)).text());
  let spend = 0;
  for (const [k, v] of at)
    if (k.startsWith("sandbox_estimated_cost_total{") && k.includes('state="running"')) spend += v;
  return spend;
}

describe("the order of the features", () => {
  it("gives the same spend with cost listed first or last: the webhook's event is accounted either way", async () => {
    const cost = FEATURES.find((f) => f.name === "cost") as Feature;
    const first = await spendWith([cost, ...FEATURES.filter((f) => f !== cost)]);
    const last = await spendWith([...FEATURES.filter((f) => f !== cost).reverse(), cost]);
    // The walked sandbox: 2 vCPUs for 100 s; the event's: 2 vCPUs for 12 s; at 0.001.
    expect(first).toBeCloseTo(0.2 + 0.024, 9);
    expect(last).toBeCloseTo(first, 12);
  });
});
