import { createHash } from "node:crypto";
import {
  createServer,
  type IncomingHttpHeaders,
  type Server,
  type ServerResponse,
} from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type Simulator, startSimulator } from "../../src/simulator/index.js";
import { FakeClock } from "../../src/util/clock.js";
import { simCall } from "../helpers/sim-call.js";

/** E2B's verification, as docs/sandbox/lifecycle-events-webhooks.mdx writes it (JavaScript tab). */
function verifyWebhookSignature(secret: string, payload: string, payloadSignature: string) {
  const expectedSignatureRaw = createHash("sha256")
    .update(secret + payload)
    .digest("base64");
  const expectedSignature = expectedSignatureRaw
    .replace(/\+/g, "-")
    .replace(/\//g, "_")
    .replace(/=+$/, "");
  return expectedSignature === payloadSignature;
}

interface Received {
  headers: IncomingHttpHeaders;
  body: string;
}

/** A webhook endpoint on loopback: records each delivery and answers with the next status queued. */
class Receiver {
  readonly received: Received[] = [];
  /** Statuses to answer, in order; 200 once empty. */
  statuses: number[] = [];
  /** While set, deliveries are held unanswered until `release()`. */
  hold = false;
  private held: ServerResponse[] = [];
  private waiters: Array<{ n: number; resolve: () => void }> = [];
  private server: Server | undefined;
  url = "";

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        this.received.push({ headers: req.headers, body: Buffer.concat(chunks).toString("utf8") });
        for (const w of this.waiters.filter((x) => this.received.length >= x.n)) w.resolve();
        if (this.hold) this.held.push(res);
        else res.writeHead(this.statuses.shift() ?? 200).end();
      });
    });
    await new Promise<void>((r) => this.server?.listen(0, "127.0.0.1", r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hook`;
  }

  /** Resolves once `n` deliveries have arrived. */
  count(n: number): Promise<void> {
    if (this.received.length >= n) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ n, resolve }));
  }

  release(): void {
    this.hold = false;
    for (const res of this.held.splice(0)) res.writeHead(200).end();
  }

  reset(): void {
    this.received.length = 0;
    this.statuses = [];
    this.release();
  }

  async stop(): Promise<void> {
    this.release();
    await new Promise<void>((r) => {
      this.server?.close(() => r());
      this.server?.closeAllConnections();
    });
  }
}

const call = simCall;

const SECRET = "secret-for-event-signature-verification";

describe("the simulator's lifecycle webhooks (E2B mode)", () => {
  const clock = new FakeClock(Date.parse("2026-03-01T10:00:00Z"));
  const receiver = new Receiver();
  let sim: Simulator;
  beforeAll(async () => {
    await receiver.start();
    sim = await startSimulator({
      flavor: "e2b",
      sandboxes: 0,
      clock,
      webhookRetryDelayMs: 5,
      webhookMaxInFlight: 4,
    });
  });
  afterEach(async () => {
    receiver.reset();
    await sim.webhooks.settled();
    for (const id of [...sim.webhooks.hooks.keys()])
      await call(sim, "DELETE", `/events/webhooks/${id}`);
  });
  afterAll(async () => {
    await sim.close();
    await receiver.stop();
  });

  async function register(events: string[], extra: Record<string, unknown> = {}) {
    const res = await call(sim, "POST", "/events/webhooks", {
      name: "My Sandbox Webhook",
      url: receiver.url,
      enabled: true,
      events,
      signatureSecret: SECRET,
      ...extra,
    });
    expect(res.status).toBe(201);
    return res.json as { id: string };
  }

  async function create(): Promise<string> {
    const res = await call(sim, "POST", "/sandboxes", { templateID: "base" });
    expect(res.status).toBe(201);
    return res.json.sandboxID as string;
  }

  it("registers, lists, reads, updates and deletes webhooks without ever answering the secret", async () => {
    const hook = await register(["sandbox.lifecycle.created"]);
    const expected = {
      id: hook.id,
      teamId: "460355b3-4f64-48f9-9a16-4442817f79f5",
      name: "My Sandbox Webhook",
      createdAt: "2026-03-01T10:00:00Z",
      enabled: true,
      url: receiver.url,
      events: ["sandbox.lifecycle.created"],
    };
    expect(hook).toEqual(expected);
    expect((await call(sim, "GET", "/events/webhooks")).json).toEqual([expected]);
    expect((await call(sim, "GET", `/events/webhooks/${hook.id}`)).json).toEqual(expected);
    const patched = await call(sim, "PATCH", `/events/webhooks/${hook.id}`, {
      enabled: false,
      events: ["sandbox.lifecycle.killed"],
    });
    expect(patched.status).toBe(200);
    expect(patched.json).toEqual({
      ...expected,
      enabled: false,
      events: ["sandbox.lifecycle.killed"],
    });
    expect(JSON.stringify(patched.json)).not.toContain(SECRET);
    expect((await call(sim, "DELETE", `/events/webhooks/${hook.id}`)).status).toBe(200);
    expect((await call(sim, "GET", `/events/webhooks/${hook.id}`)).status).toBe(404);
  });

  it("refuses a registration without a secret, a URL or known event types", async () => {
    const base = {
      url: receiver.url,
      events: ["sandbox.lifecycle.created"],
      signatureSecret: SECRET,
    };
    for (const body of [
      { ...base, signatureSecret: undefined },
      { ...base, url: "not a url" },
      { ...base, events: ["sandbox.created"] },
    ]) {
      expect((await call(sim, "POST", "/events/webhooks", body)).status).toBe(400);
    }
  });

  it("posts each subscribed event with E2B's headers and a signature E2B's documented check accepts", async () => {
    const hook = await register(["sandbox.lifecycle.created", "sandbox.lifecycle.killed"]);
    const id = await create();
    await call(sim, "POST", `/sandboxes/${id}/pause`);
    expect((await call(sim, "DELETE", `/sandboxes/${id}`)).status).toBe(204);
    await receiver.count(2);
    await sim.webhooks.settled();
    expect(receiver.received).toHaveLength(2);
    const served = (await call(sim, "GET", `/events/sandboxes/${id}?orderAsc=true`)).json as Array<{
      type: string;
    }>;
    const wanted = served.filter((e) => e.type !== "sandbox.lifecycle.paused");
    const deliveryIds = new Set<string>();
    receiver.received.forEach((r, i) => {
      expect(r.headers["content-type"]).toBe("application/json");
      expect(r.headers["e2b-webhook-id"]).toBe(hook.id);
      expect(r.headers["e2b-signature-version"]).toBe("v1");
      expect(verifyWebhookSignature(SECRET, r.body, String(r.headers["e2b-signature"]))).toBe(true);
      expect(
        verifyWebhookSignature("another secret", r.body, String(r.headers["e2b-signature"])),
      ).toBe(false);
      deliveryIds.add(String(r.headers["e2b-delivery-id"]));
      expect(JSON.parse(r.body)).toEqual(wanted[i]);
    });
    expect(deliveryIds.size).toBe(2);
  });

  it("tries again after a 500, with a new delivery id and the same body, then stops on success", async () => {
    await register(["sandbox.lifecycle.created"]);
    receiver.statuses = [500];
    await create();
    await receiver.count(2);
    await sim.webhooks.settled();
    const [first, second] = receiver.received as [Received, Received];
    expect(receiver.received).toHaveLength(2);
    expect(second.body).toBe(first.body);
    expect(second.headers["e2b-delivery-id"]).not.toBe(first.headers["e2b-delivery-id"]);
    expect(sim.webhooks.attempts.slice(-2).map((a) => [a.attempt, a.status])).toEqual([
      [1, 500],
      [2, 200],
    ]);
  });

  it("gives up after 3 attempts", async () => {
    await register(["sandbox.lifecycle.created"]);
    receiver.statuses = [500, 503, 502, 500];
    await create();
    await receiver.count(3);
    await sim.webhooks.settled();
    expect(receiver.received).toHaveLength(3);
  });

  it("sends nothing to a disabled webhook or for a type it did not ask for", async () => {
    await register(["sandbox.lifecycle.created"], { enabled: false });
    await register(["sandbox.lifecycle.paused"]);
    await create();
    await sim.webhooks.settled();
    expect(receiver.received).toHaveLength(0);
  });

  it("answers the request that caused an event while its delivery is still held", async () => {
    await register(["sandbox.lifecycle.created"]);
    receiver.hold = true;
    await create();
    await receiver.count(1);
    // Deliveries in flight are bounded (4 here): the rest are dropped and counted.
    const droppedBefore = sim.webhooks.dropped;
    for (let i = 0; i < 5; i++) await create();
    await receiver.count(4);
    expect(sim.webhooks.dropped - droppedBefore).toBe(2);
    receiver.release();
    await sim.webhooks.settled();
    expect(receiver.received).toHaveLength(4);
  });
});

describe("webhook payload spelling", () => {
  it("sends the orchestrator's snake_case event when asked", async () => {
    const receiver = new Receiver();
    await receiver.start();
    const sim = await startSimulator({ flavor: "e2b", sandboxes: 0, webhookPayload: "snake" });
    try {
      sim.webhooks.register({
        url: receiver.url,
        events: ["sandbox.lifecycle.created"],
        signatureSecret: SECRET,
      });
      const res = await call(sim, "POST", "/sandboxes", { templateID: "base" });
      await receiver.count(1);
      await sim.webhooks.settled();
      const body = JSON.parse((receiver.received[0] as Received).body);
      expect(body).toMatchObject({
        version: "v2",
        type: "sandbox.lifecycle.created",
        event_category: "lifecycle",
        event_label: "create",
        sandbox_id: res.json.sandboxID,
        sandbox_team_id: "460355b3-4f64-48f9-9a16-4442817f79f5",
      });
      expect(body.sandboxId).toBeUndefined();
    } finally {
      await sim.close();
      await receiver.stop();
    }
  });
});

describe("closing the simulator", () => {
  it("does not wait for a delivery the endpoint never answers", async () => {
    const receiver = new Receiver();
    await receiver.start();
    receiver.hold = true;
    const sim = await startSimulator({ flavor: "e2b", sandboxes: 0 });
    try {
      sim.webhooks.register({
        url: receiver.url,
        events: ["sandbox.lifecycle.created"],
        signatureSecret: SECRET,
      });
      await call(sim, "POST", "/sandboxes", { templateID: "base" });
      await receiver.count(1);
    } finally {
      await sim.close();
      await sim.webhooks.settled();
      await receiver.stop();
    }
    expect(sim.webhooks.attempts.map((a) => a.status)).toEqual([0]);
  });
});
