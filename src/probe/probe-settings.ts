// The probe section: the top-level settings are the default module and the defaults of every
// module listed under `modules` (blackbox_exporter's modules, cloudprober's probes). The step names
// and what each step needs come from the step registry (probe-steps.ts).
import { z } from "zod";
import { duration, int, oneOf, schedule, text } from "../config/fields.js";
import { defineSlice, ENV_PREFIX } from "../config/slice.js";
import type { ScheduleSpec } from "../util/schedule.js";
import {
  HttpSchema,
  ModuleHttpSchema,
  mergeHeaders,
  type ProbeHttpConfig,
} from "./http-settings.js";
import {
  PROBE_STEPS,
  type ProbePhase,
  type ProbeStep,
  phaseNames,
  type StepRegistry,
  stepNames,
} from "./probe-steps.js";

export type { ProbeHttpConfig } from "./http-settings.js";

/** The steps of a module that lists none. */
const DEFAULT_STEPS: readonly ProbeStep[] = ["exec", "file"];
/** Default sandbox timeout the autopause step creates with (E2B takes whole seconds). */
const DEFAULT_AUTO_PAUSE_TIMEOUT_MS = 15_000;
const MAX_AUTO_PAUSE_TIMEOUT_MS = 3_600_000;

/** The module of a configuration without `modules`. */
export const DEFAULT_PROBE_MODULE = "default";

/** Labels every probe series has already; a module's own labels cannot take these names. */
const RESERVED_LABELS = new Set([
  "module",
  "template",
  "phase",
  "point",
  "reason",
  "result",
  "le",
  "job",
  "instance",
]);

const moduleName = text.regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/, {
  error: "a module name of letters, digits, _ . - (at most 63)",
});

const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

/** A module's own labels; each bad name is reported at its own path. */
const labels = z
  .record(text, text, { error: "a mapping of label name to value" })
  .superRefine((m, ctx) => {
    for (const name of Object.keys(m)) {
      const message = !LABEL_NAME.test(name)
        ? "a label name matching [a-zA-Z_][a-zA-Z0-9_]*"
        : RESERVED_LABELS.has(name) || name.startsWith("__")
          ? `a label name other than ${[...RESERVED_LABELS].join(", ")} and __*`
          : undefined;
      if (message) ctx.addIssue({ code: "custom", path: [name], message, input: name });
    }
  });

/** The sandbox timeout of the autopause step: whole seconds, as E2B's create takes it. */
const autoPauseTimeout = duration().refine(
  (ms) => ms >= 1000 && ms <= MAX_AUTO_PAUSE_TIMEOUT_MS && ms % 1000 === 0,
  { error: "a whole number of seconds from 1s to 1h" },
);

const command = text.includes("{nonce}", { error: "a command containing {nonce}" });

const filePath = text.min(1, { error: "a file path" });
const template = text.min(1, { error: "a template id" });

/** A module with every setting filled in. */
export interface ProbeModuleConfig {
  name: string;
  template: string;
  schedule: ScheduleSpec;
  /** The optional steps it runs (they run in the registry's order). */
  steps: ProbeStep[];
  command: string;
  filePath: string;
  timeoutMs: number;
  phaseTimeoutMs: number;
  phaseTimeouts: Partial<Record<ProbePhase, number>>;
  lifecycleRounds: number;
  /** The sandbox timeout the autopause step creates with, ms. */
  autoPauseTimeoutMs: number;
  http: ProbeHttpConfig;
  labels: Record<string, string>;
}

/** The old name of `steps`, still read; the places it is written are named in one start-up warning. */
const OLD_STEPS_KEY = "phases";

/** The probe section's fields and their rules, for the steps of `registry`. */
function probeFields(registry: StepRegistry) {
  const names = stepNames(registry);
  const steps = z.array(oneOf(names as [string, ...string[]]), {
    error: `a list of ${names.join(", ")}`,
  });
  const phaseTimeouts = z.strictObject(
    Object.fromEntries(phaseNames(registry).map((p) => [p, duration().optional()])) as Record<
      ProbePhase,
      z.ZodOptional<ReturnType<typeof duration>>
    >,
  );
  /** One entry of `probe.modules`; what it leaves out comes from the top-level probe settings. */
  const module = z.strictObject({
    name: moduleName,
    template: template.optional(),
    schedule: schedule.optional(),
    steps: steps.optional(),
    /** Deprecated: the old name of `steps`. */
    phases: steps.optional(),
    command: command.optional(),
    filePath: filePath.optional(),
    timeoutMs: duration().optional(),
    phaseTimeoutMs: duration().optional(),
    phaseTimeouts: phaseTimeouts.optional(),
    lifecycleRounds: int(1, 10).optional(),
    autoPauseTimeoutMs: autoPauseTimeout.optional(),
    /** The http and autoresume steps' service and request, over the top-level section. */
    http: ModuleHttpSchema.optional(),
    /** Extra labels on every series of this module. */
    labels: labels.optional(),
  });
  return {
    enabled: z.boolean({ error: "true or false" }).default(false),
    schedule: schedule.prefault("60s"),
    template: template.default("base"),
    timeoutMs: duration().default(60_000),
    /** Deadline of each phase, within timeoutMs. */
    phaseTimeoutMs: duration().default(20_000),
    phaseTimeouts: phaseTimeouts.default({}),
    /** Tags probe sandboxes `sandbox-exporter/probe=<instance>` for the orphan sweep. */
    instance: text.min(1, { error: "a non-empty instance name" }).default("default"),
    /** The command run in the sandbox; `{nonce}` is replaced by the expected output. */
    command: command.default("echo {nonce}"),
    filePath: filePath.default("/tmp/sandbox-exporter-probe.txt"),
    /** The optional steps of every module that lists none (default DEFAULT_STEPS). */
    steps: steps.optional(),
    /** Deprecated: the old name of `steps`. */
    phases: steps.optional(),
    /** Pause/resume rounds of the lifecycle step: the second resume is where platforms fail. */
    lifecycleRounds: int(1, 10).default(2),
    /** The autopause step's sandbox timeout: the platform pauses the sandbox by itself after it. */
    autoPauseTimeoutMs: autoPauseTimeout.default(DEFAULT_AUTO_PAUSE_TIMEOUT_MS),
    /** The http and autoresume steps' service and request. */
    http: HttpSchema.prefault({}),
    /** Modules probing at the same time, at most. */
    concurrency: int(1, 32).default(2),
    modules: z.array(module, { error: "a list of probe modules" }).default([]),
  };
}

type ProbeFields = ReturnType<typeof probeFields>;
type ParsedProbe = z.output<z.ZodObject<ProbeFields>>;
type Place = { steps?: string[] | undefined; phases?: string[] | undefined };

/** The rules across the section's fields: module names, steps' needs and their checks. */
function checkProbe(registry: StepRegistry, p: ParsedProbe, ctx: z.RefinementCtx): void {
  const seen = new Set<string>();
  p.modules.forEach((m, i) => {
    if (seen.has(m.name))
      ctx.addIssue({
        code: "custom",
        path: ["modules", i, "name"],
        message: `a module name used once (${m.name} is repeated)`,
        input: m.name,
      });
    seen.add(m.name);
  });
  // Each place that lists steps: both names at once, and every step's needs, at the key written.
  const checkPlace = (place: Place, at: (string | number)[]) => {
    if (place.steps !== undefined && place.phases !== undefined)
      ctx.addIssue({
        code: "custom",
        path: [...at, OLD_STEPS_KEY],
        message: `steps alone (${OLD_STEPS_KEY} is its old name: remove it)`,
        input: place.phases,
      });
    const key = place.steps !== undefined ? "steps" : OLD_STEPS_KEY;
    const listed = place.steps ?? place.phases;
    if (listed === undefined) return;
    for (const step of registry) {
      const needs = step.needs?.steps;
      if (!needs || !listed.includes(step.name)) continue;
      const missing = needs.names.filter((n) => !listed.includes(n));
      if (missing.length > 0)
        ctx.addIssue({
          code: "custom",
          path: [...at, key],
          message: `${key} with ${missing.join(", ")} when ${step.name} is listed (the ${step.name} step ${needs.why})`,
          input: listed,
        });
    }
  };
  checkPlace(p, []);
  p.modules.forEach((m, i) => {
    checkPlace(m, ["modules", i]);
  });
  probeModules(p).forEach((m, i) => {
    for (const step of registry) {
      if (!step.check || !m.steps.includes(step.name as ProbeStep)) continue;
      for (const problem of step.check(m))
        ctx.addIssue({
          code: "custom",
          path: p.modules.length > 0 ? ["modules", i, problem.field] : [problem.field],
          message: problem.message,
          input: problem.input,
        });
    }
  });
}

/** Where the old name of `steps` is written: its path, and the module's name under `modules`. */
function oldKeys(p: ParsedProbe): string[] {
  return [
    ...(p.phases !== undefined ? [`probe.${OLD_STEPS_KEY}`] : []),
    ...p.modules.flatMap((m, i) =>
      m.phases !== undefined ? [`probe.modules.${i}.${OLD_STEPS_KEY} (module ${m.name})`] : [],
    ),
  ];
}

const X = ENV_PREFIX;

/** The probe's settings slice for the steps of `registry`: fields, env/flag rows, rules. */
function sliceFor(registry: StepRegistry) {
  return defineSlice({
    key: "probe",
    fields: probeFields(registry),
    settings: [
      {
        path: "probe.enabled",
        env: `${X}PROBE_ENABLED`,
        flag: "probe",
        kind: "bool",
        help: "run synthetic probes (bare flag or =true/false)",
      },
      {
        path: "probe.schedule",
        env: `${X}PROBE_SCHEDULE`,
        flag: "probe-schedule",
        kind: "string",
        help: "probe interval (60s) or cron expression",
      },
      {
        path: "probe.template",
        env: `${X}PROBE_TEMPLATE`,
        flag: "probe-template",
        kind: "string",
        help: "template of the probe sandbox",
      },
      {
        path: "probe.instance",
        env: `${X}PROBE_INSTANCE`,
        flag: "probe-instance",
        kind: "string",
        help: "tags probe sandboxes sandbox-exporter/probe=<instance> (orphan sweep)",
        doc: "tags probe sandboxes `sandbox-exporter/probe=<instance>` (orphan sweep)",
      },
      {
        path: "probe.timeoutMs",
        env: `${X}PROBE_TIMEOUT`,
        flag: "probe-timeout",
        kind: "duration",
        help: "total probe timeout",
      },
    ],
    check: (p, ctx) => checkProbe(registry, p, ctx),
  });
}

/** The probe section's settings slice: its fields (with their defaults), env/flag rows and rules. */
export const probeSlice = sliceFor(PROBE_STEPS);

/**
 * The probe section for the steps of `registry` (tests add steps of their own): the slice's
 * fields and rules, then the modules to run, filled in, and `deprecatedKeys`, the paths where the
 * old key `phases` is written (ProbeService names them in one start-up warning).
 */
export function probeSchema(registry: StepRegistry = PROBE_STEPS) {
  const slice = registry === PROBE_STEPS ? probeSlice : sliceFor(registry);
  return z
    .strictObject(slice.fields)
    .superRefine((p, ctx) => checkProbe(registry, p, ctx))
    .transform((p) => {
      const { phases, ...rest } = p;
      return {
        ...rest,
        steps: topSteps(p),
        modules: probeModules(p),
        deprecatedKeys: oldKeys(p),
      };
    });
}

/** The probe section of the configuration. */
export const ProbeSchema = probeSchema();

/** The top-level steps: the default of every module that lists none. */
function topSteps(p: ParsedProbe): ProbeStep[] {
  return (p.steps ?? p.phases ?? [...DEFAULT_STEPS]) as ProbeStep[];
}

/** The modules to run: the listed ones over the top-level defaults, else the default module. */
function probeModules(p: ParsedProbe): ProbeModuleConfig[] {
  const base: ProbeModuleConfig = {
    name: DEFAULT_PROBE_MODULE,
    template: p.template,
    schedule: p.schedule,
    steps: topSteps(p),
    command: p.command,
    filePath: p.filePath,
    timeoutMs: p.timeoutMs,
    phaseTimeoutMs: p.phaseTimeoutMs,
    phaseTimeouts: p.phaseTimeouts,
    lifecycleRounds: p.lifecycleRounds,
    autoPauseTimeoutMs: p.autoPauseTimeoutMs,
    http: p.http,
    labels: {},
  };
  if (p.modules.length === 0) return [base];
  return p.modules.map(({ phases, ...m }) => {
    const out: ProbeModuleConfig = { ...base, name: m.name };
    for (const [k, v] of Object.entries(m)) if (v !== undefined) Object.assign(out, { [k]: v });
    if (m.steps === undefined && phases !== undefined) out.steps = phases as ProbeStep[];
    // These two refine the top-level sections key by key instead of replacing them.
    out.phaseTimeouts = { ...p.phaseTimeouts, ...m.phaseTimeouts };
    out.http = { ...p.http };
    for (const [k, v] of Object.entries(m.http ?? {}))
      if (v !== undefined) Object.assign(out.http, { [k]: v });
    out.http.headers = mergeHeaders(p.http.headers, m.http?.headers ?? {});
    return out;
  });
}

declare module "../config/settings.js" {
  interface Settings {
    probe: z.output<typeof ProbeSchema>;
  }
}
