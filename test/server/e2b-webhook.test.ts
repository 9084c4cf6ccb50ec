import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, request } from "node:http";
import { type AddressInfo, connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Registry } from "prom-client";
import { afterEach, describe, expect, it } from "vitest";
import { startExporter } from "../../src/app.js";
import { ConfigSchema, loadConfig } from "../../src/catalog.js";
import { EventLedger } from "../../src/metrics/lifecycle-events.js";
import type { LifecycleEvent } from "../../src/platform/events.js";
import { normalizeLifecycleEvent } from "../../src/platform/normalize/events.js";
import {
  E2B_WEBHOOK_PATH,
  type E2bWebhookOptions,
  e2bWebhookRoute,
} from "../../src/server/e2b-webhook.js";
import { DELIVERY_RESULTS, DROP_REASONS } from "../../src/server/e2b-webhook-families.js";
import {
  type RouteHandler,
  type RunningServer,
  type ServerDeps,
  startServer,
} from "../../src/server/server.js";
import { FakeClock, systemClock } from "../../src/util/clock.js";
import { InflightBudget } from "../../src/util/inflight-budget.js";
import { createLogger } from "../../src/util/logger.js";
import { Secrets } from "../../src/util/secrets.js";
import { stubServerDeps } from "../helpers/server.js";
import { until } from "../helpers/until.js";

const fixture = (name: string): string =>
  readFileSync(new URL(`../fixtures/e2b/${name}`, import.meta.url), "utf8");

/** The docs' example delivery: raw body, secret and headers (see the fixture's README). */
const DOCS_BODY = fixture("webhooks/delivery-v1.body.json");
const DOCS = JSON.parse(fixture("webhooks/delivery-v1.headers.json")) as {
  secret: string;
  headers: Record<string, string>;
};
const DOCS_EVENT_ID = "0568572b-a2ac-4e5f-85fa-fae90905f556";

/** E2B's docs' JavaScript `verifyWebhookSignature`, its computation copied unchanged. */
function docsSignature(secret: string, payload: string): string {
  const expectedSignatureRaw = createHash("sha256")
    .update(secret + payload)
    .digest("base64");
  return expectedSignatureRaw.replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

const SECRET = "whsec-test-0123456789abcdef";
/** The webhooks settings' defaults, as the schema gives them. */
const LIMITS = ConfigSchema.parse({}).webhooks;

const servers: Array<Pick<RunningServer, "url" | "close">> = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

/** A plain loopback listener that hands every request to `route`. */
async function bare(
  route: RouteHandler,
  onHandled: (p: Promise<void>) => void,
): Promise<Pick<RunningServer, "url" | "close">> {
  const server = createServer((req, res) => {
    onHandled(route(req, new URL(req.url ?? "/", "http://exporter"), res));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

interface Receiver {
  url: string;
  accepted: Array<{ event: LifecycleEvent; via: string }>;
  parsed: () => number;
  logs: string[];
  /** Settles as the route's handling of the first request does (bare listener only). */
  firstHandled: Promise<void>;
  registry: Registry;
  count(result: string): Promise<number>;
  setSecret(s: string): void;
  route: ReturnType<typeof e2bWebhookRoute>;
}

/** The route on a real listener, recording what reaches the sink, the parser and the log. */
async function receiver(
  extra?: Partial<ServerDeps>,
  maxBodyBytes?: number,
  bodyTimeoutMs?: number,
  more: Partial<E2bWebhookOptions> = {},
): Promise<Receiver> {
  const registry = new Registry();
  const accepted: Receiver["accepted"] = [];
  const seen = new Set<string>();
  const logs: string[] = [];
  let arrived: (p: Promise<void>) => void = () => {};
  // Resolving with the route's promise adopts it: this settles when that one does.
  const firstHandled = new Promise<void>((resolve) => {
    arrived = (p) => resolve(p);
  });
  let parses = 0;
  let secret = SECRET;
  const secrets = new Secrets([SECRET, DOCS.secret]);
  const log = (level: string) => (obj: object, msg: string) =>
    logs.push(JSON.stringify({ level, ...obj, msg }));
  const route = e2bWebhookRoute({
    secret: () => secret,
    sink: {
      accept(event, via) {
        if (seen.has(event.id)) return false;
        seen.add(event.id);
        accepted.push({ event, via });
        return true;
      },
    },
    parse: (raw) => {
      parses++;
      return normalizeLifecycleEvent(raw);
    },
    registry,
    namespace: "sandbox",
    logger: { warn: log("warn"), debug: log("debug") },
    secrets,
    clock: systemClock,
    limits: {
      ...LIMITS,
      ...(maxBodyBytes !== undefined ? { maxBodyBytes } : {}),
      ...(bodyTimeoutMs !== undefined ? { bodyTimeoutMs } : {}),
    },
    authExempt: false,
    ...more,
  });
  // The whole server only where its auth is under test; elsewhere a bare listener around the route.
  const server = extra
    ? await startServer(
        "127.0.0.1:0",
        stubServerDeps({
          logger: { warn: log("warn") },
          routes: [route],
          ...extra,
        }),
      )
    : await bare(route.handler, (p) => arrived(p));
  servers.push(server);
  return {
    url: `${server.url}${E2B_WEBHOOK_PATH}`,
    accepted,
    parsed: () => parses,
    logs,
    firstHandled,
    registry,
    async count(result) {
      const metric = await registry.getSingleMetric("sandbox_webhook_deliveries_total")?.get();
      return metric?.values.find((v) => v.labels.result === result)?.value ?? Number.NaN;
    },
    setSecret(s) {
      secret = s;
    },
    route,
  };
}

/** A delivery as E2B sends it: the raw body with E2B's four headers. */
function deliver(
  url: string,
  body: string,
  opts: { secret?: string; headers?: Record<string, string | undefined> } = {},
): Promise<Response> {
  const headers: Record<string, string> = {
    "content-type": "application/json",
    "e2b-webhook-id": "wh-1",
    "e2b-delivery-id": `dl-${Math.random()}`,
    "e2b-signature-version": "v1",
    "e2b-signature": docsSignature(opts.secret ?? SECRET, body),
  };
  for (const [k, v] of Object.entries(opts.headers ?? {})) {
    if (v === undefined) delete headers[k];
    else headers[k] = v;
  }
  return fetch(url, { method: "POST", headers, body });
}

const event = (id: string, extra: Record<string, unknown> = {}): string =>
  JSON.stringify({
    version: "v1",
    id,
    type: "sandbox.lifecycle.created",
    sandboxId: "sbx-1",
    sandboxTemplateId: "tpl-1",
    // Now: an exporter's ledger refuses events older than the ids it remembers.
    timestamp: new Date(systemClock.now()).toISOString(),
    ...extra,
  });

describe("POST /webhooks/e2b", () => {
  it("accepts the docs' delivery, signed as E2B's docs compute it, and hands its event to the sink", async () => {
    const r = await receiver();
    r.setSecret(DOCS.secret);
    // The fixture's signature is the docs' code's output: our helper agrees with it byte for byte.
    expect(docsSignature(DOCS.secret, DOCS_BODY)).toBe(DOCS.headers["e2b-signature"]);
    const res = await fetch(r.url, { method: "POST", headers: DOCS.headers, body: DOCS_BODY });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ accepted: 1, duplicates: 0 });
    expect(r.accepted).toHaveLength(1);
    expect(r.accepted[0]?.via).toBe("webhook");
    expect(r.accepted[0]?.event).toMatchObject({
      id: DOCS_EVENT_ID,
      type: "created",
      sandboxId: "<your-sandbox-id>",
      templateId: "rki5dems9wqfm4r03t7g",
    });
    expect(await r.count("accepted")).toBe(1);
  });

  it("counts a redelivery of the same event once, and still answers it 200 so E2B stops retrying", async () => {
    const r = await receiver();
    const body = event("ev-dup");
    expect((await deliver(r.url, body)).status).toBe(200);
    const again = await deliver(r.url, body);
    expect(again.status).toBe(200);
    expect(await again.json()).toEqual({ accepted: 0, duplicates: 1 });
    expect(r.accepted.map((a) => a.event.id)).toEqual(["ev-dup"]);
    expect(await r.count("accepted")).toBe(1);
    expect(await r.count("duplicate")).toBe(1);
  });

  it("refuses a wrong, missing or unknown-version signature with 401 without parsing the body", async () => {
    const r = await receiver();
    const good = event("ev-sig");
    // Not JSON: had it been parsed, the answer would be 400, not 401.
    const unparsable = "{ this would throw in JSON.parse";
    const cases: Array<[string, Parameters<typeof deliver>[2]]> = [
      [good, { secret: "another-secret" }],
      [good, { headers: { "e2b-signature": undefined } }],
      [good, { headers: { "e2b-signature-version": undefined } }],
      [good, { headers: { "e2b-signature-version": "v2" } }],
      [good, { headers: { "e2b-signature": docsSignature(SECRET, event("ev-other")) } }],
      [unparsable, { secret: "another-secret" }],
    ];
    for (const [body, opts] of cases) {
      const res = await deliver(r.url, body, opts);
      expect(res.status).toBe(401);
      expect(await res.text()).toBe("bad signature\n");
    }
    expect(r.parsed()).toBe(0);
    expect(r.accepted).toEqual([]);
    expect(await r.count("bad_signature")).toBe(cases.length);
    expect(await r.count("bad_body")).toBe(0);
    // One line for the run of bad signatures (one a minute), not one per delivery.
    const refusals = r.logs.filter((l) => l.includes("missing or wrong e2b-signature"));
    expect(refusals).toHaveLength(1);
    expect(refusals[0]).toContain('"level":"warn"');
  });

  it("verifies over the raw bytes: the same JSON re-spaced is another body", async () => {
    const r = await receiver();
    const body = event("ev-raw");
    const respaced = JSON.stringify(JSON.parse(body), null, 2);
    const res = await deliver(r.url, respaced, {
      headers: { "e2b-signature": docsSignature(SECRET, body) },
    });
    expect(res.status).toBe(401);
    expect(r.parsed()).toBe(0);
  });

  it("accepts the same digest in the standard base64 alphabet with padding", async () => {
    const r = await receiver();
    const body = event("ev-std");
    const std = createHash("sha256")
      .update(SECRET + body)
      .digest("base64");
    expect((await deliver(r.url, body, { headers: { "e2b-signature": std } })).status).toBe(200);
  });

  it("uses the secret it is given at each delivery (a reload), and refuses all with an empty one", async () => {
    const r = await receiver();
    r.setSecret("rotated-secret-1234");
    expect((await deliver(r.url, event("ev-old"))).status).toBe(401);
    expect((await deliver(r.url, event("ev-new"), { secret: "rotated-secret-1234" })).status).toBe(
      200,
    );
    r.setSecret("");
    expect((await deliver(r.url, event("ev-empty"), { secret: "" })).status).toBe(401);
    expect(r.accepted.map((a) => a.event.id)).toEqual(["ev-new"]);
  });

  it("reads the snake_case spelling of E2B's Go event struct", async () => {
    const r = await receiver();
    const body = fixture("lifecycle-events/webhook-snake-case.json");
    expect((await deliver(r.url, body)).status).toBe(200);
    expect(r.accepted[0]?.event).toMatchObject({
      id: "6c3b2f0e-8f1a-4f5e-9a55-2b7d0c1e4a90",
      type: "killed",
      sandboxId: "<your-sandbox-id>",
      templateId: "rki5dems9wqfm4r03t7g",
      killReason: "timeout",
      executionSeconds: 12.123,
    });
  });

  it("takes a list of events as one delivery, each de-duplicated", async () => {
    const r = await receiver();
    expect((await deliver(r.url, event("ev-a"))).status).toBe(200);
    const res = await deliver(r.url, `[${event("ev-a")},${event("ev-b")}]`);
    expect(await res.json()).toEqual({ accepted: 1, duplicates: 1 });
    expect(r.accepted.map((a) => a.event.id)).toEqual(["ev-a", "ev-b"]);
  });

  it("with shards, counts only its own sandboxes' events and answers another shard's 200", async () => {
    const r = await receiver(undefined, undefined, undefined, { own: (id) => id === "sbx-mine" });
    const mine = event("ev-m", { sandboxId: "sbx-mine" });
    const theirs = event("ev-t", { sandboxId: "sbx-theirs" });
    const res = await deliver(r.url, `[${mine},${theirs}]`);
    expect(await res.json()).toEqual({ accepted: 1, duplicates: 0, otherShard: 1 });
    expect(r.accepted.map((a) => a.event.id)).toEqual(["ev-m"]);
    const only = await deliver(r.url, event("ev-t2", { sandboxId: "sbx-theirs" }));
    expect(only.status).toBe(200);
    expect(await r.count("other_shard")).toBe(1);
    expect(await r.count("accepted")).toBe(1);
    expect(r.accepted).toHaveLength(1);
  });

  it("answers 400 naming the field when a signed body is not an event, and counts it", async () => {
    const r = await receiver();
    const noType = await deliver(r.url, JSON.stringify({ id: "ev-x", sandboxId: "s" }));
    expect(noType.status).toBe(400);
    expect(await noType.text()).toContain("event.type");
    const notJson = await deliver(r.url, "{nope");
    expect(notJson.status).toBe(400);
    expect(await notJson.text()).toContain("not JSON");
    const none = await deliver(r.url, '[{"id":"ev-w"}]');
    expect(none.status).toBe(400);
    expect(await none.text()).toContain("[0] event.type");
    expect(r.accepted).toEqual([]);
    expect(await r.count("bad_body")).toBe(3);
  });

  it("takes the good events of a list with a bad one, and says which it left out", async () => {
    const r = await receiver();
    const res = await deliver(r.url, `[${event("ev-y")},{"id":"ev-z"}]`);
    expect(res.status).toBe(200);
    const answer = (await res.json()) as { accepted: number; dropped: number; problems: string[] };
    expect(answer).toMatchObject({ accepted: 1, dropped: 1 });
    expect(answer.problems[0]).toContain("[1] event.type");
    expect(r.accepted.map((a) => a.event.id)).toEqual(["ev-y"]);
    expect(await r.count("accepted")).toBe(1);
    expect(await r.count("bad_body")).toBe(0);
    expect(await r.registry.metrics()).toContain(
      'sandbox_webhook_events_dropped_total{reason="invalid"} 1',
    );
  });

  it("answers 405 with Allow: POST to any other method", async () => {
    // The server answers the method from the route's record: the route on the whole server.
    const r = await receiver({});
    const res = await fetch(r.url);
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe("POST");
    expect(await r.count("method")).toBe(1);
  });

  it("exports every result at 0 before the first delivery", async () => {
    const r = await receiver();
    const text = await r.registry.metrics();
    for (const result of DELIVERY_RESULTS)
      expect(text).toContain(`sandbox_webhook_deliveries_total{result="${result}"} 0`);
    for (const reason of DROP_REASONS)
      expect(text).toContain(`sandbox_webhook_events_dropped_total{reason="${reason}"} 0`);
  });
});

/** Most chunks `endlessPost` writes (16 KiB every 5 ms) before it gives up on the server hanging up. */
const MAX_CHUNKS = 200;

/**
 * Posts a body that never ends, a chunk at a time, until the server closes the connection or
 * MAX_CHUNKS went out; resolves with the answer and whether the server hung up first.
 */
function endlessPost(
  url: string,
  headers: Record<string, string | number>,
): Promise<{ status: number; body: string; hungUp: boolean }> {
  return new Promise((resolve) => {
    let status = 0;
    let body = "";
    let chunks = 0;
    const req = request(url, { method: "POST", headers });
    const timer = setInterval(() => {
      if (chunks++ < MAX_CHUNKS) req.write(Buffer.alloc(16 * 1024, 0x20));
      else finish(false);
    }, 5);
    const finish = (hungUp: boolean): void => {
      clearInterval(timer);
      req.destroy();
      resolve({ status, body, hungUp });
    };
    req.on("response", (res) => {
      status = res.statusCode ?? 0;
      res.setEncoding("utf8");
      res.on("data", (c: string) => {
        body += c;
      });
    });
    // Writing into a closed connection ends as an error (EPIPE, ECONNRESET) or a plain close.
    req.on("error", () => finish(true));
    req.on("close", () => finish(true));
  });
}

describe("POST /webhooks/e2b body cap", () => {
  it("answers 413 to a declared length past the cap and hangs up without reading the body", async () => {
    const r = await receiver(undefined, 1024);
    const out = await endlessPost(r.url, { "content-length": 100_000_000 });
    expect(out).toMatchObject({ status: 413, hungUp: true });
    expect(await r.count("too_large")).toBe(1);
    expect(r.parsed()).toBe(0);
  });

  it("answers 413 as soon as a chunked body passes the cap, and hangs up while the sender is still sending", async () => {
    const r = await receiver(undefined, 1024);
    const out = await endlessPost(r.url, { "transfer-encoding": "chunked" });
    expect(out).toMatchObject({ status: 413, hungUp: true });
    expect(out.body).toContain("1024");
    expect(await r.count("too_large")).toBe(1);
  });
});

describe("POST /webhooks/e2b and a sender that trickles", () => {
  it("answers 408 when the body has not all arrived in time, counts it, and hangs up", async () => {
    const r = await receiver(undefined, undefined, 200);
    const out = await new Promise<{ status: number; hungUp: boolean }>((resolve) => {
      let status = 0;
      // 10 of the 1,000 bytes it declares, then nothing; given up on after 5 s at the latest.
      const req = request(r.url, { method: "POST", headers: { "content-length": 1000 } });
      const giveUp = setTimeout(() => finish(false), 5_000);
      const finish = (hungUp: boolean): void => {
        clearTimeout(giveUp);
        req.destroy();
        resolve({ status, hungUp });
      };
      req.on("response", (res) => {
        status = res.statusCode ?? 0;
        res.resume();
        res.on("end", () => finish(true));
      });
      req.on("error", () => finish(true));
      req.write("0123456789");
    });
    expect(out).toEqual({ status: 408, hungUp: true });
    expect(await r.count("timeout")).toBe(1);
    expect(r.parsed()).toBe(0);
  });
});

describe("POST /webhooks/e2b and a sender that hangs up", () => {
  it("lets a sender that breaks off mid-body go without an answer, a count or an error", async () => {
    const r = await receiver();
    await new Promise<void>((resolve) => {
      const req = request(r.url, { method: "POST", headers: { "content-length": 1000 } });
      req.on("error", () => {});
      req.write("{", () => {
        req.destroy();
        resolve();
      });
    });
    // The route's promise settles (no hang) and does not reject.
    await expect(r.firstHandled).resolves.toBeUndefined();
    for (const result of DELIVERY_RESULTS) expect(await r.count(result)).toBe(0);
    expect((await deliver(r.url, event("ev-after"))).status).toBe(200);
  });
});

describe("POST /webhooks/e2b and secrets", () => {
  it("never puts the signing secret in an answer, a log line or a metric", async () => {
    const r = await receiver(undefined, 2048);
    const texts: string[] = [];
    const keep = async (res: Response) => {
      texts.push(`${res.status} ${JSON.stringify([...res.headers])} ${await res.text()}`);
    };
    await keep(await deliver(r.url, event("ev-s1")));
    await keep(await deliver(r.url, event("ev-s1")));
    await keep(await deliver(r.url, event("ev-s2"), { secret: "nope" }));
    // A signed body whose bad field holds the secret: the 400 names the field, scrubbed.
    const leaky = await deliver(r.url, event("ev-s3", { timestamp: `at ${SECRET}` }));
    expect(leaky.status).toBe(400);
    const leakyText = await leaky.text();
    expect(leakyText).toContain("event.timestamp");
    expect(leakyText).toContain("[REDACTED]");
    texts.push(leakyText);
    await keep(await deliver(r.url, "x".repeat(4096)));
    texts.push(await r.registry.metrics(), ...r.logs);
    expect(r.logs.length).toBeGreaterThan(0);
    for (const t of texts) expect(t).not.toContain(SECRET);
  });
});

describe("POST /webhooks/e2b behind the listener's auth", () => {
  it("needs the listener's bearer token like every other path when not exempt", async () => {
    const r = await receiver({ auth: { bearerToken: "listener-token" } });
    const bare = await deliver(r.url, event("ev-auth"));
    expect(bare.status).toBe(401);
    expect(r.accepted).toEqual([]);
    const withToken = await deliver(r.url, event("ev-auth"), {
      headers: { authorization: "Bearer listener-token" },
    });
    expect(withToken.status).toBe(200);
    expect(r.accepted.map((a) => a.event.id)).toEqual(["ev-auth"]);
  });

  it("lets E2B's delivery in without the token when exempt, the signature still checked and the rest still closed", async () => {
    const r = await receiver({ auth: { bearerToken: "listener-token" } }, undefined, undefined, {
      authExempt: true,
    });
    expect((await deliver(r.url, event("ev-open"))).status).toBe(200);
    expect((await deliver(r.url, event("ev-forged"), { secret: "guess" })).status).toBe(401);
    expect(await r.count("bad_signature")).toBe(1);
    expect(r.accepted.map((a) => a.event.id)).toEqual(["ev-open"]);
    const metrics = await fetch(r.url.replace(E2B_WEBHOOK_PATH, "/metrics"));
    expect(metrics.status).toBe(401);
  });
});

describe("webhooks.e2bSecretFile", () => {
  it("reads the webhook settings from flags and the environment", () => {
    const { config } = loadConfig({
      argv: ["--e2b-webhook-auth-exempt", "--webhook-max-body-bytes", "4096"],
      env: {
        SANDBOX_API_URL: "http://127.0.0.1:9",
        SANDBOX_EXPORTER_E2B_WEBHOOK_SECRET_FILE: "/run/secrets/e2b-webhook",
      },
    });
    expect(config.webhooks).toEqual({
      ...LIMITS,
      e2bSecretFile: "/run/secrets/e2b-webhook",
      e2bAuthExempt: true,
      maxBodyBytes: 4096,
    });
  });

  it("refuses to start on a secret file with a line break inside, naming the setting, never the secret", async () => {
    const dir = mkdtempSync(join(tmpdir(), "e2b-webhook-"));
    const path = join(dir, "e2b.secret");
    writeFileSync(path, `${SECRET}\r\nsecond-line\n`);
    const { config } = loadConfig({
      argv: ["--listen", "127.0.0.1:0", "--e2b-webhook-secret-file", path],
      env: { SANDBOX_API_URL: "http://127.0.0.1:9", SANDBOX_API_KEY: "k" },
    });
    expect(config.webhooks).toEqual({ ...LIMITS, e2bSecretFile: path });
    const logger = createLogger("silent", "json");
    const start = startExporter(config, { logger, clock: systemClock, manual: true });
    await expect(start).rejects.toThrow(/webhooks\.e2bSecretFile.*e2b\.secret.*byte offset/s);
    await expect(start).rejects.not.toThrow(SECRET);
  });
});

describe("POST /webhooks/e2b in the exporter", () => {
  /** An exporter (manual cycles, nothing polled) whose secret file holds `secret`. */
  async function exporterWith(secret: string, argv: string[] = []) {
    const dir = mkdtempSync(join(tmpdir(), "e2b-webhook-"));
    const secretFile = join(dir, "e2b.secret");
    writeFileSync(secretFile, `${secret}\n`);
    const { config } = loadConfig({
      argv: ["--listen", "127.0.0.1:0", "--e2b-webhook-secret-file", secretFile, ...argv],
      env: { SANDBOX_API_URL: "http://127.0.0.1:9", SANDBOX_API_KEY: "k" },
      readFile: (path) => readFileSync(path, "utf8"),
    });
    const logged: string[] = [];
    // Not sharing the app's Secrets: what the log holds is what the route itself let out.
    const logger = createLogger("debug", "json", { write: (line: string) => logged.push(line) });
    const exporter = await startExporter(config, { logger, clock: systemClock, manual: true });
    servers.push({ url: exporter.server.url, close: () => exporter.stop() });
    return { exporter, secretFile, dir, logged, url: `${exporter.server.url}${E2B_WEBHOOK_PATH}` };
  }

  it("counts a delivered event once in the lifecycle families, and reads the new secret on reload", async () => {
    const { exporter, secretFile, url } = await exporterWith(DOCS.secret);
    // The docs' delivery as sent now: older, it would be refused as a possible replay.
    const body = DOCS_BODY.replace(
      "2025-08-06T20:59:24Z",
      new Date(systemClock.now()).toISOString(),
    );
    const headers = { ...DOCS.headers, "e2b-signature": docsSignature(DOCS.secret, body) };
    const first = await fetch(url, { method: "POST", headers, body });
    expect(first.status).toBe(200);
    const again = await fetch(url, { method: "POST", headers, body });
    expect(again.status).toBe(200);
    const text = await (await fetch(`${exporter.server.url}/metrics`)).text();
    expect(text).toContain(
      'sandbox_lifecycle_events_total{type="created",template="rki5dems9wqfm4r03t7g"} 1',
    );
    expect(text).toContain('sandbox_webhook_deliveries_total{result="accepted"} 1');
    expect(text).toContain('sandbox_webhook_deliveries_total{result="duplicate"} 1');

    writeFileSync(secretFile, "rotated-secret-5678\n");
    expect((await exporter.reload()).ok).toBe(true);
    expect((await deliver(url, event("ev-r1"), { secret: DOCS.secret })).status).toBe(401);
    expect((await deliver(url, event("ev-r2"), { secret: "rotated-secret-5678" })).status).toBe(
      200,
    );
  });

  it("gives lifecycle series of their own to --max-event-templates templates, the rest to other", async () => {
    const { exporter, url } = await exporterWith(SECRET, ["--max-event-templates", "1"]);
    expect((await deliver(url, event("ev-m1"))).status).toBe(200);
    expect((await deliver(url, event("ev-m2", { sandboxTemplateId: "tpl-2" }))).status).toBe(200);
    const text = await (await fetch(`${exporter.server.url}/metrics`)).text();
    expect(text).toContain('sandbox_lifecycle_events_total{type="created",template="tpl-1"} 1');
    expect(text).toContain('sandbox_lifecycle_events_total{type="created",template="other"} 1');
    expect(text).not.toContain('template="tpl-2"');
    expect(text).toContain("sandbox_exporter_lifecycle_events_folded_total 1");
  });

  it("keeps the secret out of /metrics, /status and the log", async () => {
    const { exporter, url, logged } = await exporterWith(SECRET);
    await deliver(url, event("ev-q1"));
    await deliver(url, event("ev-q2"), { secret: "wrong" });
    await deliver(url, event("ev-q3", { timestamp: `at ${SECRET}` }));
    const outputs = [
      await (await fetch(`${exporter.server.url}/metrics`)).text(),
      await (await fetch(`${exporter.server.url}/status`)).text(),
      ...logged,
    ];
    expect(logged.some((l) => l.includes("event.timestamp"))).toBe(true);
    for (const t of outputs) expect(t).not.toContain(SECRET);
  });

  it("puts the route under the listener's token unless --e2b-webhook-auth-exempt says otherwise", async () => {
    const tokenDir = mkdtempSync(join(tmpdir(), "e2b-webhook-token-"));
    const tokenFile = join(tokenDir, "token");
    writeFileSync(tokenFile, "listener-token\n");
    const closed = await exporterWith(SECRET, ["--web-bearer-token-file", tokenFile]);
    const refused = await deliver(closed.url, event("ev-t1"));
    expect(refused.status).toBe(401);
    // The listener refused it, not the signature check: the signature was good.
    expect(await refused.text()).not.toBe("bad signature\n");
    const open = await exporterWith(SECRET, [
      "--web-bearer-token-file",
      tokenFile,
      "--e2b-webhook-auth-exempt",
    ]);
    expect((await deliver(open.url, event("ev-t2"))).status).toBe(200);
    expect((await deliver(open.url, event("ev-t3"), { secret: "guess" })).status).toBe(401);
    expect((await fetch(`${open.exporter.server.url}/metrics`)).status).toBe(401);
  });

  it("warns at start and on reload when the listener's auth keeps E2B out, and counts the deliveries it refuses", async () => {
    const tokenDir = mkdtempSync(join(tmpdir(), "e2b-webhook-token-"));
    const tokenFile = join(tokenDir, "token");
    writeFileSync(tokenFile, "listener-token\n");
    const locked = (lines: string[]) => lines.filter((l) => l.includes("e2bAuthExempt"));
    const closed = await exporterWith(SECRET, ["--web-bearer-token-file", tokenFile]);
    expect(locked(closed.logged)).toHaveLength(1);
    expect(JSON.parse(locked(closed.logged)[0] as string)).toMatchObject({ level: 40 });
    for (let i = 0; i < 3; i++)
      expect((await deliver(closed.url, event(`ev-l${i}`))).status).toBe(401);
    // Other paths the listener refuses are not deliveries.
    expect((await fetch(`${closed.exporter.server.url}/status`)).status).toBe(401);
    const auth = { headers: { authorization: "Bearer listener-token" } };
    const text = await (await fetch(`${closed.exporter.server.url}/metrics`, auth)).text();
    expect(text).toContain('sandbox_webhook_deliveries_total{result="unauthorized_listener"} 3');
    expect((await closed.exporter.reload()).ok).toBe(true);
    expect(locked(closed.logged).filter((l) => l.includes("refused 401"))).toHaveLength(2);
    // Exempt, or without listener auth: no such warning.
    const open = await exporterWith(SECRET, [
      "--web-bearer-token-file",
      tokenFile,
      "--e2b-webhook-auth-exempt",
    ]);
    const plain = await exporterWith(SECRET);
    expect(locked(open.logged).filter((l) => l.includes("refused 401"))).toEqual([]);
    expect(locked(plain.logged).filter((l) => l.includes("refused 401"))).toEqual([]);
  });
});

/** A raw connection's answer: its status line's code and its headers, lower-cased. */
interface RawAnswer {
  status: number;
  headers: Record<string, string>;
}

/**
 * Opens a connection to `url`'s listener and writes `head` and `body` as they are (a delivery that
 * holds back its end); `answer` settles with the first response, or undefined once it closes without one.
 */
async function rawPost(
  url: string,
  headers: Record<string, string | number>,
  body: string,
): Promise<{ answer: Promise<RawAnswer | undefined>; socket: Socket }> {
  const u = new URL(url);
  const socket = connect(Number(u.port), u.hostname);
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", resolve);
    socket.once("error", reject);
  });
  socket.on("error", () => {});
  const answer = new Promise<RawAnswer | undefined>((resolve) => {
    let text = "";
    socket.on("data", (c: Buffer) => {
      text += c.toString("latin1");
      const end = text.indexOf("\r\n\r\n");
      if (end < 0) return;
      const [statusLine = "", ...lines] = text.slice(0, end).split("\r\n");
      const fields = lines.map((l) => [
        l.slice(0, l.indexOf(":")).toLowerCase(),
        l.slice(l.indexOf(":") + 1).trim(),
      ]);
      resolve({ status: Number(statusLine.split(" ")[1]), headers: Object.fromEntries(fields) });
    });
    socket.on("close", () => resolve(undefined));
  });
  const head = Object.entries({ host: u.host, ...headers }).map(([k, v]) => `${k}: ${v}\r\n`);
  socket.write(`POST ${u.pathname} HTTP/1.1\r\n${head.join("")}\r\n${body}`);
  return { answer, socket };
}

/** The current value of an unlabelled gauge or counter of `registry`. */
async function gauge(registry: Registry, name: string): Promise<number | undefined> {
  return (await registry.getSingleMetric(name)?.get())?.values[0]?.value;
}

describe("POST /webhooks/e2b under a flood of held-back unsigned deliveries", () => {
  const FLOOD = 40;

  it("holds at most webhooks.maxInFlightBytes, answers the excess 503 with Retry-After at once, and gives every byte back", async () => {
    const bound = 5 * 4096;
    const budget = new InflightBudget(64, bound);
    const limits = {
      ...LIMITS,
      maxBodyBytes: 4096,
      bodyTimeoutMs: 60_000,
      maxInFlightBytes: bound,
    };
    const r = await receiver(undefined, undefined, undefined, { limits, budget });
    const answered: RawAnswer[] = [];
    // Each declares 4,000 bytes and sends all but the last: none of them can ever be parsed.
    const sent = await Promise.all(
      Array.from({ length: FLOOD }, () =>
        rawPost(r.url, { "content-length": 4000 }, "x".repeat(3999)),
      ),
    );
    for (const s of sent) void s.answer.then((a) => a && answered.push(a));
    // Bytes count as they arrive: each holds the 3,999 it sent.
    const held = Math.floor(bound / 3999);
    // The excess is answered while the admitted ones still wait for their last byte.
    expect(await until(() => answered.length === FLOOD - held && budget.count === held)).toBe(true);
    expect(answered.every((a) => a.status === 503 && a.headers["retry-after"] === "1")).toBe(true);
    expect(await r.count("busy")).toBe(FLOOD - held);
    expect(await gauge(r.registry, "sandbox_webhook_inflight_bytes")).toBe(held * 3999);
    expect(budget.peakBytes).toBeLessThanOrEqual(bound);
    // The held ones hang up: their bytes come back, and a signed delivery gets through.
    for (const s of sent) s.socket.destroy();
    expect(await until(() => budget.count === 0)).toBe(true);
    expect(await gauge(r.registry, "sandbox_webhook_inflight_bytes")).toBe(0);
    expect(await gauge(r.registry, "sandbox_webhook_inflight_deliveries")).toBe(0);
    expect((await deliver(r.url, event("ev-after-flood"))).status).toBe(200);
    expect(budget.peakBytes).toBeLessThanOrEqual(bound);
  });

  it("reads at most webhooks.maxInFlight deliveries at once, chunked ones too, and answers the rest 503 at once", async () => {
    const budget = new InflightBudget(8, LIMITS.maxInFlightBytes);
    const limits = { ...LIMITS, bodyTimeoutMs: 60_000, maxInFlight: 8 };
    const r = await receiver(undefined, undefined, undefined, { limits, budget });
    const answered: RawAnswer[] = [];
    // No declared length: a first chunk of 10 bytes, and never the last chunk.
    const sent = await Promise.all(
      Array.from({ length: FLOOD }, () =>
        rawPost(r.url, { "transfer-encoding": "chunked" }, "a\r\n0123456789\r\n"),
      ),
    );
    for (const s of sent) void s.answer.then((a) => a && answered.push(a));
    expect(await until(() => answered.length === FLOOD - 8 && budget.count === 8)).toBe(true);
    expect(answered.every((a) => a.status === 503 && a.headers["retry-after"] === "1")).toBe(true);
    expect(budget.peakCount).toBe(8);
    for (const s of sent) s.socket.destroy();
    expect(await until(() => budget.count === 0)).toBe(true);
    expect(budget.bytes).toBe(0);
  });

  it("counts a chunked body's bytes as they come, and makes room at the bound by refusing the delivery read longest", async () => {
    const budget = new InflightBudget(64, 4096);
    const limits = { ...LIMITS, maxBodyBytes: 4096, bodyTimeoutMs: 60_000, maxInFlightBytes: 4096 };
    const r = await receiver(undefined, undefined, undefined, { limits, budget });
    const first = await rawPost(
      r.url,
      { "transfer-encoding": "chunked" },
      `bb8\r\n${"x".repeat(3000)}\r\n`,
    );
    expect(await until(() => budget.bytes === 3000)).toBe(true);
    const second = await rawPost(
      r.url,
      { "transfer-encoding": "chunked" },
      `bb8\r\n${"y".repeat(3000)}\r\n`,
    );
    // Both do not fit: the first, read longer, is answered 503 and its bytes go to the second.
    let firstStatus: number | undefined;
    void first.answer.then((a) => {
      firstStatus = a?.status;
    });
    expect(await until(() => firstStatus === 503)).toBe(true);
    expect(await until(() => budget.count === 1 && budget.bytes === 3000)).toBe(true);
    expect(await r.count("busy")).toBe(1);
    expect(budget.peakBytes).toBeLessThanOrEqual(4096);
    first.socket.destroy();
    second.socket.destroy();
    expect(await until(() => budget.count === 0 && budget.bytes === 0)).toBe(true);
  });

  it("lets E2B's delivery in past idle senders that declare a full body and send nothing: they hold no bytes, and the oldest gives way", async () => {
    // The defaults: 64 deliveries, 4 MiB, 256 KiB a body.
    const budget = new InflightBudget(LIMITS.maxInFlight, LIMITS.maxInFlightBytes);
    const limits = { ...LIMITS, bodyTimeoutMs: 60_000 };
    const r = await receiver(undefined, undefined, undefined, { limits, budget });
    const idle: Array<Awaited<ReturnType<typeof rawPost>>> = [];
    const open = async (n: number) => {
      for (let i = 0; i < n; i++) {
        idle.push(await rawPost(r.url, { "content-length": LIMITS.maxBodyBytes }, ""));
        // One at a time, so the order they are read in is the order they were opened.
        expect(await until(() => budget.count === idle.length)).toBe(true);
      }
    };
    try {
      // Enough declared bytes for the whole byte bound: nothing is held for them.
      await open(LIMITS.maxInFlightBytes / LIMITS.maxBodyBytes);
      expect((await deliver(r.url, event("ev-past-16-idle"))).status).toBe(200);
      expect(budget.bytes).toBe(0);
      // Every place taken: the one waiting longest is answered 503, the delivery gets its place.
      await open(LIMITS.maxInFlight - idle.length);
      expect(budget.count).toBe(LIMITS.maxInFlight);
      expect((await deliver(r.url, event("ev-past-64-idle"))).status).toBe(200);
      expect((await idle[0]?.answer)?.status).toBe(503);
      expect(await r.count("busy")).toBe(1);
      expect(r.accepted.map((a) => a.event.id)).toEqual(["ev-past-16-idle", "ev-past-64-idle"]);
      expect(budget.count).toBe(LIMITS.maxInFlight - 1);
      expect(budget.peakCount).toBe(LIMITS.maxInFlight);
    } finally {
      for (const s of idle) s.socket.destroy();
    }
    expect(await until(() => budget.count === 0 && budget.bytes === 0)).toBe(true);
  });

  it("writes one warning line a minute per reason, however many posts cause it, with the count of the others", async () => {
    const clock = new FakeClock(1_000_000);
    const r = await receiver(undefined, 1024, undefined, { clock });
    const tooLarge = async (): Promise<number | undefined> => {
      const s = await rawPost(r.url, { "content-length": 10_000_000_000 }, "");
      const a = await s.answer;
      s.socket.destroy();
      return a?.status;
    };
    for (let i = 0; i < 200; i++) expect(await tooLarge()).toBe(413);
    const lines = () => r.logs.filter((l) => l.includes("body too large"));
    expect(lines()).toHaveLength(1);
    clock.advance(60_000);
    expect(await tooLarge()).toBe(413);
    expect(lines()).toHaveLength(2);
    expect(JSON.parse(lines()[1] as string)).toMatchObject({ level: "warn", suppressed: 199 });
    expect(await r.count("too_large")).toBe(201);
  });
});

describe("POST /webhooks/e2b and replays", () => {
  const MIN = 60_000;

  /** The route in front of a real ledger remembering `maxIds` ids for 10 minutes. */
  async function ledgerReceiver(maxIds: number) {
    const clock = new FakeClock(Date.parse("2026-01-01T00:00:00Z"));
    const ledgerRegistry = new Registry();
    const ledger = new EventLedger({
      ns: "sandbox",
      registry: ledgerRegistry,
      clock,
      horizonMs: 10 * MIN,
      maxIds,
    });
    const r = await receiver(undefined, undefined, undefined, {
      sink: ledger,
      horizon: () => ledger.horizon(),
      clock,
    });
    const counted = async (): Promise<number> =>
      (
        (await ledgerRegistry.getSingleMetric("sandbox_lifecycle_events_total")?.get())?.values ??
        []
      ).reduce((n, v) => n + v.value, 0);
    const at = (id: string, ms: number) => event(id, { timestamp: new Date(ms).toISOString() });
    return { r, clock, counted, at };
  }

  it("refuses a signed delivery replayed after its id left the memory (the cap), and counts it stale", async () => {
    const { r, clock, counted, at } = await ledgerReceiver(5);
    const first = at("ev-0", clock.now());
    expect((await deliver(r.url, first)).status).toBe(200);
    for (let i = 1; i < 5; i++) {
      clock.advance(10_000);
      expect((await deliver(r.url, at(`ev-${i}`, clock.now()))).status).toBe(200);
    }
    // Still remembered: a duplicate, answered 200.
    expect((await deliver(r.url, first)).status).toBe(200);
    expect(await r.count("duplicate")).toBe(1);
    // Five more push ev-0 out of the memory of five ids.
    for (let i = 5; i < 10; i++) {
      clock.advance(10_000);
      expect((await deliver(r.url, at(`ev-${i}`, clock.now()))).status).toBe(200);
    }
    expect(await counted()).toBe(10);
    const replay = await deliver(r.url, first);
    expect(replay.status).toBe(422);
    expect(await counted()).toBe(10);
    expect(await r.count("stale")).toBe(1);
    expect(r.logs.some((l) => l.includes("a replay"))).toBe(true);
  });

  it("counts the stale events of a delivery that also carries fresh ones, and takes only the fresh", async () => {
    const { r, clock, counted, at } = await ledgerReceiver(1_000);
    clock.advance(60 * MIN);
    const old = at("ev-old", clock.now() - 11 * MIN);
    const res = await deliver(r.url, `[${old},${at("ev-new", clock.now() - MIN)}]`);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ accepted: 1, duplicates: 0, stale: 1 });
    expect(await counted()).toBe(1);
    expect(await r.count("accepted")).toBe(1);
    const text = await r.registry.metrics();
    expect(text).toContain('sandbox_webhook_events_dropped_total{reason="stale"} 1');
    expect(text).toContain('sandbox_webhook_events_dropped_total{reason="invalid"} 0');
    expect(
      r.logs.filter((l) => l.includes('"level":"warn"') && l.includes("a replay")),
    ).toHaveLength(1);
  });

  it("refuses a signed event older than the look-back the ids are kept for, and takes a new one", async () => {
    const { r, clock, counted, at } = await ledgerReceiver(1_000);
    clock.advance(60 * MIN);
    expect((await deliver(r.url, at("ev-old", clock.now() - 11 * MIN))).status).toBe(422);
    expect((await deliver(r.url, at("ev-new", clock.now() - MIN))).status).toBe(200);
    expect(await counted()).toBe(1);
    expect(await r.count("stale")).toBe(1);
  });
});
