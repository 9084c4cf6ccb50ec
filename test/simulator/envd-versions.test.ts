// The fake agent enforces what its sandbox's envd version enforces (read from e2b-dev/infra
// packages/envd), and the data plane routes as E2B's client proxy does (proxy/host.go).
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Simulator, startSimulator } from "../../src/simulator/index.js";
import { parseFrames, runCommand } from "./helpers.js";

const BASIC_USER = `Basic ${Buffer.from("user:").toString("base64")}`;

describe("envd versions and header routing on the data plane", () => {
  let sim: Simulator;
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    sim = await startSimulator({ sandboxes: 0, templates: 1 });
    for (const v of ["0.3.7", "0.4.0", "0.5.6", "0.5.7", "0.6.13"]) {
      ids[v] = sim.state.addSandbox({ envdVersion: v }).sandboxID;
    }
  });
  afterAll(async () => {
    await sim.close();
  });

  function files(version: string, query: string, init: { method?: string; body?: string } = {}) {
    const id = ids[version] as string;
    return request(`${sim.dataUrl}/files?${query}`, {
      method: init.method ?? "GET",
      headers: {
        host: sim.sandboxHost(id),
        ...(init.body !== undefined && { "content-type": "application/octet-stream" }),
      },
      ...(init.body !== undefined && { body: init.body }),
    });
  }

  /** The end-of-stream error of a start, or undefined when the command ran. */
  async function startError(version: string, headers: Record<string, string> = {}) {
    const res = await runCommand(sim, ids[version] as string, "echo ran", headers);
    expect(res.status).toBe(200);
    const frames = parseFrames(res.body);
    const last = frames.at(-1)?.json as { error?: { code: string; message: string } } | undefined;
    return last?.error;
  }

  it("below 0.4.0 refuses /files without username, as the generated router's 400", async () => {
    const res = await files("0.3.7", "path=/tmp/x");
    expect(res.statusCode).toBe(400);
    expect(await res.body.text()).toBe("Query argument username is required, but not found\n");
    const named = await files("0.3.7", "path=/tmp/x&username=user");
    await named.body.dump();
    expect(named.statusCode).toBe(404);
  });

  it("below 0.4.0 ends a start without a Basic user with unauthenticated: no user specified", async () => {
    expect(await startError("0.3.7")).toEqual({
      code: "unauthenticated",
      message: "no user specified",
    });
    expect(await startError("0.3.7", { authorization: BASIC_USER })).toBeUndefined();
  });

  it("from 0.4.0 uses the default user when none is named", async () => {
    const res = await files("0.4.0", "path=/tmp/x");
    await res.body.dump();
    expect(res.statusCode).toBe(404);
    expect(await startError("0.4.0")).toBeUndefined();
    expect(
      await startError("0.4.0", {
        authorization: `Basic ${Buffer.from("nobody:").toString("base64")}`,
      }),
    ).toEqual({ code: "unauthenticated", message: "invalid username: 'nobody'" });
  });

  it("takes a raw octet-stream upload from 0.5.7 only", async () => {
    const old = await files("0.5.6", "path=/tmp/raw", { method: "POST", body: "x" });
    expect(old.statusCode).toBe(500);
    expect(await old.body.json()).toMatchObject({ message: expect.stringContaining("multipart") });
    const raw = await files("0.5.7", "path=/tmp/raw", { method: "POST", body: "x" });
    expect(raw.statusCode).toBe(200);
    await raw.body.dump();
    expect(
      sim.state
        .sandbox(ids["0.5.7"] as string)
        ?.files.get("/tmp/raw")
        ?.toString(),
    ).toBe("x");
  });

  it("routes by E2b-Sandbox-Id/-Port when the Host is an IP, localhost or sandbox.{domain}", async () => {
    const id = ids["0.6.13"] as string;
    const token = sim.state.sandbox(id)?.accessToken;
    for (const host of ["127.0.0.1:1", "localhost", `sandbox.${sim.domain}`]) {
      const res = await request(`${sim.dataUrl}/health`, {
        headers: { host, "e2b-sandbox-id": id, "e2b-sandbox-port": "49983" },
      });
      await res.body.dump();
      expect(res.statusCode).toBe(204);
    }
    const half = await request(`${sim.dataUrl}/health`, {
      headers: { host: "127.0.0.1", "e2b-sandbox-id": id },
    });
    expect(half.statusCode).toBe(400);
    expect(await half.body.text()).toBe("missing header\n");
    const bare = await request(`${sim.dataUrl}/health`, { headers: { host: "127.0.0.1" } });
    expect(bare.statusCode).toBe(400);
    expect(await bare.body.text()).toBe("Invalid host\n");
    // Another domain's shared host does not route on headers.
    const foreign = await request(`${sim.dataUrl}/health`, {
      headers: { host: "sandbox.elsewhere.test", "e2b-sandbox-id": id, "e2b-sandbox-port": "1" },
    });
    await foreign.body.dump();
    expect(foreign.statusCode).toBe(400);
    expect(token).toBeUndefined();
  });

  it("answers GET /health without the access token, and nothing else", async () => {
    const secured = sim.state.addSandbox({ accessToken: "ea_secret" }).sandboxID;
    const health = await request(`${sim.dataUrl}/health`, {
      headers: { host: sim.sandboxHost(secured) },
    });
    await health.body.dump();
    expect(health.statusCode).toBe(204);
    const file = await request(`${sim.dataUrl}/files?path=/x`, {
      headers: { host: sim.sandboxHost(secured) },
    });
    await file.body.dump();
    expect(file.statusCode).toBe(401);
  });
});
