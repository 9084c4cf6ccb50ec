import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, request } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Registry } from "prom-client";
import { afterEach, describe, expect, it } from "vitest";
import { startExporter } from "../../src/app.js";
import { loadConfig } from "../../src/config/load.js";
import type { LifecycleEvent } from "../../src/platform/events.js";
import { normalizeLifecycleEvent } from "../../src/platform/normalize/events.js";
import {
  DELIVERY_RESULTS,
  E2B_WEBHOOK_PATH,
  e2bWebhookRoute,
} from "../../src/server/e2b-webhook.js";
import {
  type RouteHandler,
  type RunningServer,
  type ServerDeps,
  startServer,
} from "../../src/server/server.js";
import { systemClock } from "../../src/util/clock.js";
import { createLogger } from "../../src/util/logger.js";
import { Secrets } from "../../src/util/secrets.js";
import { stubServerDeps } from "../helpers/server.js";

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
}

/** The route on a real listener, recording what reaches the sink, the parser and the log. */
async function receiver(
  extra?: Partial<ServerDeps>,
  maxBodyBytes?: number,
  bodyTimeoutMs?: number,
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
    ...(maxBodyBytes !== undefined ? { maxBodyBytes } : {}),
    ...(bodyTimeoutMs !== undefined ? { bodyTimeoutMs } : {}),
  });
  // The whole server only where its auth is under test; elsewhere a bare listener around the route.
  const server = extra
    ? await startServer(
        "127.0.0.1:0",
        stubServerDeps({
          logger: { warn: log("warn") },
          routes: { [E2B_WEBHOOK_PATH]: route },
          ...extra,
        }),
      )
    : await bare(route, (p) => arrived(p));
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
    timestamp: "2025-08-06T20:59:24Z",
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
    // Warned once for the run of bad signatures, not once per delivery.
    const refusals = r.logs.filter((l) => l.includes("missing or wrong e2b-signature"));
    expect(refusals).toHaveLength(cases.length);
    expect(refusals.filter((l) => l.includes('"level":"warn"'))).toHaveLength(1);
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
    expect(await r.registry.metrics()).toContain("sandbox_webhook_events_dropped_total 1");
  });

  it("answers 405 with Allow: POST to any other method", async () => {
    const r = await receiver();
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
    const r = await receiver({
      auth: { bearerToken: "listener-token" },
      openPaths: [E2B_WEBHOOK_PATH],
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
    expect(config.webhooks).toEqual({
      e2bSecretFile: path,
      e2bAuthExempt: false,
      maxBodyBytes: 262_144,
    });
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
    const first = await fetch(url, { method: "POST", headers: DOCS.headers, body: DOCS_BODY });
    expect(first.status).toBe(200);
    const again = await fetch(url, { method: "POST", headers: DOCS.headers, body: DOCS_BODY });
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
});
