// The concurrency limit a create's 429 names, against a hand-written loopback server answering
// E2B's text with hostile numbers: only an integer from 1 to 1,000,000 is learned; anything else
// (10^12, which would be exported and silence the near-limit alert, a fraction, 0, a negative, a
// word) is not, and is counted, and logged once.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { Registry } from "prom-client";
import { Agent } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TeamLimitMetrics } from "../../src/metrics/team-limit-metrics.js";
import { ControlClient } from "../../src/platform/control/control.js";
import {
  classifyCreateRejection,
  MAX_TEAM_CONCURRENCY_LIMIT,
} from "../../src/platform/normalize/team-metrics.js";
import { listenLoopback } from "../helpers/loopback.js";

/** E2B's text (packages/api/internal/orchestrator/create_instance.go) naming `limit`. */
function concurrencyText(limit: string): string {
  return `you have reached the maximum number of concurrent E2B sandboxes (${limit}). If you need more, please visit 'https://e2b.dev/docs/billing'`;
}

/** What POST /sandboxes answers next. */
let named = "20";
let url: string;
let close: () => Promise<void>;
const dispatcher = new Agent();

function handle(_req: IncomingMessage, res: ServerResponse): void {
  res.writeHead(429, { "content-type": "application/json" });
  res.end(JSON.stringify({ code: 429, message: concurrencyText(named) }));
}

beforeAll(async () => {
  const l = await listenLoopback(createServer(handle));
  url = l.url;
  close = l.close;
});
afterAll(async () => {
  await dispatcher.close();
  await close();
});

/** A client reporting refused creates to a fresh TeamLimitMetrics; its registry and log lines. */
function setup(configLimit?: number): {
  client: ControlClient;
  registry: Registry;
  warnings: Array<{ obj: object; msg: string }>;
} {
  const registry = new Registry();
  const warnings: Array<{ obj: object; msg: string }> = [];
  const limits = new TeamLimitMetrics({
    registry,
    ns: "sandbox",
    configLimit,
    logger: { warn: (obj, msg) => warnings.push({ obj, msg }) },
  });
  const client = new ControlClient({
    apiUrl: url,
    apiKey: "",
    authStyle: "x-api-key",
    authHeader: "X-API-Key",
    timeoutMs: 5_000,
    retries: 0,
    envProxy: false,
    apiPrefix: "",
    flavor: "e2b",
    dispatcher,
    onCreateRejected: (reason, limit, ignored) => limits.createRejected(reason, limit, ignored),
  });
  return { client, registry, warnings };
}

async function lines(registry: Registry, name: string): Promise<string[]> {
  const text = await registry.metrics();
  return text.split("\n").filter((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `));
}

async function refusedCreate(client: ControlClient): Promise<void> {
  await client.createSandbox({ templateId: "base" }).then(
    () => expect.unreachable("the create was refused"),
    () => undefined,
  );
}

describe("the concurrency limit a 429 names", () => {
  it("is not learned at 10^12: counted as ignored, logged once, the config limit alone exported", async () => {
    named = "1000000000000";
    const { client, registry, warnings } = setup(50);
    await refusedCreate(client);
    await refusedCreate(client);
    expect(await lines(registry, "sandbox_team_concurrent_sandboxes_limit")).toEqual([
      'sandbox_team_concurrent_sandboxes_limit{source="config"} 50',
    ]);
    expect(await lines(registry, "sandbox_team_concurrent_sandboxes_limit_ignored_total")).toEqual([
      "sandbox_team_concurrent_sandboxes_limit_ignored_total 2",
    ]);
    // Still a refusal at the team's limit.
    expect(await lines(registry, "sandbox_sandbox_create_rejected_total")).toContain(
      'sandbox_sandbox_create_rejected_total{reason="concurrency_limit"} 2',
    );
    expect(warnings).toHaveLength(1);
    expect(warnings[0]?.obj).toEqual({ limit: "1000000000000", max: 1_000_000 });
  });

  it("keeps the last good limit when a later 429 names one out of range", async () => {
    const { client, registry } = setup();
    named = "20";
    await refusedCreate(client);
    named = "1e12";
    await refusedCreate(client);
    expect(await lines(registry, "sandbox_team_concurrent_sandboxes_limit")).toEqual([
      'sandbox_team_concurrent_sandboxes_limit{source="learned"} 20',
    ]);
    expect(await lines(registry, "sandbox_team_concurrent_sandboxes_limit_ignored_total")).toEqual([
      "sandbox_team_concurrent_sandboxes_limit_ignored_total 1",
    ]);
  });

  it("accepts an integer from 1 to 1,000,000 only", () => {
    expect(MAX_TEAM_CONCURRENCY_LIMIT).toBe(1_000_000);
    expect(classifyCreateRejection(concurrencyText("1"))).toEqual({
      reason: "concurrency_limit",
      limit: 1,
    });
    expect(classifyCreateRejection(concurrencyText("1000000"))).toEqual({
      reason: "concurrency_limit",
      limit: 1_000_000,
    });
    for (const bad of ["1000001", "0", "-3", "20.5", "1e3", "twenty", "99999999999999999999999"])
      expect(classifyCreateRejection(concurrencyText(bad)), bad).toEqual({
        reason: "concurrency_limit",
        ignoredLimit: bad,
      });
    // A long value is cut short; none named is no limit, nothing ignored.
    expect(classifyCreateRejection(concurrencyText("9".repeat(500))).ignoredLimit).toHaveLength(32);
    expect(
      classifyCreateRejection("you have reached the maximum number of concurrent E2B sandboxes"),
    ).toEqual({ reason: "concurrency_limit" });
  });
});
