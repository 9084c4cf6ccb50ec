// platform.teams and its neighbours: each problem names its entry and what would be accepted.
import { describe, expect, it } from "vitest";
import { loadYaml, yamlProblems } from "../helpers/config-file.js";

const TWO = `platform:
  adminTokenFile: /run/admin
  teams:
    - {id: a, name: Alpha}
    - {id: b}
`;

describe("platform.teams", () => {
  it("loads two teams read with the admin token", () => {
    const c = loadYaml(TWO);
    expect(c.platform.teams).toEqual([{ id: "a", name: "Alpha" }, { id: "b" }]);
    expect(c.platform.discoverTeams).toBe(false);
  });

  it("refuses a team listed twice, and one with neither a key file nor the admin token", () => {
    const lines = yamlProblems(`platform:
  teams:
    - {id: a, apiKeyFile: /k/a}
    - {id: a, apiKeyFile: /k/a2}
    - {id: c}
`);
    expect(lines.join("\n")).toContain("platform.teams.1.id");
    expect(lines.join("\n")).toContain("a team id listed once (a is listed twice)");
    expect(lines.join("\n")).toMatch(/platform\.teams\.2\.apiKeyFile.*team c's API key/);
  });

  it("refuses discovery without the admin token, and a probe team not listed", () => {
    const lines = yamlProblems(`platform:
  discoverTeams: true
  probeTeam: z
  teams:
    - {id: a, apiKeyFile: /k/a}
`).join("\n");
    expect(lines).toMatch(/platform\.discoverTeams.*adminTokenFile/);
    expect(lines).toMatch(/platform\.probeTeam.*z is not listed/);
  });

  it("takes E2B's webhook with several teams (each event goes to its team)", () => {
    const c = loadYaml(`${TWO}webhooks:
  e2bSecretFile: /run/e2b-secret
`);
    expect(c.webhooks.e2bSecretFile).toBe("/run/e2b-secret");
    expect(c.platform.teams).toHaveLength(2);
  });

  it("refuses a bad entry and a bad budget with the error the field gives", () => {
    const lines = yamlProblems(`platform:
  teams:
    - {id: a, apiKeyFile: /k/a, dailyBudget: -1}
    - {id: b, apiKeyFile: /k/b, owner: me}
`).join("\n");
    expect(lines).toMatch(/dailyBudget.*a budget: a finite number >= 0/);
    expect(lines).toMatch(/owner/);
  });
});
