// E2B's own JavaScript SDK (npm `e2b`, pinned 2.51.0) judges how the simulator serves sandbox
// ports, as E2B's proxy does: the SDK's `getHost(port)` names the host, `commands.run(..., {
// background: true })` starts the service, and the request is Node's own fetch, as E2B's
// packages/js-sdk/tests/sandbox/host.test.ts makes it. Its host `{port}-{id}.{domain}` resolves
// nowhere here, so the fetch's dispatcher dials the simulator's data plane (Host stays the SDK's).
import { readFileSync } from "node:fs";
import { Sandbox } from "e2b";
import { type Agent, fetch } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CURRENT_ENVD_VERSION, type Simulator } from "../../src/simulator/index.js";
import { dataPlaneDialer, sdkOpts, startSdkSimulator, templateOn } from "./sdk-setup.js";

/** The proxy's answers, from infra packages/shared/pkg/proxy/template (test/fixtures/e2b/proxy). */
const ANSWERS = JSON.parse(
  readFileSync(new URL("../fixtures/e2b/proxy/answers.json", import.meta.url), "utf8"),
) as Record<string, { status: number; body: string }>;

function expected(name: string, sandboxId: string, port?: number): unknown {
  const a = ANSWERS[name]!;
  return JSON.parse(a.body.replace("SANDBOX", sandboxId).replace("PORT", String(port)));
}

describe("E2B SDK 2.51: sandbox ports through the simulator's proxy", () => {
  let sim: Simulator;
  let dialer: Agent;

  beforeAll(async () => {
    ({ sim } = await startSdkSimulator());
    dialer = dataPlaneDialer(sim);
  });
  afterAll(async () => {
    await dialer.close();
    await sim.close();
  });

  /** Node's fetch of the SDK's host, over the simulator's data plane. */
  const get = (host: string, path = "/") => fetch(`http://${host}${path}`, { dispatcher: dialer });

  async function create(opts: Parameters<typeof Sandbox.create>[1] = {}) {
    return Sandbox.create(templateOn(sim, CURRENT_ENVD_VERSION), { ...sdkOpts(sim), ...opts });
  }

  it("serves the file of `python -m http.server 8000` started in the background: 200", async () => {
    const sandbox = await create();
    try {
      await sandbox.files.write("/home/user/hello.txt", "hello from the sandbox\n");
      const cmd = await sandbox.commands.run("python -m http.server 8000", { background: true });
      expect(cmd.pid).toBeGreaterThan(0);
      const res = await get(sandbox.getHost(8000), "/hello.txt");
      expect(res.status).toBe(200);
      expect(await res.text()).toBe("hello from the sandbox\n");
      const listing = await get(sandbox.getHost(8000));
      expect(listing.status).toBe(200);
      expect(await listing.text()).toContain('<a href="hello.txt">hello.txt</a>');
    } finally {
      await sandbox.kill();
    }
  });

  it("answers a closed port as the proxy does: 502 with its JSON", async () => {
    const sandbox = await create();
    try {
      const res = await get(sandbox.getHost(3000));
      expect(res.status).toBe(ANSWERS.portClosed!.status);
      expect(res.headers.get("content-type")).toBe("application/json; charset=utf-8");
      expect(await res.json()).toEqual(expected("portClosed", sandbox.sandboxId, 3000));
    } finally {
      await sandbox.kill();
    }
  });

  it("answers a killed sandbox's port as the SDK's host test expects: 502 not found", async () => {
    const sandbox = await create();
    const host = sandbox.getHost(3000);
    await sandbox.kill();
    const res = await get(host);
    expect(res.status).toBe(502);
    const json = (await res.json()) as { message: string; sandboxId: string; code: number };
    expect(json.message).toBe("The sandbox was not found");
    expect(sandbox.sandboxId.startsWith(json.sandboxId)).toBe(true);
    expect(json.code).toBe(502);
  });

  it("wakes a paused sandbox created with autoResume by a request to its port", async () => {
    const sandbox = await create({ lifecycle: { onTimeout: "pause", autoResume: true } });
    try {
      await sandbox.files.write("/home/user/index.html", "awake\n");
      await sandbox.commands.run("python -m http.server 8080", { background: true });
      expect(await sandbox.pause()).toBe(true);
      expect((await sandbox.getInfo()).state).toBe("paused");
      const res = await get(sandbox.getHost(8080));
      expect(res.status).toBe(200);
      expect(await res.text()).toBe("awake\n");
      expect((await sandbox.getInfo()).state).toBe("running");
    } finally {
      await sandbox.kill();
    }
  });

  it("leaves a paused sandbox created without autoResume paused: 502 not found", async () => {
    const sandbox = await create({ lifecycle: { onTimeout: "pause" } });
    try {
      await sandbox.commands.run("python -m http.server 8080", { background: true });
      await sandbox.pause();
      const res = await get(sandbox.getHost(8080));
      expect(res.status).toBe(502);
      expect(await res.json()).toEqual(expected("sandboxNotFound", sandbox.sandboxId));
      expect((await sandbox.getInfo()).state).toBe("paused");
    } finally {
      await sandbox.kill();
    }
  });

  it("wants the traffic token of a sandbox whose public traffic is restricted", async () => {
    const sandbox = await create({ network: { allowPublicTraffic: false } });
    try {
      expect(sandbox.trafficAccessToken).toBeTruthy();
      await sandbox.files.write("/home/user/a.txt", "a\n");
      await sandbox.commands.run("python3 -m http.server 8000", { background: true });
      const bare = await get(sandbox.getHost(8000), "/a.txt");
      expect(bare.status).toBe(403);
      expect(await bare.json()).toEqual(expected("trafficTokenMissing", sandbox.sandboxId));
      const res = await fetch(`http://${sandbox.getHost(8000)}/a.txt`, {
        dispatcher: dialer,
        headers: { "e2b-traffic-access-token": sandbox.trafficAccessToken ?? "" },
      });
      expect(res.status).toBe(200);
    } finally {
      await sandbox.kill();
    }
  });
});
