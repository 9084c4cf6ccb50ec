// The templates collector reads E2B's paged GET /v2/templates (GET /templates is deprecated,
// e2b-dev/infra#3059): against a hostile template API written apart from the simulator, 5,000
// templates in 50 requests, a 404 or 405 falling back to GET /templates (remembered until the
// re-check), bad paging ending the read with an error instead of a loop; and the E2B-mode simulator
// serving /v2/templates as E2B does (valid under E2B's OpenAPI document), the sandboxapi one not.
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { TickContext } from "../../src/collect/collector.js";
import { templatesCollector } from "../../src/collect/templates/templates.js";
import type { ControlClient } from "../../src/platform/control/control.js";
import { startSimulator } from "../../src/simulator/index.js";
import { FakeClock } from "../../src/util/clock.js";
import { OpenApiContract } from "../contract/openapi.js";
import { testControl } from "../helpers/control.js";
import { type JsonAnswer, startJsonApi } from "../helpers/json-api.js";
import { pollSettings, testPoller, tickAndWait } from "../helpers/poller.js";

const RECHECK_MS = 60_000;

/** The hostile platform: what /v2/templates does, and every request it got. */
interface Platform {
  ids: string[];
  v2: "paged" | 404 | 405 | "repeatToken" | "notAList" | "goneOnPage2";
  /** Whether GET /templates is served (an install without either route: false). */
  v1: boolean;
  /** Requests by route ("GET /v2/templates", "GET /templates"). */
  counts: Map<string, number>;
  /** Every `limit` asked of /v2/templates. */
  limits: string[];
}

let up: Platform;
let clock: FakeClock;
let control: ControlClient;
let close: () => Promise<void>;

function record(id: string): Record<string, unknown> {
  return { templateID: id, buildID: `b-${id}`, buildStatus: "ready", spawnCount: 3 };
}

function route(url: URL): JsonAnswer {
  const key = `GET ${url.pathname}`;
  up.counts.set(key, (up.counts.get(key) ?? 0) + 1);
  if (url.pathname === "/templates" && up.v1) return [200, up.ids.map(record)];
  if (url.pathname !== "/v2/templates") return [404, { code: 404, message: "no route" }];
  up.limits.push(url.searchParams.get("limit") ?? "");
  if (typeof up.v2 === "number") return [up.v2, { code: up.v2, message: "not here" }];
  if (up.v2 === "notAList") return [200, { message: "maintenance" }];
  const limit = Number(url.searchParams.get("limit") ?? 100);
  const from = Number(url.searchParams.get("nextToken") ?? 0);
  if (up.v2 === "goneOnPage2" && from > 0) return [404, { code: 404, message: "gone" }];
  const page = up.ids.slice(from, from + Math.min(limit, 100));
  const more = from + page.length < up.ids.length;
  const token = up.v2 === "repeatToken" ? "1" : String(from + page.length);
  return [200, page.map(record), more ? { "X-Next-Token": token } : {}];
}

beforeAll(async () => {
  clock = new FakeClock(1_790_000_000_000);
  ({ control, close } = await startJsonApi(route, clock));
});
beforeEach(() => {
  up = { ids: ids(5), v2: "paged", v1: true, counts: new Map(), limits: [] };
});
afterAll(() => close());

function ids(n: number): string[] {
  return Array.from({ length: n }, (_, i) => `tpl-${String(i).padStart(5, "0")}`);
}

function ctx(reader: TickContext["reader"] = control): TickContext {
  return { reader, clock, poll: pollSettings({ capabilityRecheckMs: RECHECK_MS }) };
}

const read = (previous?: Parameters<typeof templatesCollector.read>[1]) =>
  templatesCollector.read(ctx(), previous);

describe("templates collector, GET /v2/templates", () => {
  it("reads 5,000 templates in 50 requests of 100, each once, and no GET /templates", async () => {
    up.ids = ids(5_000);
    const r = await read();
    expect(up.counts.get("GET /v2/templates")).toBe(50);
    expect(r.requests).toBe(50);
    expect(up.counts.get("GET /templates")).toBeUndefined();
    expect(new Set(up.limits)).toEqual(new Set(["100"]));
    expect(r.value.map((t) => t.id)).toEqual(up.ids);
    // Normalized as GET /templates' records are: the generic numeric fields come along.
    expect(r.value[0]).toMatchObject({ id: "tpl-00000", status: "ready", version: "b-tpl-00000" });
    expect(r.value[0]?.numeric).toMatchObject({ spawn_count: 3 });
  });

  it.each([404, 405] as const)(
    "falls back to GET /templates when /v2/templates answers %s, and asks v2 again only after the re-check",
    async (status) => {
      up.v2 = status;
      const first = await read();
      expect(first.value.map((t) => t.id)).toEqual(up.ids);
      expect(first.requests).toBe(2);
      expect([up.counts.get("GET /v2/templates"), up.counts.get("GET /templates")]).toEqual([1, 1]);
      clock.advance(RECHECK_MS - 1);
      const second = await read(first.value);
      expect(second.requests).toBe(1);
      expect([up.counts.get("GET /v2/templates"), up.counts.get("GET /templates")]).toEqual([1, 2]);
      // The re-check: v2 is served now (an upgraded install), and read from then on.
      up.v2 = "paged";
      clock.advance(1);
      const third = await read(second.value);
      expect(third.requests).toBe(1);
      expect([up.counts.get("GET /v2/templates"), up.counts.get("GET /templates")]).toEqual([2, 2]);
      await read(third.value);
      expect([up.counts.get("GET /v2/templates"), up.counts.get("GET /templates")]).toEqual([3, 2]);
    },
  );

  it("ends a walk whose next token repeats with an error, not a loop", async () => {
    up.ids = ids(1_000);
    up.v2 = "repeatToken";
    await expect(read()).rejects.toMatchObject({ code: "ERR_PAGING_REPEATED_TOKEN" });
    expect(up.counts.get("GET /v2/templates")).toBeLessThanOrEqual(3);
    expect(up.counts.get("GET /templates")).toBeUndefined();
  });

  it("reads a long list over several ticks, publishing the last complete list while a pass goes on", async () => {
    up.ids = ids(5_000);
    const c = (): TickContext => ({
      ...ctx(),
      poll: pollSettings({ capabilityRecheckMs: RECHECK_MS, listPagesPerTick: 20 }),
    });
    const first = await templatesCollector.read(c());
    // Nothing complete yet: what was read so far, flagged.
    expect(first.value).toHaveLength(2_000);
    expect(first.lists?.[0]?.truncated).toMatchObject({
      code: "ERR_PAGING_PAGE_LIMIT",
      resumes: true,
    });
    const second = await templatesCollector.read(c(), first.value);
    const whole = await templatesCollector.read(c(), second.value);
    expect(whole.value.map((t) => t.id)).toEqual(up.ids);
    expect(whole.lists?.[0]?.truncated).toBeUndefined();
    expect(up.counts.get("GET /v2/templates")).toBe(50);
    // A new pass: the last complete list is published until it ends.
    up.ids = ids(5_001);
    const during = await templatesCollector.read(c(), whole.value);
    expect(during.value).toHaveLength(5_000);
    const more = await templatesCollector.read(c(), during.value);
    const ended = await templatesCollector.read(c(), more.value);
    expect(ended.value).toHaveLength(5_001);
  });

  it("fails, without falling back, on a 404 past the first page or a body that is no list", async () => {
    up.ids = ids(250);
    up.v2 = "goneOnPage2";
    await expect(read()).rejects.toMatchObject({ code: "ERR_PLATFORM_NOT_FOUND" });
    up.v2 = "notAList";
    await expect(read()).rejects.toMatchObject({
      code: "ERR_PLATFORM_BAD_BODY",
      endpoint: "/v2/templates",
    });
    expect(up.counts.get("GET /templates")).toBeUndefined();
  });

  it("is unsupported through the poller when neither route is served", async () => {
    up.v2 = 404;
    up.v1 = false;
    const p = testPoller({
      reader: control,
      clock,
      intervalMs: 1_000,
      collectors: [templatesCollector],
    });
    const s = await tickAndWait(p);
    expect(s.collectors.templates).toMatchObject({ unsupported: true, success: false });
  });
});

describe("the simulator's GET /v2/templates", () => {
  const DOC = fileURLToPath(new URL("../fixtures/e2b/openapi.yml", import.meta.url));
  const contract = OpenApiContract.load(DOC);

  it("pages the E2B flavor's templates as E2B does, newest first, valid under its OpenAPI document", async () => {
    const sim = await startSimulator({ flavor: "e2b", sandboxes: 5, templates: 250, nodes: 1 });
    const client = testControl({ apiUrl: sim.apiUrl, apiPrefix: "", flavor: "e2b" });
    try {
      const op = contract.operation("/v2/templates", "GET");
      const valid = contract.responseValidator(contract.response(op!, 200)!)!;
      const pages: unknown[][] = [];
      let token: string | undefined;
      for (let i = 0; i < 5; i++) {
        const r = await client.getJsonReply("/v2/templates", "/v2/templates", {
          limit: 100,
          nextToken: token,
        });
        expect(valid(r.body)).toBe(true);
        pages.push(r.body as unknown[]);
        token = r.headers["x-next-token"] as string | undefined;
        if (token === undefined) break;
      }
      expect(pages.map((p) => p.length)).toEqual([100, 100, 50]);
      const all = pages.flat() as Array<{ templateID: string; createdAt: string }>;
      expect(new Set(all.map((t) => t.templateID)).size).toBe(250);
      const times = all.map((t) => Date.parse(t.createdAt));
      expect(times).toEqual([...times].sort((a, b) => b - a));
      // What E2B refuses: a page past 100, a token that holds no cursor.
      await expect(
        client.getJson("/v2/templates", "/v2/templates", { limit: 101 }),
      ).rejects.toMatchObject({ status: 400 });
      await expect(
        client.getJson("/v2/templates", "/v2/templates", { nextToken: "bm90LWEtY3Vyc29y" }),
      ).rejects.toMatchObject({ status: 400 });
      // The collector reads it there, three requests, never the deprecated route.
      const before = sim.counters.get("GET /templates");
      const r = await templatesCollector.read({
        reader: client,
        clock,
        poll: pollSettings(),
      });
      expect(r.value).toHaveLength(250);
      expect(r.requests).toBe(3);
      expect(sim.counters.get("GET /templates")).toBe(before);
    } finally {
      await client.close();
      await sim.close();
    }
  });

  it("is not served by the sandboxapi flavor: read from /templates, never asked there when the flavor is known", async () => {
    const sim = await startSimulator({ sandboxes: 5, templates: 3, nodes: 1 });
    const client = testControl({ apiUrl: sim.apiUrl });
    try {
      const poll = pollSettings();
      const known = await templatesCollector.read({
        reader: client,
        clock,
        poll,
        flavor: "sandboxapi",
      });
      expect(known.value).toHaveLength(3);
      expect(known.requests).toBe(1);
      expect(sim.counters.get("GET /v2/templates")).toBe(0);
      // A flavor not given: learned from the 404.
      const learned = await templatesCollector.read({ reader: client, clock, poll });
      expect(learned.value).toHaveLength(3);
      expect(learned.requests).toBe(2);
      expect(sim.counters.get("GET /templates")).toBe(2);
    } finally {
      await client.close();
      await sim.close();
    }
  });
});
