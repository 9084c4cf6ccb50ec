// The poll cycle's baseline in its own process: fetch every sandbox page with undici, only parse.
// Compiled and run with the exporter child's node flags, so both sides run the same way.
// Argument: the simulator's base URL.
import { Agent, request } from "undici";
import { memoryMB, serveParent } from "./ipc.js";

const apiUrl = process.argv[2] ?? "";
const PAGE = 100;
const MAX_PAGES = 100_000;

/** One walk of every page; ms, items seen and CPU ms (user + system) of this process. */
async function bareLoop(): Promise<{ ms: number; items: number; cpuMs: number }> {
  const agent = new Agent();
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  let token: string | undefined;
  let items = 0;
  for (let page = 0; page < MAX_PAGES; page++) {
    const url = `${apiUrl}/sandboxapi/v1/v2/sandboxes?limit=${PAGE}${token ? `&nextToken=${encodeURIComponent(token)}` : ""}`;
    const res = await request(url, { dispatcher: agent });
    const body = (await res.body.json()) as unknown[];
    items += body.length;
    const next = res.headers["x-next-token"];
    token = typeof next === "string" && next ? next : undefined;
    if (!token) break;
  }
  const ms = performance.now() - t0;
  const cpu = process.cpuUsage(c0);
  await agent.close();
  return { ms, items, cpuMs: (cpu.user + cpu.system) / 1000 };
}

// An idle child on the exporter's runtime (compiled, same node flags): the floor under its RSS.
global.gc?.();
serveParent({ idleMemoryMB: memoryMB() }, { run: () => bareLoop() }, async () => undefined);
