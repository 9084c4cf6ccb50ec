// `npm run bench`: figures (not pass/fail) into bench/results.json and a printed table.
import { execFileSync, spawn } from "node:child_process";
import { writeFileSync } from "node:fs";

const SANDBOXES = Number(process.env.BENCH_SANDBOXES ?? 100_000);
const TSX = "node_modules/.bin/tsx";

function runJson(args: string[]): Record<string, number | string> {
  const out = execFileSync(TSX, args, {
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024,
    env: { ...process.env, NODE_OPTIONS: "--expose-gc" },
  });
  const line = out.trim().split("\n").pop() ?? "{}";
  return JSON.parse(line) as Record<string, number | string>;
}

const sim = spawn(
  TSX,
  ["src/simulator/main.ts", "--sandboxes", String(SANDBOXES), "--api-port", "0"],
  { stdio: ["ignore", "pipe", "inherit"] },
);
const apiUrl = await new Promise<string>((resolve, reject) => {
  let buf = "";
  const timer = setTimeout(() => reject(new Error("simulator did not start within 60 s")), 60_000);
  sim.stdout.on("data", (d: Buffer) => {
    buf += d.toString();
    const m = /base_url (http:\/\/[^)\s]+)/.exec(buf);
    if (m?.[1]) {
      clearTimeout(timer);
      resolve(m[1]);
    }
  });
});
try {
  const off = runJson(["bench/exporter-case.ts", apiUrl, "off", "100"]);
  const on = runJson(["bench/exporter-case.ts", apiUrl, "on", "30"]);
  const prom = runJson(["bench/prom-client-baseline.ts", String(SANDBOXES), "5"]);
  const results = {
    date: new Date().toISOString(),
    node: process.version,
    sandboxes: SANDBOXES,
    pollCycle: {
      cycleMs: off.cycleMs,
      bareUndiciLoopMs: off.bareLoopMs,
      ratio: Number(off.cycleMs) / Number(off.bareLoopMs),
      target: "<= 1.3",
    },
    scrapeOff: {
      p50Ms: off.scrapeP50Ms,
      p99Ms: off.scrapeP99Ms,
      bytes: off.scrapeBytes,
      target: "p99 < 20 ms",
    },
    scrapeOn: {
      p50Ms: on.scrapeP50Ms,
      p99Ms: on.scrapeP99Ms,
      bytes: on.scrapeBytes,
      target: "p99 < 100 ms",
    },
    promClientBaseline: {
      series: prom.series,
      renderP50Ms: prom.renderP50Ms,
      bytes: prom.bytes,
      speedupOfOursP99: Number(prom.renderP50Ms) / Number(on.scrapeP99Ms),
      target: ">= 5x",
    },
    rss: { offMB: off.rssMB, onMB: on.rssMB, target: "off < 150 MB, on < 400 MB" },
  };
  writeFileSync("bench/results.json", `${JSON.stringify(results, null, 2)}\n`);
  const row = (k: string, v: unknown, base: unknown, target: string) =>
    `${k.padEnd(34)} ${String(typeof v === "number" ? v.toFixed(1) : v).padStart(12)} ${String(typeof base === "number" ? base.toFixed(1) : (base ?? "")).padStart(14)}  ${target}`;
  console.log(`\nsandbox-exporter bench, ${SANDBOXES} sandboxes, ${off.pages} pages\n`);
  console.log(`${"measure".padEnd(34)} ${"ours".padStart(12)} ${"baseline".padStart(14)}  target`);
  console.log(
    row(
      "poll cycle ms (vs bare undici loop)",
      off.cycleMs,
      off.bareLoopMs,
      `ratio ${results.pollCycle.ratio.toFixed(2)} (<= 1.3)`,
    ),
  );
  console.log(row("scrape p50 ms, per-sandbox off", off.scrapeP50Ms, undefined, ""));
  console.log(row("scrape p99 ms, per-sandbox off", off.scrapeP99Ms, undefined, "< 20"));
  console.log(row("scrape bytes, per-sandbox off", off.scrapeBytes, undefined, ""));
  console.log(row("scrape p50 ms, per-sandbox on", on.scrapeP50Ms, undefined, ""));
  console.log(
    row(
      "scrape p99 ms, per-sandbox on",
      on.scrapeP99Ms,
      prom.renderP50Ms,
      `prom-client render; ${results.promClientBaseline.speedupOfOursP99.toFixed(1)}x (>= 5x); < 100`,
    ),
  );
  console.log(row("scrape bytes, per-sandbox on", on.scrapeBytes, prom.bytes, ""));
  console.log(
    row("gzip scrape p99 ms, per-sandbox off", off.gzipP99Ms, undefined, "as Prometheus scrapes"),
  );
  console.log(row("gzip scrape p99 ms, per-sandbox on", on.gzipP99Ms, prom.renderP50Ms, "< 100"));
  console.log(row("gzip scrape bytes, per-sandbox on", on.gzipBytes, undefined, ""));
  console.log(row("RSS MB after cycle, off", off.rssMB, undefined, "< 150"));
  console.log(row("RSS MB after cycle, on", on.rssMB, undefined, "< 400"));
  console.log("\nwritten to bench/results.json");
} finally {
  sim.kill("SIGTERM");
}
