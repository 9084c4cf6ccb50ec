// The ControlClient the tests build: the loopback defaults in one place, each test's options on top.
import { ControlClient, type ControlOptions } from "../../src/platform/control/control.js";
import { ControlTransport } from "../../src/platform/control/transport.js";

/** What a test client does unless told otherwise: no key, no retries, no proxy, 5 s timeout. */
const TEST_DEFAULTS = {
  apiKey: "",
  authStyle: "x-api-key",
  authHeader: "X-API-Key",
  timeoutMs: 5_000,
  retries: 0,
  envProxy: false,
} as const satisfies Partial<ControlOptions>;

/** A ControlClient of `apiUrl` with the test defaults, `over` winning. */
export function testControl(o: Partial<ControlOptions> & { apiUrl: string }): ControlClient {
  return new ControlClient({ ...TEST_DEFAULTS, ...o });
}

/** The transport alone (no client, no normalizer) of `apiUrl` with the test defaults, `over` winning. */
export function testTransport(o: Partial<ControlOptions> & { apiUrl: string }): ControlTransport {
  return new ControlTransport({ ...TEST_DEFAULTS, ...o });
}
