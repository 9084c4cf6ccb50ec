// A hostile client of the exporter's own listener: unsigned webhook deliveries that hold back their
// last byte, and posts declaring 10 GB bodies, against the defaults of the webhooks settings.
import { createHash } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { sampleOf, samples } from "../../tools/exposition.js";
import { until } from "../helpers/until.js";
import { type Rig, startRig } from "./harness.js";

const SECRET = "whsec-chaos-flood-0123456789";
const BODY = 256 * 1024;

let rig: Rig | undefined;
afterEach(async () => {
  await rig?.stop();
  rig = undefined;
});

/** Writes `head` then `body` on a new connection; `status` settles with the answer's code, or 0 on close. */
async function post(url: URL, head: string, body: Buffer | string = "") {
  const socket: Socket = connect(Number(url.port), url.hostname);
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", resolve);
    socket.once("error", reject);
  });
  socket.on("error", () => {});
  const status = new Promise<number>((resolve) => {
    socket.once("data", (d: Buffer) => resolve(Number(d.toString("latin1").split(" ")[1])));
    socket.once("close", () => resolve(0));
  });
  socket.write(`POST /webhooks/e2b HTTP/1.1\r\nhost: ${url.host}\r\n${head}\r\n`);
  if (body.length > 0) socket.write(body);
  return { socket, status };
}

describe("chaos: a flood of unsigned webhook deliveries", () => {
  it("holds at most webhooks.maxInFlightBytes of held-back bodies, refuses the rest 503 at once, logs a line a minute, and gives the bytes back", async () => {
    const dir = mkdtempSync(join(tmpdir(), "chaos-webhook-"));
    const secretFile = join(dir, "secret");
    writeFileSync(secretFile, `${SECRET}\n`);
    rig = await startRig({ argv: ["--e2b-webhook-secret-file", secretFile] });
    const r = rig;
    const url = new URL(r.e.server.url);
    const scrape = async () => samples(await (await fetch(`${r.e.server.url}/metrics`)).text());
    const bound = r.config.webhooks.maxInFlightBytes;
    const FLOOD = 100;
    const statuses: number[] = [];
    const sent = await Promise.all(
      Array.from({ length: FLOOD }, () =>
        post(url, `content-length: ${BODY}\r\n`, Buffer.alloc(BODY - 1, 0x78)),
      ),
    );
    for (const s of sent) void s.status.then((st) => statuses.push(st));
    // Settled: every delivery answered or holding all it sent (bytes count as they arrive).
    let m = await scrape();
    const held = () => sampleOf(m, "sandbox_webhook_inflight_deliveries", {}) ?? Number.NaN;
    expect(
      await until(async () => {
        m = await scrape();
        const bytes = sampleOf(m, "sandbox_webhook_inflight_bytes", {});
        return statuses.length + held() === FLOOD && bytes === held() * (BODY - 1);
      }),
    ).toBe(true);
    expect(held()).toBeGreaterThan(0);
    expect(held()).toBeLessThanOrEqual(Math.floor(bound / (BODY - 1)));
    expect(statuses.every((s) => s === 503)).toBe(true);
    expect(sampleOf(m, "sandbox_webhook_inflight_bytes", {})).toBeLessThanOrEqual(bound);
    expect(sampleOf(m, "sandbox_webhook_deliveries_total", { result: "busy" })).toBe(
      FLOOD - held(),
    );

    // 1,000 posts declaring 10 GB: each 413, one warning line.
    for (let i = 0; i < 1_000; i += 50)
      await Promise.all(
        Array.from({ length: 50 }, async () => {
          const p = await post(url, "content-length: 10000000000\r\n");
          expect(await p.status).toBe(413);
          p.socket.destroy();
        }),
      );
    expect(r.log.find("E2B webhook delivery refused: body too large")).toHaveLength(1);
    expect(
      r.log.find("E2B webhook delivery refused (503): bytes in flight at the bound"),
    ).toHaveLength(1);

    for (const s of sent) s.socket.destroy();
    expect(
      await until(
        async () => sampleOf(await scrape(), "sandbox_webhook_inflight_deliveries", {}) === 0,
        2_000,
      ),
    ).toBe(true);
    m = await scrape();
    expect(sampleOf(m, "sandbox_webhook_inflight_bytes", {})).toBe(0);
    // A signed delivery gets through once the flood is gone.
    const body = JSON.stringify({
      id: "chaos-flood-ev-1",
      type: "sandbox.lifecycle.created",
      sandboxId: "sbx-1",
      sandboxTemplateId: "tpl-1",
      timestamp: new Date().toISOString(),
    });
    const signature = createHash("sha256").update(SECRET).update(body).digest("base64url");
    const res = await fetch(`${r.e.server.url}/webhooks/e2b`, {
      method: "POST",
      headers: { "e2b-signature-version": "v1", "e2b-signature": signature },
      body,
    });
    expect(res.status).toBe(200);
  });

  it("lets a signed delivery in past 16, then 64, idle posts that declare a full body and send nothing", async () => {
    const dir = mkdtempSync(join(tmpdir(), "chaos-webhook-"));
    const secretFile = join(dir, "secret");
    writeFileSync(secretFile, `${SECRET}\n`);
    rig = await startRig({ argv: ["--e2b-webhook-secret-file", secretFile] });
    const r = rig;
    const url = new URL(r.e.server.url);
    const { maxInFlight, maxInFlightBytes } = r.config.webhooks;
    const inflight = async () =>
      sampleOf(
        samples(await (await fetch(`${r.e.server.url}/metrics`)).text()),
        "sandbox_webhook_inflight_deliveries",
        {},
      );
    const idle: Array<Awaited<ReturnType<typeof post>>> = [];
    const open = async (n: number) => {
      for (let i = 0; i < n; i++) idle.push(await post(url, `content-length: ${BODY}\r\n`));
      expect(await until(async () => (await inflight()) === idle.length)).toBe(true);
    };
    const signed = async (id: string) => {
      const body = JSON.stringify({
        id,
        type: "sandbox.lifecycle.created",
        sandboxId: "sbx-1",
        sandboxTemplateId: "tpl-1",
        timestamp: new Date().toISOString(),
      });
      const signature = createHash("sha256").update(SECRET).update(body).digest("base64url");
      const res = await fetch(`${r.e.server.url}/webhooks/e2b`, {
        method: "POST",
        headers: { "e2b-signature-version": "v1", "e2b-signature": signature },
        body,
      });
      return res.status;
    };
    try {
      // Declared bodies enough for the whole byte bound (4 MiB / 256 KiB): they hold no bytes.
      await open(maxInFlightBytes / BODY);
      expect(await signed("chaos-idle-ev-1")).toBe(200);
      // Every place taken: one idle post gives way and is answered 503.
      await open(maxInFlight - idle.length);
      expect(await signed("chaos-idle-ev-2")).toBe(200);
      const answered: number[] = [];
      for (const s of idle) void s.status.then((st) => answered.push(st));
      expect(await until(() => answered.length > 0, 2_000)).toBe(true);
      expect(answered).toEqual([503]);
    } finally {
      for (const s of idle) s.socket.destroy();
    }
  });
});
