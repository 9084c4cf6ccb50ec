// The demo's exporter in process, as the demo configures it against `sim`, on an ephemeral port,
// its log lines (info and up, JSON) parsed into `lines`; manual cycles on `clock`.
import { readFileSync } from "node:fs";
import { Writable } from "node:stream";
import { pino } from "pino";
import { type Exporter, startExporter } from "../../src/app.js";
import { loadConfig } from "../../src/catalog.js";
import type { Config } from "../../src/config/settings.js";
import { demoEnv, demoExporterArgs } from "../../src/simulator/demo-setup.js";
import type { Simulator } from "../../src/simulator/index.js";
import { type Clock, systemClock } from "../../src/util/clock.js";

export async function startDemoExporter<Line>(
  sim: Simulator,
  e2b: boolean,
  dir: string,
  lines: Line[],
  clock: Clock = systemClock,
): Promise<{ exporter: Exporter; config: Config }> {
  const { config } = loadConfig({
    argv: [...demoExporterArgs(sim, e2b, dir), "--listen", "127.0.0.1:0", "--log-format", "json"],
    env: demoEnv(sim),
    readFile: (path) => readFileSync(path, "utf8"),
  });
  const sink = new Writable({
    write(chunk, _enc, done) {
      lines.push(JSON.parse(String(chunk)) as Line);
      done();
    },
  });
  const exporter = await startExporter(config, {
    logger: pino({ level: "info" }, sink),
    clock,
    manual: true,
    readFile: (path) => readFileSync(path, "utf8"),
  });
  return { exporter, config };
}
