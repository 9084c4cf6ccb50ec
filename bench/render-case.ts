// Render against render: prom-client's registry.metrics() and our ExporterMetrics.update over the
// same fleet, each in its own compiled child with the exporter's node flags (see render-child.ts).
import { execFileSync } from "node:child_process";
import { compiledChild, type ExporterChild } from "./exporter-case.js";

const RUNS = 5;

/** Our render's figures (ms, medians of `runs`). */
export interface OurRender {
  firstMs: number;
  steadyMs: number;
  steadyAsyncMs: number;
  bytes: number;
}

/** prom-client's figures (ms, medians of `runs`). */
export interface PromClientRender {
  loadMs: number;
  renderMs: number;
  bytes: number;
}

/** Both renderers over `sandboxes` (the same five per-sandbox families; `series` as rendered). */
export interface RenderComparison {
  sandboxes: number;
  series: number;
  runs: number;
  ours: OurRender;
  promClient: PromClientRender;
}

function runChild<T>(exporter: ExporterChild, mode: string, sandboxes: number): T {
  const out = execFileSync(
    process.execPath,
    [
      "--expose-gc",
      ...exporter.nodeFlags,
      compiledChild(exporter, "render-child"),
      mode,
      String(sandboxes),
      String(RUNS),
    ],
    { encoding: "utf8", maxBuffer: 16 * 1024 * 1024 },
  );
  return JSON.parse(out.trim().split("\n").pop() ?? "{}") as T;
}

/** Runs ours, then prom-client, one after the other (never at once: 2 cores). */
export function renderComparison(exporter: ExporterChild, sandboxes: number): RenderComparison {
  const ours = runChild<OurRender & { series: number }>(exporter, "ours", sandboxes);
  const promClient = runChild<PromClientRender>(exporter, "prom-client", sandboxes);
  return { sandboxes, series: ours.series, runs: RUNS, ours, promClient };
}
