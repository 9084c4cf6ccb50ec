// The synthetic probes as a feature: on with probe.enabled. Each module's schedule runs a probe
// through the management API and the sandbox's agent; /probe runs one on demand.
import type { Feature } from "../feature.js";
import { DataClient } from "../platform/data/data.js";
import { PROBE_FAMILIES } from "./probe-metrics.js";
import { ProbeService } from "./probe-service.js";

declare module "../feature.js" {
  interface Exposed {
    /** The synthetic prober (probe.enabled). */
    prober: ProbeService;
  }
}

export const probeFeature: Feature = {
  name: "probe",
  declares: PROBE_FAMILIES,
  prepare(config) {
    if (!config.probe.enabled) return undefined;
    return {
      start(s) {
        const p = config.platform;
        const data = new DataClient({
          sandboxDomain: p.sandboxDomain,
          proxyScheme: p.proxyScheme,
          proxyNodeIp: p.proxyNodeIp,
          proxyPortHttp: p.proxyPortHttp,
          agentPort: p.agentPort,
          routing: p.dataPlaneRouting,
          timeoutMs: p.timeoutMs,
          secrets: s.secrets,
        });
        const probe = config.probe;
        const prober = new ProbeService({
          control: s.control.withOwnNormalizer("probe"),
          data,
          // One scrubber for every text the probes send out (/probe, its trace, /status, logs).
          secrets: s.secrets,
          registry: s.metrics.registry,
          clock: s.clock,
          logger: s.logger.child({ component: "probe" }),
          namespace: config.metrics.namespace,
          instance: probe.instance,
          concurrency: probe.concurrency,
          deprecatedKeys: probe.deprecatedKeys,
          states: config.states,
          modules: probe.modules.map((m) => ({
            module: m.name,
            template: m.template,
            schedule: s.manual ? null : m.schedule,
            steps: m.steps,
            command: m.command,
            filePath: m.filePath,
            totalTimeoutMs: m.timeoutMs,
            phaseTimeoutMs: m.phaseTimeoutMs,
            phaseTimeouts: m.phaseTimeouts,
            lifecycleRounds: m.lifecycleRounds,
            autoPauseTimeoutMs: m.autoPauseTimeoutMs,
            http: m.http,
            labels: m.labels,
          })),
        });
        return {
          exposes: { prober },
          routes: prober.routes(),
          status: () => prober.status(),
          async begin() {
            if (!s.manual) await prober.start();
          },
          // The probe goes first: its sandbox is terminated before the process exits.
          halt: () => prober.stop(),
        };
      },
    };
  },
};
