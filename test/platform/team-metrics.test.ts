// Team capacity at the control client, against a hand-written loopback server answering as E2B's
// API does: a create refused with 429 is classified by its text (E2B's concurrency message teaches
// the limit, its route limiter's "Rate limit exceeded" is rate_limit) and counted with the limit
// exported by source; and the max route's body is read or refused as a bad body.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { Registry } from "prom-client";
import { Agent } from "undici";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { TeamLimitMetrics } from "../../src/metrics/team-limit-metrics.js";
import { ControlClient, type ControlClientOptions } from "../../src/platform/control/control.js";
import { PlatformBodyError, PlatformHttpError } from "../../src/platform/http-errors.js";
import { classifyCreateRejection } from "../../src/platform/normalize/team-metrics.js";
import { listenLoopback } from "../helpers/loopback.js";

/** E2B's text (packages/api/internal/orchestrator/create_instance.go), with a limit of 20. */
const CONCURRENCY_TEXT =
  "you have reached the maximum number of concurrent E2B sandboxes (20). If you need more, please visit 'https://e2b.dev/docs/billing'";
/** E2B's route limiter (packages/api/internal/middleware/ratelimit/ratelimit.go). */
const RATE_TEXT = "Rate limit exceeded";

/** What POST /sandboxes and GET /teams/{id}/metrics/max answer next. */
let reply: { status: number; body: unknown };
let url: string;
let close: () => Promise<void>;
const dispatcher = new Agent();

function handle(_req: IncomingMessage, res: ServerResponse): void {
  res.writeHead(reply.status, { "content-type": "application/json" });
  res.end(JSON.stringify(reply.body));
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

/** A client reporting refused creates to a fresh TeamLimitMetrics; its registry to read. */
function setup(configLimit?: number): { client: ControlClient; registry: Registry } {
  const registry = new Registry();
  const limits = new TeamLimitMetrics({ registry, ns: "sandbox", configLimit });
  const o: ControlClientOptions = {
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
    onCreateRejected: (reason, limit) => limits.createRejected(reason, limit),
  };
  return { client: new ControlClient(o), registry };
}

async function lines(registry: Registry, name: string): Promise<string[]> {
  const text = await registry.metrics();
  return text.split("\n").filter((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `));
}

async function refusedCreate(client: ControlClient): Promise<unknown> {
  return client.createSandbox({ templateId: "base" }).then(
    () => undefined,
    (err: unknown) => err,
  );
}

describe("a create refused with 429", () => {
  beforeEach(() => {
    reply = { status: 429, body: { code: 429, message: CONCURRENCY_TEXT } };
  });

  it("with E2B's concurrency text learns the limit and counts concurrency_limit; every reason starts at 0", async () => {
    const { client, registry } = setup();
    expect(await lines(registry, "sandbox_sandbox_create_rejected_total")).toEqual([
      'sandbox_sandbox_create_rejected_total{reason="concurrency_limit"} 0',
      'sandbox_sandbox_create_rejected_total{reason="rate_limit"} 0',
      'sandbox_sandbox_create_rejected_total{reason="other"} 0',
    ]);
    expect(await lines(registry, "sandbox_team_concurrent_sandboxes_limit")).toEqual([]);

    const err = await refusedCreate(client);
    // The caller still gets the platform's error.
    expect(err).toBeInstanceOf(PlatformHttpError);
    expect((err as PlatformHttpError).status).toBe(429);
    expect(await lines(registry, "sandbox_sandbox_create_rejected_total")).toContain(
      'sandbox_sandbox_create_rejected_total{reason="concurrency_limit"} 1',
    );
    expect(await lines(registry, "sandbox_team_concurrent_sandboxes_limit")).toEqual([
      'sandbox_team_concurrent_sandboxes_limit{source="learned"} 20',
    ]);
  });

  it("shows both sources when the limit is configured too, each its own value", async () => {
    const { client, registry } = setup(50);
    expect(await lines(registry, "sandbox_team_concurrent_sandboxes_limit")).toEqual([
      'sandbox_team_concurrent_sandboxes_limit{source="config"} 50',
    ]);
    await refusedCreate(client);
    expect(await lines(registry, "sandbox_team_concurrent_sandboxes_limit")).toEqual([
      'sandbox_team_concurrent_sandboxes_limit{source="config"} 50',
      'sandbox_team_concurrent_sandboxes_limit{source="learned"} 20',
    ]);
  });

  it("with the route limiter's text counts rate_limit and learns no limit", async () => {
    reply = { status: 429, body: { code: 429, message: RATE_TEXT } };
    const { client, registry } = setup();
    await refusedCreate(client);
    const counted = await lines(registry, "sandbox_sandbox_create_rejected_total");
    expect(counted).toContain('sandbox_sandbox_create_rejected_total{reason="rate_limit"} 1');
    expect(counted).toContain(
      'sandbox_sandbox_create_rejected_total{reason="concurrency_limit"} 0',
    );
    expect(await lines(registry, "sandbox_team_concurrent_sandboxes_limit")).toEqual([]);
  });

  it("counts another 429 text as other, and a refusal that is not a 429 not at all", async () => {
    reply = { status: 429, body: { code: 429, message: "slow down" } };
    const { client, registry } = setup();
    await refusedCreate(client);
    reply = { status: 400, body: { code: 400, message: CONCURRENCY_TEXT } };
    await refusedCreate(client);
    expect(await lines(registry, "sandbox_sandbox_create_rejected_total")).toEqual([
      'sandbox_sandbox_create_rejected_total{reason="concurrency_limit"} 0',
      'sandbox_sandbox_create_rejected_total{reason="rate_limit"} 0',
      'sandbox_sandbox_create_rejected_total{reason="other"} 1',
    ]);
  });
});

describe("classifyCreateRejection", () => {
  it("reads the limit from E2B's older text too, and not from the template-build limit", () => {
    expect(
      classifyCreateRejection(
        "You have reached the maximum number of concurrent E2B sandboxes (100). If you need more, please contact us at 'https://e2b.dev/docs/getting-help'",
      ),
    ).toEqual({ reason: "concurrency_limit", limit: 100 });
    expect(
      classifyCreateRejection(
        "you have reached the maximum number of concurrent template builds (3). Please wait",
      ),
    ).toEqual({ reason: "other" });
  });
});

describe("teamMetricsMax", () => {
  it("reads E2B's MaxTeamMetric, and a body without a value is a bad body", async () => {
    const { client } = setup();
    reply = {
      status: 200,
      body: { timestamp: "2026-09-21T10:00:00Z", timestampUnix: 1_790_000_000, value: 12 },
    };
    expect(await client.teamMetricsMax("t", "concurrent_sandboxes", 0, 60)).toEqual({
      value: 12,
      at: 1_790_000_000_000,
    });
    reply = { status: 200, body: [] };
    await expect(client.teamMetrics("t", 0, 60)).resolves.toEqual([]);
    reply = { status: 200, body: { timestampUnix: 1_790_000_000 } };
    await expect(client.teamMetricsMax("t", "sandbox_start_rate", 0, 60)).rejects.toBeInstanceOf(
      PlatformBodyError,
    );
  });
});
