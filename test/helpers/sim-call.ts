// One JSON request to a simulator's management API, answered as status and parsed body.
import { request } from "undici";
import type { Simulator } from "../../src/simulator/index.js";

/** `method path` with `body` as JSON; the answer's status and its JSON (undefined when empty). */
export async function simCall(
  sim: Simulator,
  method: string,
  path: string,
  body?: unknown,
  // biome-ignore lint/suspicious/noExplicitAny: JSON.parse's own type; the tests read it freely.
): Promise<{ status: number; json: any }> {
  const res = await request(`${sim.managementUrl}${path}`, {
    method: method as "GET",
    headers: { "content-type": "application/json" },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  const text = await res.body.text();
  return { status: res.statusCode, json: text ? JSON.parse(text) : undefined };
}
