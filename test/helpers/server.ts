// The parts of ServerDeps a listener test does not look at: a fixed body, the text format, an
// empty status, always ready, a silent logger, the system clock. Each test adds what it is about.
import type { ServerDeps } from "../../src/server/server.js";
import { systemClock } from "../../src/util/clock.js";

/** Stub ServerDeps with `over` on top. */
export function stubServerDeps(over: Partial<ServerDeps> = {}): ServerDeps {
  return {
    render: async () => ({ body: [Buffer.from("m 1\n")], contentType: "text/plain" }),
    negotiate: () => "prometheus",
    status: () => ({}),
    ready: () => true,
    logger: { warn: () => {} },
    clock: systemClock,
    ...over,
  };
}
