// The probe section: the top-level settings are the default module and the defaults of every
// module listed under `modules` (blackbox_exporter's modules, cloudprober's probes).
import { z } from "zod";
import type { ScheduleSpec } from "../util/schedule.js";
import { bool, duration, int, oneOf, schedule, text } from "./fields.js";

/** Optional parts of a probe; create and terminate always run. */
export const PROBE_STEP_NAMES = [
  "exec",
  "file",
  "lifecycle",
  "autopause",
  "http",
  "autoresume",
] as const;
export type ProbeStepName = (typeof PROBE_STEP_NAMES)[number];

/** The phases of a probe in the order they run; each may have a timeout of its own (`phaseTimeouts`). */
export const PROBE_PHASE_NAMES = [
  "create",
  "exec",
  "file_write",
  "file_read",
  "pause",
  "resume",
  "state_check",
  "autopause_wait",
  "autopause_resume",
  "autopause_check",
  "http_wait_ready",
  "http_request",
  "autoresume_pause",
  "autoresume_wake",
  "autoresume_check",
  "terminate",
] as const;

/** Default sandbox timeout the autopause step creates with (E2B takes whole seconds). */
export const DEFAULT_AUTO_PAUSE_TIMEOUT_MS = 15_000;
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

const steps = z.array(oneOf(PROBE_STEP_NAMES), {
  error: "a list of exec, file, lifecycle, autopause, http, autoresume",
});

/** The sandbox timeout of the autopause step: whole seconds, as E2B's create takes it. */
const autoPauseTimeout = duration().refine(
  (ms) => ms >= 1000 && ms <= MAX_AUTO_PAUSE_TIMEOUT_MS && ms % 1000 === 0,
  { error: "a whole number of seconds from 1s to 1h" },
);

const phaseTimeouts = z.strictObject(
  Object.fromEntries(PROBE_PHASE_NAMES.map((p) => [p, duration().optional()])) as Record<
    (typeof PROBE_PHASE_NAMES)[number],
    z.ZodOptional<ReturnType<typeof duration>>
  >,
);

const command = text.includes("{nonce}", { error: "a command containing {nonce}" });

const HTTP_METHODS = ["GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH"] as const;
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** Headers the proxy routes or authenticates on: the probe sets them itself. */
const RESERVED_HEADERS = new Set([
  "host",
  "e2b-sandbox-id",
  "e2b-sandbox-port",
  "e2b-traffic-access-token",
  "content-length",
]);

/** A regular expression the answer's body must match (blackbox's fail_if_body_not_matches_regexp). */
const regexp = text.refine(
  (src) => {
    try {
      new RegExp(src);
      return true;
    } catch {
      return false;
    }
  },
  { error: "a valid regular expression" },
);

/**
 * The http and autoresume steps: a service the probe starts in the sandbox and requests through
 * the platform's proxy at {port}-{id}.{domain}{path}. Names follow blackbox_exporter's http prober.
 * The fields without defaults: a module's section gives only what it changes.
 */
const httpFields = {
  /** Sandbox port the service listens on (not the agent's). */
  port: int(1, 65_535),
  /** Path requested; the nonce file is written at `directory` + this path. */
  path: text.regex(/^\/[^\s]*$/, { error: "a path starting with /" }),
  method: oneOf(HTTP_METHODS),
  /**
   * Started in the background through the agent's Start call; `{port}` and `{dir}` are filled in.
   * The default serves `directory` with the base template's Python.
   */
  command: text.min(1, { error: "a command" }),
  /** Directory the service serves; the nonce file is written below it. */
  directory: text.regex(/^\/\S*$/, { error: "an absolute directory" }),
  /** Accepted statuses; empty: any 2xx (blackbox's default). */
  validStatusCodes: z.array(int(100, 599), { error: "a list of HTTP status codes" }),
  /** Each must match the body, besides the nonce, which always must be in it. */
  failIfBodyNotMatchesRegexp: z.array(regexp, { error: "a list of regular expressions" }),
  headers: z
    .record(text, text, { error: "a mapping of header name to value" })
    .superRefine((m, ctx) => {
      for (const name of Object.keys(m))
        if (!HEADER_NAME.test(name) || RESERVED_HEADERS.has(name.toLowerCase()))
          ctx.addIssue({
            code: "custom",
            path: [name],
            message: `a header name other than ${[...RESERVED_HEADERS].join(", ")}`,
            input: name,
          });
    }),
  /**
   * false: the sandbox is created with network.allowPublicTraffic false; the probe sends the
   * traffic token and checks that a request without it is refused.
   */
  allowPublicTraffic: bool,
};

/** The top-level `http` section, where its defaults live. */
const HttpSchema = z.strictObject({
  port: httpFields.port.default(8000),
  path: httpFields.path.default("/sandbox-exporter-probe.txt"),
  method: httpFields.method.default("GET"),
  command: httpFields.command.default("python3 -m http.server {port} --directory {dir}"),
  directory: httpFields.directory.default("/tmp/sandbox-exporter-http"),
  validStatusCodes: httpFields.validStatusCodes.default([]),
  failIfBodyNotMatchesRegexp: httpFields.failIfBodyNotMatchesRegexp.default([]),
  headers: httpFields.headers.default({}),
  allowPublicTraffic: httpFields.allowPublicTraffic.default(true),
});

/** A module's `http` section: each field it gives replaces the top-level one (headers by name). */
const ModuleHttpSchema = z.strictObject(httpFields).partial();

/** Settings of the http and autoresume steps, filled in. */
export type ProbeHttpConfig = z.output<typeof HttpSchema>;
const filePath = text.min(1, { error: "a file path" });
const template = text.min(1, { error: "a template id" });

/** One entry of `probe.modules`; what it leaves out comes from the top-level probe settings. */
const ModuleSchema = z.strictObject({
  name: moduleName,
  template: template.optional(),
  schedule: schedule.optional(),
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

/** A module with every setting filled in. */
export interface ProbeModuleConfig {
  name: string;
  template: string;
  schedule: ScheduleSpec;
  phases: ProbeStepName[];
  command: string;
  filePath: string;
  timeoutMs: number;
  phaseTimeoutMs: number;
  phaseTimeouts: Partial<Record<(typeof PROBE_PHASE_NAMES)[number], number>>;
  lifecycleRounds: number;
  /** The sandbox timeout the autopause step creates with, ms. */
  autoPauseTimeoutMs: number;
  http: ProbeHttpConfig;
  labels: Record<string, string>;
}

const ProbeFields = z.strictObject({
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
  phases: steps.default(["exec", "file"]),
  /** Pause/resume rounds of the lifecycle phase: the second resume is where platforms fail. */
  lifecycleRounds: int(1, 10).default(2),
  /** The autopause step's sandbox timeout: the platform pauses the sandbox by itself after it. */
  autoPauseTimeoutMs: autoPauseTimeout.default(DEFAULT_AUTO_PAUSE_TIMEOUT_MS),
  /** The http and autoresume steps' service and request. */
  http: HttpSchema.prefault({}),
  /** Modules probing at the same time, at most. */
  concurrency: int(1, 32).default(2),
  modules: z.array(ModuleSchema, { error: "a list of probe modules" }).default([]),
});

export const ProbeSchema = ProbeFields.superRefine((p, ctx) => {
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
  const check = (phases: readonly ProbeStepName[] | undefined, path: (string | number)[]) => {
    for (const step of ["lifecycle", "autopause"] as const)
      if (phases?.includes(step) && !phases.includes("file"))
        ctx.addIssue({
          code: "custom",
          path,
          message: `phases with file when ${step} is listed (the ${step} step checks the file)`,
          input: phases,
        });
  };
  check(p.phases, ["phases"]);
  p.modules.forEach((m, i) => {
    check(m.phases, ["modules", i, "phases"]);
  });
  // Each autopause round waits out the timeout: the run must be able to.
  probeModules(p).forEach((m, i) => {
    if (m.phases.includes("autopause") && m.timeoutMs <= m.lifecycleRounds * m.autoPauseTimeoutMs)
      ctx.addIssue({
        code: "custom",
        path: p.modules.length > 0 ? ["modules", i, "timeoutMs"] : ["timeoutMs"],
        message: `a timeout above lifecycleRounds x autoPauseTimeoutMs (${m.lifecycleRounds} x ${m.autoPauseTimeoutMs} ms): each autopause round waits out the sandbox timeout`,
        input: m.timeoutMs,
      });
  });
}).transform((p) => ({ ...p, modules: probeModules(p) }));

/** The modules to run: the listed ones over the top-level defaults, else the default module. */
function probeModules(p: z.output<typeof ProbeFields>): ProbeModuleConfig[] {
  const base: ProbeModuleConfig = {
    name: DEFAULT_PROBE_MODULE,
    template: p.template,
    schedule: p.schedule,
    phases: p.phases,
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
  return p.modules.map((m) => {
    const out: ProbeModuleConfig = { ...base, name: m.name };
    for (const [k, v] of Object.entries(m)) if (v !== undefined) Object.assign(out, { [k]: v });
    // These two refine the top-level sections key by key instead of replacing them.
    out.phaseTimeouts = { ...p.phaseTimeouts, ...m.phaseTimeouts };
    out.http = { ...p.http };
    for (const [k, v] of Object.entries(m.http ?? {}))
      if (v !== undefined) Object.assign(out.http, { [k]: v });
    out.http.headers = mergeHeaders(p.http.headers, m.http?.headers ?? {});
    return out;
  });
}

/** `over`'s headers and those of `base` it does not name (header names ignore case). */
function mergeHeaders(
  base: Readonly<Record<string, string>>,
  over: Readonly<Record<string, string>>,
): Record<string, string> {
  const named = new Set(Object.keys(over).map((k) => k.toLowerCase()));
  const kept = Object.entries(base).filter(([k]) => !named.has(k.toLowerCase()));
  return { ...Object.fromEntries(kept), ...over };
}
