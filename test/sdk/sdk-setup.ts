// The E2B SDK pointed at a simulator: its own options only (apiUrl, sandboxUrl, apiKey), loopback.
import type { ConnectionOpts } from "e2b";
import { Agent, buildConnector } from "undici";
import { ENVD_VERSION_MIX, type Simulator, startSimulator } from "../../src/simulator/index.js";
import { FakeClock } from "../../src/util/clock.js";

/** An E2B-style key (the SDK sends it as X-API-Key). */
export const SDK_API_KEY = "e2b_0123456789abcdef0123456789abcdef01234567";

/** A simulator in E2B mode whose template i runs envd `ENVD_VERSION_MIX[i]`, on a fake clock. */
export async function startSdkSimulator(): Promise<{ sim: Simulator; clock: FakeClock }> {
  const clock = new FakeClock(Date.parse("2026-03-01T10:00:00Z"));
  const sim = await startSimulator({
    flavor: "e2b",
    sandboxes: 40,
    templates: ENVD_VERSION_MIX.length,
    envdVersions: ENVD_VERSION_MIX,
    apiKey: SDK_API_KEY,
    clock,
  });
  return { sim, clock };
}

/**
 * The SDK's connection options for `sim`: the management API at `apiUrl`, every agent call to
 * `sandboxUrl` (the data plane's loopback address, so the SDK routes by its E2b-Sandbox-Id and
 * E2b-Sandbox-Port headers, as it does against hosted E2B), no retries, short request timeouts.
 */
export function sdkOpts(sim: Simulator): ConnectionOpts {
  return {
    apiKey: SDK_API_KEY,
    apiUrl: sim.apiUrl,
    sandboxUrl: sim.dataUrl,
    requestTimeoutMs: 5_000,
  };
}

/** The template running envd `version` in a simulator started by startSdkSimulator. */
export function templateOn(sim: Simulator, version: string): string {
  const t = sim.state.templates.find((x) => x.envdVersion === version);
  if (!t) throw new Error(`no template runs envd ${version}`);
  return t.templateID;
}

/**
 * A dispatcher that dials `sim`'s data plane for every host, keeping the SDK's Host header, as the
 * exporter's proxyNodeIp does: the way to reach a sandbox port by `sandbox.getHost(port)`.
 */
export function dataPlaneDialer(sim: Simulator): Agent {
  const base = buildConnector({});
  return new Agent({
    connect: (opts, cb) => base({ ...opts, hostname: "127.0.0.1", port: String(sim.dataPort) }, cb),
  });
}
