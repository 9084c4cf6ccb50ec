// The policy webhook over a real loopback socket: a failed delivery is logged once (err
// serializer, no secret), and the body that leaves the process passes the secret scrubber.
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Agent } from "undici";
import { afterEach, describe, expect, it } from "vitest";
import { type PolicyEvent, PolicyWebhook } from "../../src/policy/webhook.js";
import { Secrets } from "../../src/util/secrets.js";

const SECRET = "hook-secret-0123456789";

let server: Server | undefined;
let agent: Agent | undefined;

afterEach(async () => {
  await agent?.close();
  await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
  server = undefined;
  agent = undefined;
});

/** A receiver answering every POST with `status`; `bodies` collects what it was sent. */
async function receiver(status: number): Promise<{ url: string; bodies: string[] }> {
  const bodies: string[] = [];
  server = createServer((req: IncomingMessage, res) => {
    let body = "";
    req.on("data", (c: Buffer) => {
      body += c.toString();
    });
    req.on("end", () => {
      bodies.push(body);
      res.writeHead(status).end();
    });
  });
  await new Promise<void>((r) => server?.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, bodies };
}

function event(reason: string): PolicyEvent {
  return {
    rule: "idle",
    sandbox: "sb-1",
    template: "base",
    state: "running",
    action: "pause",
    dryRun: false,
    result: "done",
    reason,
    at: "2025-01-01T00:00:00.000Z",
  };
}

function hook(url: string, logger?: { warn(obj: object, msg: string): void }) {
  agent = new Agent();
  const results: string[] = [];
  const webhook = new PolicyWebhook({
    url,
    header: { name: "Authorization", value: `Bearer ${SECRET}` },
    timeoutMs: 2_000,
    retries: 1,
    dispatcher: agent,
    onResult: (r) => results.push(r),
    sleep: async () => undefined,
    secrets: new Secrets([SECRET]),
    ...(logger && { logger }),
  });
  return { webhook, results };
}

describe("PolicyWebhook", () => {
  it("logs each delivery given up, with its error's code and no secret", async () => {
    const { url } = await receiver(500);
    const lines: Array<{ obj: Record<string, unknown>; msg: string }> = [];
    const { webhook, results } = hook(url, {
      warn: (obj, msg) => lines.push({ obj: obj as Record<string, unknown>, msg }),
    });
    webhook.send(event(`the agent said ${SECRET}`));
    webhook.send(event("second"));
    await webhook.idle();
    expect(results).toEqual(["failed", "failed"]);
    expect(lines).toHaveLength(2);
    expect(lines[0]?.msg).toBe("policy webhook delivery failed");
    expect(lines[0]?.obj.err).toMatchObject({
      code: "ERR_WEBHOOK_DELIVERY",
      status: 500,
      attempts: 2,
    });
    expect(lines[0]?.obj).toMatchObject({ rule: "idle", sandbox: "sb-1" });
    expect(JSON.stringify(lines)).not.toContain(SECRET);
  });

  it("logs a refused connection as a failed delivery with its cause", async () => {
    const { url } = await receiver(200);
    await new Promise<void>((r) => server?.close(() => r()));
    server = undefined;
    const lines: Array<Record<string, unknown>> = [];
    const { webhook, results } = hook(url, { warn: (obj) => lines.push(obj as never) });
    webhook.send(event("x"));
    await webhook.idle();
    expect(results).toEqual(["failed"]);
    expect(lines[0]?.err).toMatchObject({ code: "ERR_WEBHOOK_DELIVERY", status: undefined });
    expect((lines[0]?.err as Error | undefined)?.cause).toBeDefined();
  });

  it("scrubs every secret from the body it posts", async () => {
    const { url, bodies } = await receiver(204);
    const { webhook, results } = hook(url);
    webhook.send(event(`output echoed ${SECRET} and ${JSON.stringify(SECRET)}`));
    await webhook.idle();
    expect(results).toEqual(["ok"]);
    expect(bodies).toHaveLength(1);
    expect(bodies[0]).not.toContain(SECRET);
    expect(JSON.parse(bodies[0] ?? "{}")).toMatchObject({
      reason: expect.stringContaining("[REDACTED]"),
    });
  });
});
