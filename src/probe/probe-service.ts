// The probe modules of one exporter: shared families and orphan sweep, a limit on modules probing
// at once, one /probe route and one /status section.
import type { Sandbox } from "../platform/types.js";
import { systemClock } from "../util/clock.js";
import type { Route } from "../util/route.js";
import { Secrets } from "../util/secrets.js";
import { Slots } from "../util/slots.js";
import { OrphanSweeper, PROBE_MODULE_KEY, type SweepStatus } from "./orphan-sweep.js";
import { probeRoute } from "./probe-handler.js";
import { ProbeFamilies, ProbeMetrics } from "./probe-metrics.js";
import {
  ON_DEMAND_MIN_INTERVAL_MS,
  ProbeConfigError,
  Prober,
  type ProberOptions,
  type ProbeStatus,
} from "./prober.js";
import type { ProbeResult } from "./runner.js";

/** What differs from one module to the next. */
export type ModuleOptions = Pick<
  ProberOptions,
  | "template"
  | "schedule"
  | "steps"
  | "command"
  | "filePath"
  | "totalTimeoutMs"
  | "phaseTimeoutMs"
  | "phaseTimeouts"
  | "lifecycleRounds"
  | "autoPauseTimeoutMs"
  | "http"
  | "labels"
> & { module: string };

/** The shared settings and effects, and the modules. */
export type ProbeServiceOptions = Omit<
  ProberOptions,
  keyof ModuleOptions | "families" | "sweeper" | "slots"
> & {
  modules: readonly ModuleOptions[];
  /** Modules probing at the same time, at most. */
  concurrency: number;
  /** Where the config writes the old key `phases` (config probe.deprecatedKeys): warned once. */
  deprecatedKeys?: readonly string[];
};

/** The /status section of the probes. */
export interface ProbeServiceStatus {
  enabled: boolean;
  instance: string;
  concurrency: number;
  orphansDeleted: number;
  lastSweep: SweepStatus | null;
  modules: ProbeStatus[];
}

/** Runs every probe module: each on its own schedule, at most `concurrency` at once. */
export class ProbeService {
  readonly probers: readonly Prober[];
  private readonly sweeper: OrphanSweeper;
  private readonly secrets: Secrets;

  constructor(private readonly o: ProbeServiceOptions) {
    if (o.modules.length === 0) throw new ProbeConfigError("no probe module");
    const names = new Set(o.modules.map((m) => m.module));
    if (names.size !== o.modules.length) throw new ProbeConfigError("probe module names repeat");
    if (o.deprecatedKeys?.length)
      o.logger?.warn(
        { settings: o.deprecatedKeys },
        "deprecated probe setting phases: rename it to steps (the same list of steps; phaseTimeouts keeps its name)",
      );
    const extraLabels = [...new Set(o.modules.flatMap((m) => Object.keys(m.labels ?? {})))];
    const families = new ProbeFamilies(o.registry, { namespace: o.namespace, extraLabels });
    const slots = new Slots(o.concurrency);
    // One scrubber for every module and the /probe answer: a token one module learns is scrubbed everywhere.
    const secrets = o.secrets ?? new Secrets();
    this.secrets = secrets;
    // Sandboxes of a module no longer configured are still this instance's: counted by their tags.
    const counted = new Map<string, ProbeMetrics>();
    const onDeleted = (s: Sandbox) => {
      const name = s.metadata[PROBE_MODULE_KEY] ?? "";
      const prober = this.probers.find((p) => p.module === name);
      const id = prober?.id ?? families.idOf(name, s.templateId ?? "");
      const key = JSON.stringify(id);
      const m = counted.get(key) ?? new ProbeMetrics(families, id);
      counted.set(key, m);
      m.orphansDeleted(1);
    };
    this.sweeper = new OrphanSweeper({
      control: o.control,
      instance: o.instance,
      // A sandbox younger than the longest run may still be some module's probe in flight.
      minAgeMs: Math.max(...o.modules.map((m) => m.totalTimeoutMs)),
      clock: o.clock ?? systemClock,
      ...(o.logger ? { logger: o.logger } : {}),
      onDeleted,
    });
    this.probers = o.modules.map(
      (m) => new Prober({ ...o, ...m, families, sweeper: this.sweeper, slots, secrets }),
    );
  }

  /** Sweeps once, then starts every module's schedule. */
  async start(): Promise<void> {
    if (this.o.enabled === false) return;
    await this.sweeper.sweep();
    await Promise.all(this.probers.map((p) => p.start()));
  }

  /** Stops every module (each terminates its sandbox in flight) and the sweep. */
  async stop(): Promise<void> {
    this.sweeper.stop();
    await Promise.all(this.probers.map((p) => p.stop()));
  }

  /** Runs one probe of a module (default the first) into the metrics; undefined when busy. */
  async runOnce(module?: string): Promise<ProbeResult | undefined> {
    return this.prober(module).runOnce();
  }

  /** Resolves when no module has a run in flight (terminates left running by /probe included). */
  async idle(): Promise<void> {
    await Promise.all(this.probers.map((p) => p.idle()));
  }

  /** The orphan sweep now; the number deleted. */
  sweepOrphans(): Promise<number> {
    return this.sweeper.sweep();
  }

  /** The module of this name (default the first). */
  prober(module?: string): Prober {
    const p =
      module === undefined ? this.probers[0] : this.probers.find((x) => x.module === module);
    if (!p) throw new ProbeConfigError(`unknown probe module ${module}`);
    return p;
  }

  status(): ProbeServiceStatus {
    return {
      enabled: this.o.enabled !== false,
      instance: this.o.instance,
      concurrency: this.o.concurrency,
      ...this.sweeper.status(),
      modules: this.probers.map((p) => p.status()),
    };
  }

  /** GET /probe?module=NAME[&debug=true]. */
  routes(): readonly Route[] {
    return [
      probeRoute({
        modules: this.probers,
        clock: this.o.clock ?? systemClock,
        monotonic: this.o.monotonic ?? (() => performance.now()),
        minIntervalMs: this.o.onDemandMinIntervalMs ?? ON_DEMAND_MIN_INTERVAL_MS,
        namespace: this.o.namespace,
        scrub: (text) => this.secrets.scrub(text),
      }),
    ];
  }
}
