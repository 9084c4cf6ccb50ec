// The contract reader itself: path templates, $ref'd parameters, nullable fields, and that its
// validators do refuse bodies of the wrong shape (so a passing contract test means something).
import { fileURLToPath } from "node:url";
import { request } from "undici";
import { describe, expect, it } from "vitest";
import { startSimulator } from "../../src/simulator/index.js";
import { OpenApiContract, type Operation } from "./openapi.js";

const DOC = fileURLToPath(new URL("../fixtures/e2b/openapi.yml", import.meta.url));
const contract = OpenApiContract.load(DOC);

function op(method: string, template: string): Operation {
  const found = contract.operation(template, method);
  if (!found) throw new Error(`${method} ${template} is not in the document`);
  return found;
}

function validator200(method: string, template: string) {
  const response = contract.response(op(method, template), 200);
  const validate = response && contract.responseValidator(response);
  if (!validate) throw new Error(`${method} ${template} has no 200 JSON body`);
  return validate;
}

describe("OpenApiContract", () => {
  it("names the template of a path, preferring literal segments", () => {
    expect(contract.template("/sandboxes/metrics")).toBe("/sandboxes/metrics");
    expect(contract.template("/sandboxes/i123/metrics")).toBe("/sandboxes/{sandboxID}/metrics");
    expect(contract.template("/sandboxes/i123")).toBe("/sandboxes/{sandboxID}");
    expect(contract.template("/v2/sandboxes")).toBe("/v2/sandboxes");
    expect(contract.template("/cluster/overview")).toBeUndefined();
    expect(contract.operation("/sandboxes/{sandboxID}", "PUT")).toBeUndefined();
  });

  it("reads query parameters declared inline and through components/parameters", () => {
    expect([...contract.queryParameters(op("GET", "/v2/sandboxes"))].sort()).toEqual(
      ["limit", "metadata", "nextToken", "order", "startedAfter", "state", "template"].sort(),
    );
    expect(contract.queryParameters(op("GET", "/sandboxes/{sandboxID}"))).toEqual(new Set());
  });

  it("accepts null where the document says nullable, and nothing else of the wrong type", () => {
    const validate = contract.responseValidator(contract.response(op("GET", "/templates"), 200)!)!;
    const template = {
      templateID: "t1",
      buildID: "b1",
      cpuCount: 2,
      memoryMB: 512,
      diskSizeMB: 1024,
      public: false,
      aliases: ["base"],
      names: ["base"],
      createdAt: "2026-03-01T10:00:00Z",
      updatedAt: "2026-03-01T10:00:00Z",
      createdBy: null,
      lastSpawnedAt: null,
      spawnCount: 0,
      buildCount: 1,
      envdVersion: "0.2.4",
      buildStatus: "ready",
    };
    expect(validate([template]), JSON.stringify(validate.errors)).toBe(true);
    expect(validate([{ ...template, lastSpawnedAt: 5 }])).toBe(false);
    expect(validate([{ ...template, createdBy: { id: "not-a-uuid", email: null } }])).toBe(false);
    expect(validate([{ ...template, buildStatus: "done" }])).toBe(false);
    expect(validate([{ ...template, memoryMB: 64 }])).toBe(false);
  });

  it("refuses the shapes of this platform's API where E2B's differ", async () => {
    const sim = await startSimulator({ sandboxes: 10, nodes: 1, templates: 1 });
    try {
      const get = async (path: string) =>
        (await request(`${sim.managementUrl}${path}`)).body.json() as Promise<unknown>;
      const nodes = validator200("GET", "/nodes");
      expect(nodes(await get("/nodes"))).toBe(false);
      expect(JSON.stringify(nodes.errors)).toContain("'id'");
      const templates = validator200("GET", "/templates");
      expect(templates(await get("/templates"))).toBe(false);
      expect(JSON.stringify(templates.errors)).toContain("'buildStatus'");
      const logs = validator200("GET", "/v2/sandboxes/{sandboxID}/logs");
      const id = sim.state.sortedIds()[0]!;
      expect(logs(await get(`/v2/sandboxes/${id}/logs`))).toBe(false);
      expect(JSON.stringify(logs.errors)).toContain("'message'");
    } finally {
      await sim.close();
    }
  });
});
