// A rule its blast radius stops run after run says so once a minute, with a count, not every run.
import { Writable } from "node:stream";
import { pino } from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { type Exporter, startExporter } from "../../src/app.js";
import { loadConfig } from "../../src/catalog.js";
import { type Simulator, startSimulator } from "../../src/simulator/index.js";
import { FakeClock } from "../../src/util/clock.js";

const T0 = Date.parse("2026-11-23T12:00:00Z");
const MIN = 60_000;
const TOO_MANY = "policy rule would act on too many sandboxes: acting on none";
const RULES = `
maxMatchPercent: 50
consecutiveCycles: 1
rules:
  - name: idle
    match: { states: [running] }
    idleFor: 30m
    action: pause
`;

let sim: Simulator | undefined;
let exporter: Exporter | undefined;
afterEach(async () => {
  await exporter?.stop();
  await sim?.close();
});

describe("the policy's blast-radius warning", () => {
  it("is one line per rule a minute, the next carrying how many runs it held back", async () => {
    const clock = new FakeClock(T0);
    sim = await startSimulator({ sandboxes: 0, clock });
    const template = sim.state.templates[0]!.templateID;
    // Every sandbox idle for two hours: the rule would pause all of them.
    for (let i = 0; i < 12; i++)
      sim.state.addSandbox({
        sandboxID: `sbx-${i}`,
        templateID: template,
        state: "running",
        startedAt: T0 - 3 * 60 * MIN,
        logs: [{ timestamp: T0 - 120 * MIN, line: "work", level: "info" }],
      });
    const { config } = loadConfig({
      argv: ["--listen", "127.0.0.1:0", "--retries", "0", "--policy", "rules.yaml"],
      env: { SANDBOX_API_URL: sim.apiUrl, SANDBOX_DOMAIN: sim.domain },
    });
    const lines: Array<Record<string, unknown>> = [];
    const sink = new Writable({
      write(chunk, _enc, done) {
        lines.push(JSON.parse(String(chunk)) as Record<string, unknown>);
        done();
      },
    });
    exporter = await startExporter(config, {
      logger: pino({ level: "info" }, sink),
      clock,
      manual: true,
      readFile: () => RULES,
    });
    const warned = () => lines.filter((l) => l.msg === TOO_MANY);
    // Four runs 5 s apart: the first says it, the next three are held back.
    for (let i = 0; i < 4; i++) {
      await exporter.runCycle();
      clock.advance(5_000);
    }
    expect(warned()).toHaveLength(1);
    expect(warned()[0]).toMatchObject({ rule: "idle", skipped: { skipped_blast_radius: 12 } });
    expect(warned()[0]?.suppressed).toBeUndefined();
    clock.advance(MIN);
    await exporter.runCycle();
    expect(warned()).toHaveLength(2);
    expect(warned()[1]).toMatchObject({ rule: "idle", suppressed: 3 });
  });
});
