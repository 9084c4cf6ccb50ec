// The cost of a policy cycle: 100,000 sandboxes of which 5,000 pass the rule's cheap
// filters (a metadata selector); 4,000 of those were active minutes ago, 1,000 hours ago. Two runs
// in a row ("cold", then "warm" with the activity cache of the first): the log reads the engine
// issues (a random sample per idle rule, then never-read candidates as the run needs) and its time.
import { pino } from "pino";
import { Agent } from "undici";
import { startExporter } from "../src/app.js";
import { loadConfig } from "../src/catalog.js";
import { startSimulator } from "../src/simulator/index.js";
import { systemClock } from "../src/util/clock.js";
import { LIFTED_BUDGET } from "./exporter-case.js";

const MATCHING = 5_000;
const IDLE = 1_000;
const LOGS = "GET /v2/sandboxes/{id}/logs";
const RULES = `
rules:
  - name: bench-idle
    match: { states: [running], metadata: ["bench=policy"] }
    idleFor: 30m
    action: pause
`;

/** One policy run's figures. */
export interface PolicyRunFigures {
  logReads: number;
  policyMs: number;
  cycleMs: number;
  candidates: number;
}

/** The figures of the policy section. */
export interface PolicyCost {
  sandboxes: number;
  matching: number;
  idle: number;
  cold: PolicyRunFigures;
  warm: PolicyRunFigures;
}

/** Runs two cycles against an in-process simulator and reports the policy's share of each. */
export async function policyCost(sandboxes: number): Promise<PolicyCost> {
  const sim = await startSimulator({ sandboxes: sandboxes - MATCHING });
  const now = Date.now();
  const template = sim.state.templates[0]?.templateID as string;
  for (let i = 0; i < MATCHING; i++) {
    const quietMs = i < IDLE ? 2 * 3_600_000 : 5 * 60_000;
    sim.state.addSandbox({
      templateID: template,
      state: "running",
      startedAt: now - 3 * 3_600_000,
      metadata: { bench: "policy" },
      logs: [{ timestamp: now - quietMs, line: "work", level: "info" }],
    });
  }
  const { config } = loadConfig({
    argv: ["--listen", "127.0.0.1:0", "--retries", "0", "--policy", "rules.yaml", ...LIFTED_BUDGET],
    env: { SANDBOX_API_URL: sim.apiUrl, SANDBOX_DOMAIN: sim.domain },
  });
  const exporter = await startExporter(config, {
    logger: pino({ level: "silent" }),
    clock: systemClock,
    dispatcher: new Agent({ connections: 16 }),
    manual: true,
    readFile: () => RULES,
  });
  const once = async (): Promise<PolicyRunFigures> => {
    const before = sim.counters.get(LOGS);
    const t0 = performance.now();
    await exporter.runCycle();
    const cycleMs = performance.now() - t0;
    const run = exporter.policy?.lastRun;
    if (!run || run.blocked) throw new Error(`policy run blocked: ${run?.blocked}`);
    return {
      logReads: sim.counters.get(LOGS) - before,
      policyMs: run.durationMs,
      cycleMs,
      candidates: run.candidates["bench-idle"] ?? 0,
    };
  };
  try {
    const cold = await once();
    const warm = await once();
    return { sandboxes, matching: MATCHING, idle: IDLE, cold, warm };
  } finally {
    await exporter.stop();
    await sim.close();
  }
}
