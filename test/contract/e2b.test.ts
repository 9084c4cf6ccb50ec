// The exporter's client against E2B's published OpenAPI document: every request it makes in E2B
// mode is an operation the document declares (with declared query parameters and a valid body),
// and every answer of the E2B-mode simulator to those requests is valid under the document.
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ControlClient } from "../../src/platform/control/control.js";
import { PlatformNotFoundError } from "../../src/platform/http-errors.js";
import { DEFAULT_TEAM_ID, type Simulator, startSimulator } from "../../src/simulator/index.js";
import { FakeClock } from "../../src/util/clock.js";
import { testControl } from "../helpers/control.js";
import { OpenApiContract } from "./openapi.js";
import { type Recorder, startRecorder } from "./recorder.js";

const DOC = fileURLToPath(new URL("../fixtures/e2b/openapi.yml", import.meta.url));
const API_KEY = "e2b_contract_key";
const ADMIN_TOKEN = "contract-admin-token";
/**
 * Requests the client makes that E2B's document does not have: the overview is platform-specific
 * on purpose; the events API is served by E2B and documented in its docs, not in this document.
 */
const NOT_IN_DOCUMENT = ["GET /cluster/overview", "GET /events/sandboxes"];
/** Every operation the client uses on E2B, as the document names them. */
const OPERATIONS_USED = [
  "DELETE /sandboxes/{sandboxID}",
  "DELETE /templates/{templateID}",
  "GET /health",
  "GET /nodes",
  "GET /nodes/{nodeID}",
  "GET /sandboxes/metrics",
  "GET /sandboxes/{sandboxID}",
  "GET /sandboxes/{sandboxID}/metrics",
  "GET /teams/{teamID}/metrics",
  "GET /teams/{teamID}/metrics/max",
  "GET /templates",
  "GET /templates/{templateID}",
  "GET /templates/{templateID}/builds/{buildID}/status",
  "GET /v2/sandboxes",
  "GET /v2/sandboxes/{sandboxID}/logs",
  "POST /sandboxes",
  "POST /sandboxes/{sandboxID}/connect",
  "POST /sandboxes/{sandboxID}/pause",
];
/** ControlClient members that make no request of their own. */
const NOT_REQUESTS = [
  "constructor",
  "withOwnNormalizer",
  "invalid",
  "normalizer",
  "close",
  "send",
  "page",
  "decode",
  "listQuery",
  // The steps of resumeSandbox in E2B mode (connect by v1 or v2), exercised through it.
  "connectSandbox",
  "connectBy",
  "resumed",
  // The send of createSandbox that classifies a 429, exercised through it.
  "sendCreate",
];

/** The ControlClient methods the test below calls; a new one must be added there and here. */
const METHODS_CALLED = [
  "health",
  "clusterOverview",
  "listNodes",
  "getNode",
  "listTemplates",
  "getTemplate",
  "templateBuildStatus",
  "getSandbox",
  "listSandboxes",
  "listSandboxPage",
  "listLogs",
  "pauseSandbox",
  "resumeSandbox",
  "deleteSandbox",
  "snapshotDetail",
  "deleteSnapshot",
  "createSandbox",
  "sandboxUsage",
  "sandboxUsageHistory",
  "listSandboxEvents",
  "teamMetrics",
  "teamMetricsMax",
  "getJson",
  "getJsonReply",
];

describe("E2B contract", () => {
  const clock = new FakeClock(Date.parse("2026-03-01T10:00:00Z"));
  const contract = OpenApiContract.load(DOC);
  let sim: Simulator;
  let recorder: Recorder;

  beforeAll(async () => {
    sim = await startSimulator({
      flavor: "e2b",
      sandboxes: 40,
      templates: 3,
      nodes: 2,
      apiKey: API_KEY,
      adminToken: ADMIN_TOKEN,
      clock,
    });
    recorder = await startRecorder(sim.apiUrl);
    const client = testControl({
      apiUrl: recorder.url,
      apiKey: API_KEY,
      apiPrefix: "",
      flavor: "e2b",
      adminToken: ADMIN_TOKEN,
      clock,
    });
    try {
      await exercise(client, sim, clock);
    } finally {
      await client.close();
    }
  });
  afterAll(async () => {
    await recorder?.close();
    await sim?.close();
  });

  it("calls every public ControlClient method that makes a request", () => {
    const members = Object.getOwnPropertyNames(ControlClient.prototype).filter(
      (m) => !NOT_REQUESTS.includes(m),
    );
    expect(members.sort(), "a new ControlClient method belongs in exercise()").toEqual(
      [...METHODS_CALLED].sort(),
    );
  });

  it("makes only requests the document declares, but for the platform-specific ones", () => {
    const missing = new Set<string>();
    const used = new Set<string>();
    for (const x of recorder.exchanges) {
      const template = contract.template(x.path);
      const op = template === undefined ? undefined : contract.operation(template, x.method);
      if (op) used.add(`${x.method} ${op.template}`);
      else missing.add(`${x.method} ${x.path}`);
    }
    expect([...missing].sort()).toEqual(NOT_IN_DOCUMENT);
    expect([...used].sort()).toEqual(OPERATIONS_USED);
  });

  it("sends only query parameters the operation declares", () => {
    const undeclared: string[] = [];
    const seen = new Set<string>();
    for (const x of recorder.exchanges) {
      const op = operationOf(contract, x.method, x.path);
      if (!op) continue;
      const declared = contract.queryParameters(op);
      for (const name of x.queryNames) {
        seen.add(`${x.method} ${op.template}?${name}`);
        if (!declared.has(name)) undeclared.push(`${x.method} ${op.template}?${name}`);
      }
    }
    expect(undeclared).toEqual([]);
    // The filters and paging were exercised, not merely absent.
    for (const q of ["state", "metadata", "limit", "nextToken"])
      expect(seen).toContain(`GET /v2/sandboxes?${q}`);
    for (const q of ["cursor", "limit", "direction"])
      expect(seen).toContain(`GET /v2/sandboxes/{sandboxID}/logs?${q}`);
  });

  it("sends request bodies valid under the document", () => {
    const invalid: string[] = [];
    for (const x of recorder.exchanges) {
      const op = operationOf(contract, x.method, x.path);
      if (!op) continue;
      const validate = contract.requestValidator(op);
      const required = (op.definition.requestBody as { required?: boolean } | undefined)?.required;
      if (x.requestBody === "") {
        if (required) invalid.push(`${x.method} ${op.template}: no body`);
        continue;
      }
      if (!validate) {
        invalid.push(`${x.method} ${op.template}: a body the operation does not take`);
      } else if (!validate(JSON.parse(x.requestBody))) {
        invalid.push(`${x.method} ${op.template}: ${JSON.stringify(validate.errors)}`);
      }
    }
    expect(invalid).toEqual([]);
  });

  it("gets answers whose status, body and headers are valid under the document", () => {
    const invalid: string[] = [];
    let checked = 0;
    for (const x of recorder.exchanges) {
      const op = operationOf(contract, x.method, x.path);
      if (!op) {
        // E2B serves its events API; it has no cluster overview.
        const served = x.path.startsWith("/events/");
        expect(x.status, `${x.method} ${x.path}`).toBe(served ? 200 : 404);
        continue;
      }
      const where = `${x.method} ${op.template} -> ${x.status}`;
      expect(x.status, where).toBeGreaterThanOrEqual(200);
      expect(x.status, where).toBeLessThan(300);
      const response = contract.response(op, x.status);
      if (!response) {
        invalid.push(`${where}: status not declared`);
        continue;
      }
      const validate = contract.responseValidator(response);
      if (!validate) {
        if (x.responseBody !== "") invalid.push(`${where}: a body where none is declared`);
      } else if (!validate(JSON.parse(x.responseBody))) {
        invalid.push(`${where}: ${JSON.stringify(validate.errors)}`);
      }
      for (const [name, check] of contract.headerValidators(response)) {
        const raw = x.responseHeaders[name];
        if (typeof raw !== "string") continue;
        const value = /^-?\d+$/.test(raw) ? Number(raw) : raw;
        if (!check(value)) invalid.push(`${where}: header ${name} ${JSON.stringify(raw)}`);
      }
      checked++;
    }
    expect(invalid).toEqual([]);
    expect(checked).toBe(recorder.exchanges.length - NOT_IN_DOCUMENT.length);
  });

  it("gets the list headers E2B documents: a next token, and the running total when asked for running", () => {
    const lists = recorder.exchanges.filter((x) => x.path === "/v2/sandboxes");
    const running = lists.filter((x) => (x.query.get("state") ?? "running").includes("running"));
    const pausedOnly = lists.filter((x) => x.query.get("state") === "paused");
    expect(running.length).toBeGreaterThan(0);
    expect(pausedOnly.length).toBeGreaterThan(0);
    for (const x of running) expect(x.responseHeaders["x-total-running"]).toMatch(/^\d+$/);
    for (const x of pausedOnly) expect(x.responseHeaders["x-total-running"]).toBeUndefined();
    expect(lists.some((x) => typeof x.responseHeaders["x-next-token"] === "string")).toBe(true);
  });
});

function operationOf(contract: OpenApiContract, method: string, path: string) {
  const template = contract.template(path);
  return template === undefined ? undefined : contract.operation(template, method);
}

/** Every request method of the client, once or more, with the arguments E2B mode uses. */
async function exercise(client: ControlClient, sim: Simulator, clock: FakeClock): Promise<void> {
  expect((await client.health()).up).toBe(true);
  await expect(client.clusterOverview()).rejects.toBeInstanceOf(PlatformNotFoundError);

  const nodes = await client.listNodes();
  expect(nodes.length).toBe(2);
  expect((await client.getNode(nodes[0]!.id)).id).toBe(nodes[0]!.id);

  const templates = await client.listTemplates();
  expect(templates.length).toBe(3);
  expect((await client.getTemplate(templates[0]!.id)).id).toBe(templates[0]!.id);
  // A collector's own read of an endpoint, body as sent (and with its headers).
  expect(await client.getJson("/templates", "/templates")).toHaveLength(3);
  expect((await client.getJsonReply("/templates", "/templates")).body).toHaveLength(3);
  // A failed build: its status answer carries the reason (valid under TemplateBuildInfo).
  const failed = sim.state.buildTemplate(templates[1]!.id, "error", {
    message: "exit status 1",
    step: "run",
  });
  expect(await client.templateBuildStatus(templates[1]!.id, failed)).toEqual({
    templateId: templates[1]!.id,
    buildId: failed,
    status: "error",
    reason: { message: "exit status 1", step: "run" },
  });

  // Three sandboxes whose metadata needs E2B's encoding (a space in a key and in a value).
  for (let i = 0; i < 3; i++) {
    clock.advance(1_000);
    sim.state.addSandbox({ metadata: { "team name": "ml ops", env: "prod" } });
  }
  const filter = { metadata: "team name=ml ops&env=prod", state: "running,paused" };
  const first = await client.listSandboxPage({ ...filter, limit: 2 });
  expect(first.items().length).toBe(2);
  expect(first.totalRunning).toBe(3);
  expect(first.nextToken).toBeDefined();
  const second = await client.listSandboxPage({ ...filter, limit: 2, nextToken: first.nextToken });
  expect(second.items().length).toBe(1);
  expect(second.nextToken).toBeUndefined();

  // The client's default states (running and paused), and an explicit one.
  const all = await client.listSandboxes({ limit: 100 });
  const paused = await client.listSandboxes({ state: "paused", limit: 100 });
  expect(paused.items.length).toBeGreaterThan(0);
  expect(paused.items.every((s) => s.state === "paused")).toBe(true);
  const running = all.items.filter((s) => s.state === "running");
  expect(running.length).toBeGreaterThan(2);

  // The oldest: their generated logs and usage lie in the past.
  const target = running.at(-1)!.id;
  const other = running.at(-2)!.id;
  expect((await client.getSandbox(target)).id).toBe(target);
  const logs = await client.listLogs(target, {
    cursor: String(clock.now()),
    limit: 3,
    direction: "backward",
  });
  expect(logs.items.length).toBe(3);
  expect(logs.items.every((e) => typeof e.message === "string")).toBe(true);

  await client.pauseSandbox(target);
  expect(sim.state.sandbox(target)?.state).toBe("paused");
  expect((await client.resumeSandbox(target, { timeout: 60 })).id).toBe(target);
  expect(sim.state.sandbox(target)?.state).toBe("running");
  // Connect on a running sandbox is a no-op that answers 200.
  expect((await client.resumeSandbox(target, { timeout: 60 })).id).toBe(target);

  const created = await client.createSandbox({
    templateId: templates[0]!.id,
    timeoutS: 30,
    metadata: { purpose: "contract" },
  });
  expect(created.accessToken).toMatch(/^ea_/);

  const usage = await client.sandboxUsage([created.id, other]);
  expect(usage.size).toBe(2);
  const nowS = Math.floor(clock.now() / 1000);
  const history = await client.sandboxUsageHistory(other, nowS - 60, nowS);
  expect(history.length).toBeGreaterThan(0);

  // A snapshot's details by its raw template id, and a named one deleted by its snapshot id.
  const source = sim.state.sandbox(other)!;
  const raw = sim.state.snapshots.take(source, {});
  const detail = await client.snapshotDetail(raw.templateID);
  expect(detail).toMatchObject({ createdAt: raw.createdAt, lastSpawnedAt: null });
  sim.state.snapshots.take(source, { alias: "contract" });
  await client.deleteSnapshot("sim-team/contract:default");
  expect(sim.state.snapshots.resolve("sim-team/contract")).toBeUndefined();

  await client.deleteSandbox(created.id);
  expect(sim.state.sandbox(created.id)).toBeUndefined();

  // The create and the kill above are events; the team's capacity over the last minute.
  const events = await client.listSandboxEvents({ limit: 10 });
  expect(events.items.some((e) => e?.sandboxId === created.id && e.type === "killed")).toBe(true);
  const points = await client.teamMetrics(DEFAULT_TEAM_ID, nowS - 60, nowS);
  expect(points.length).toBeGreaterThan(0);
  const max = await client.teamMetricsMax(DEFAULT_TEAM_ID, "concurrent_sandboxes", nowS - 60, nowS);
  expect(max.value).toBeGreaterThan(0);
}
