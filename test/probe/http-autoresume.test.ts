// The http and autoresume steps against the simulator's E2B mode: a service on a sandbox port
// through the proxy, and a paused sandbox woken by that traffic alone.
import { Registry } from "prom-client";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ConfigSchema } from "../../src/catalog.js";
import { probeTag } from "../../src/probe/orphan-sweep.js";
import type { ProbeHttpSettings, ProbeSettings } from "../../src/probe/phase.js";
import { ProbeFamilies, ProbeMetrics } from "../../src/probe/probe-metrics.js";
import type { ProbePhase, ProbeStep } from "../../src/probe/probe-steps.js";
import { type ProbeResult, runProbe } from "../../src/probe/runner.js";
import { ProbeTrace } from "../../src/probe/trace.js";
import type { SimSandbox } from "../../src/simulator/model.js";
import { INSTANCE, type ProbeBed, probeBed, probeSandboxes, seriesValue } from "./setup.js";

const NONCE = "0123456789abcdef";

/** The config's defaults of the `http` section. */
function httpDefaults(over: Partial<ProbeHttpSettings> = {}): ProbeHttpSettings {
  const cfg = ConfigSchema.parse({ probe: {} });
  return { ...cfg.probe.modules[0]!.http, ...over };
}

let bed: ProbeBed;
/** Every sandbox the simulator created, kept after terminate removes it (its traffic token). */
const created: SimSandbox[] = [];
beforeAll(async () => {
  bed = await probeBed({ flavor: "e2b" });
  bed.sim.state.onLifecycle((e) => {
    if (e.type === "created") created.push(e.sandbox);
  });
});
afterEach(() => {
  bed.sim.faults.clear();
});
afterAll(async () => {
  await bed.close();
});

type Probed = ProbeResult & { order: ProbePhase[] };

/** One probe; waits between reads move the simulator's clock instead of sleeping. */
async function probe(
  b: ProbeBed,
  o: {
    steps: ProbeStep[];
    http?: Partial<ProbeHttpSettings>;
    phaseTimeouts?: Partial<Record<ProbePhase, number>>;
    trace?: ProbeTrace;
  },
): Promise<Probed> {
  const order: ProbePhase[] = [];
  const settings: ProbeSettings = {
    template: b.template,
    command: "echo {nonce}",
    filePath: "/tmp/sandbox-exporter-probe.txt",
    metadata: probeTag(INSTANCE),
    sandboxTtlS: 120,
    steps: o.steps,
    lifecycleRounds: 1,
    autoPauseTimeoutS: 1,
    statePollMs: 200,
    http: httpDefaults(o.http),
  };
  const result = await runProbe(
    {
      control: o.trace ? o.trace.wrap(b.control, "control") : b.control,
      data: o.trace ? o.trace.wrap(b.data, "data") : b.data,
      clock: b.clock,
      monotonic: () => performance.now() + b.clock.now(),
      nonce: () => NONCE,
      onPhase: (phase) => {
        order.push(phase);
        o.trace?.add(`phase ${phase}`);
      },
      sleep: async (ms, signal) => {
        signal.throwIfAborted();
        b.clock.advance(ms);
      },
    },
    settings,
    {
      phaseTimeoutMs: 5_000,
      totalTimeoutMs: 30_000,
      ...(o.phaseTimeouts && { phaseTimeouts: o.phaseTimeouts }),
    },
  );
  return { ...result, order };
}

const failures = (r: ProbeResult) => r.failures.map((f) => [f.phase, f.reason]);
const hits = (route: string): number => bed.sim.counters.get(route);

/** The wakes `r` adds to sandbox_probe_wake_seconds, recorded as the exporter records a run. */
async function wakesObserved(r: ProbeResult): Promise<number> {
  const registry = new Registry();
  const families = new ProbeFamilies(registry, { namespace: "sandbox" });
  new ProbeMetrics(families, families.idOf("ports", bed.template)).record(r);
  return (
    (await seriesValue(registry, "sandbox_probe_wake_seconds_count", { module: "ports" })) ?? 0
  );
}

describe("the http step", () => {
  it("starts the default service, waits for its port and gets the nonce through the proxy", async () => {
    const r = await probe(bed, { steps: ["http"] });
    expect(failures(r)).toEqual([]);
    expect(r.order).toEqual(["create", "http_wait_ready", "http_request", "terminate"]);
    expect(r.http?.total).toBeGreaterThanOrEqual(r.http?.firstByte ?? Infinity);
    expect(probeSandboxes(bed.sim)).toEqual([]);
  });

  it("fails http_wait_ready with port_closed when the service never listens", async () => {
    const r = await probe(bed, { steps: ["http"], http: { command: "true" } });
    expect(failures(r)).toEqual([["http_wait_ready", "port_closed"]]);
    expect(r.failures[0]?.message).toContain("The sandbox is running but port is not open");
    expect(probeSandboxes(bed.sim)).toEqual([]);
  });

  it("fails http_request with bad_status and body_mismatch as the answer says", async () => {
    const status = await probe(bed, { steps: ["http"], http: { validStatusCodes: [204] } });
    expect(failures(status)).toEqual([["http_request", "bad_status"]]);
    const body = await probe(bed, {
      steps: ["http"],
      http: { failIfBodyNotMatchesRegexp: ["^never$"] },
    });
    expect(failures(body)).toEqual([["http_request", "body_mismatch"]]);
    expect(probeSandboxes(bed.sim)).toEqual([]);
  });

  it("sends the traffic token of a restricted sandbox and sees a request without it refused", async () => {
    const trace = new ProbeTrace(() => performance.now());
    const from = created.length;
    const r = await probe(bed, { steps: ["http"], http: { allowPublicTraffic: false }, trace });
    expect(failures(r)).toEqual([]);
    // The trace as rendered, unscrubbed: its own header redaction keeps the token out.
    const text = trace.render("m", r);
    // Each request and answer is in the trace; the token never is.
    expect(text).toMatch(
      /data\.requestPort\(\{id: "[^"]+"\}, GET :8000\/sandbox-exporter-probe\.txt \{e2b-traffic-access-token: \[REDACTED\]\}/,
    );
    expect(text).toMatch(/-> HTTP 200 \{.*\} 17 bytes "0123456789abcdef"/);
    expect(text).toMatch(/-> HTTP 403 .*Token header 'e2b-traffic-access-token' is missing/);
    const tokens = created.slice(from).flatMap((s) => (s.trafficToken ? [s.trafficToken] : []));
    expect(tokens).toHaveLength(1);
    for (const token of tokens) expect(text).not.toContain(token);
  });

  it("fails http_request with not_restricted when create returns no traffic token", async () => {
    bed.sim.faults.publicTraffic = "no_token";
    const r = await probe(bed, { steps: ["http"], http: { allowPublicTraffic: false } });
    expect(failures(r)).toEqual([["http_request", "not_restricted"]]);
    expect(r.failures[0]?.message).toContain("create returned no traffic access token");
    expect(probeSandboxes(bed.sim)).toEqual([]);
  });

  it("fails http_request with not_restricted when the proxy serves a request without the token", async () => {
    bed.sim.faults.publicTraffic = "not_enforced";
    const r = await probe(bed, { steps: ["http"], http: { allowPublicTraffic: false } });
    expect(failures(r)).toEqual([["http_request", "not_restricted"]]);
    expect(r.failures[0]?.message).toContain("without the traffic token was not refused");
    expect(r.failures[0]?.message).toContain("HTTP 200");
    expect(probeSandboxes(bed.sim)).toEqual([]);
  });
});

describe("the autoresume step", () => {
  it("pauses the sandbox, wakes it by a request alone, and finds file and service intact", async () => {
    const connects = hits("POST /sandboxes/{id}/connect") + hits("POST /v2/sandboxes/{id}/connect");
    const resumes = hits("POST /sandboxes/{id}/resume");
    const r = await probe(bed, { steps: ["http", "autoresume"] });
    expect(failures(r)).toEqual([]);
    expect(r.order).toEqual([
      "create",
      "http_wait_ready",
      "http_request",
      "autoresume_pause",
      "autoresume_wake",
      "autoresume_check",
      "terminate",
    ]);
    expect(r.wakeSeconds).toBeGreaterThan(0);
    // Never connect nor resume: the request woke it.
    expect(hits("POST /sandboxes/{id}/connect") + hits("POST /v2/sandboxes/{id}/connect")).toBe(
      connects,
    );
    expect(hits("POST /sandboxes/{id}/resume")).toBe(resumes);
    expect(probeSandboxes(bed.sim)).toEqual([]);
  });

  it("lets auto-pause do the pause when the module also runs autopause", async () => {
    bed.sim.faults.lifecycle = { expireSandboxes: true };
    const r = await probe(bed, { steps: ["file", "autopause", "autoresume"] });
    expect(failures(r)).toEqual([]);
    expect(r.order).toContain("autoresume_wake");
    expect(probeSandboxes(bed.sim)).toEqual([]);
  });

  it("fails autoresume_wake with not_auto_resumed on the proxy's 502 while pausing (infra#2196)", async () => {
    bed.sim.faults.lifecycle = { autoResumeNotFoundForMs: 60_000 };
    const r = await probe(bed, { steps: ["http", "autoresume"] });
    expect(failures(r)).toEqual([["autoresume_wake", "not_auto_resumed"]]);
    expect(r.failures[0]?.message).toContain("The sandbox was not found");
    // The proxy's refusal comes back in milliseconds: it is no wake.
    expect(r.wakeSeconds).toBeUndefined();
    expect(await wakesObserved(r)).toBe(0);
    expect(probeSandboxes(bed.sim)).toEqual([]);
  });

  it("fails autoresume_wake with wake_timeout when the wake is slower than its time", async () => {
    bed.sim.faults.lifecycle = { wakeDelayMs: 30_000 };
    const r = await probe(bed, {
      steps: ["http", "autoresume"],
      // The request gives up 1 s before the phase (3 s of 4 s): a margin a loaded machine keeps.
      phaseTimeouts: { autoresume_wake: 4_000 },
    });
    expect(failures(r)).toEqual([["autoresume_wake", "wake_timeout"]]);
    expect(probeSandboxes(bed.sim)).toEqual([]);
  });

  it("fails autoresume_wake with process_lost when the wake loses the service", async () => {
    bed.sim.faults.lifecycle = { loseProcessesOnResume: true };
    const r = await probe(bed, { steps: ["http", "autoresume"] });
    expect(failures(r)).toEqual([["autoresume_wake", "process_lost"]]);
    expect(await wakesObserved(r)).toBe(0);
    expect(probeSandboxes(bed.sim)).toEqual([]);
  });

  it("fails autoresume_wake with file_lost when the wake loses the served file", async () => {
    bed.sim.faults.lifecycle = { loseFilesOnResume: true };
    const r = await probe(bed, { steps: ["http", "autoresume"] });
    expect(failures(r)).toEqual([["autoresume_wake", "file_lost"]]);
    expect(await wakesObserved(r)).toBe(0);
    expect(probeSandboxes(bed.sim)).toEqual([]);
  });

  it("observes the wake in sandbox_probe_wake_seconds with the sandbox as exemplar", async () => {
    const r = await probe(bed, { steps: ["http", "autoresume"] });
    expect(await wakesObserved(r)).toBe(1);
    const registry = new Registry();
    const families = new ProbeFamilies(registry, { namespace: "sandbox" });
    const id = families.idOf("ports", bed.template);
    new ProbeMetrics(families, id).record(r, ["http", "autoresume"]);
    expect(
      await seriesValue(registry, "sandbox_probe_step_supported", { step: "autoresume" }),
    ).toBe(1);
    expect(
      await seriesValue(registry, "sandbox_probe_http_duration_seconds", { point: "total" }),
    ).toBeGreaterThan(0);
  });
});

describe("the autoresume step on a platform without auto-resume", () => {
  let plain: ProbeBed;
  beforeAll(async () => {
    plain = await probeBed();
  });
  afterAll(async () => {
    await plain.close();
  });

  it("reports the step unsupported and fails nothing", async () => {
    const r = await probe(plain, { steps: ["file", "autoresume"] });
    expect(failures(r)).toEqual([]);
    expect(r.unsupported).toEqual(["autoresume"]);
    expect(r.order).not.toContain("autoresume_wake");
    expect(probeSandboxes(plain.sim)).toEqual([]);
  });
});
