// The policy rule file and the `policy:` section of the config: rules, selectors, global limits.
import { z } from "zod";
import { bool, duration, int, list, oneOf, text } from "../config/fields.js";
import { composeSection, defineSlice, ENV_PREFIX } from "../config/slice.js";

const X = ENV_PREFIX;

/** Conditions may span months; they are compared with the clock, never armed as timers. */
const MAX_CONDITION_MS = 366 * 86_400_000;

/** One metadata condition, in Kubernetes label-selector words. */
export type MetadataSelector =
  | { key: string; op: "=" | "!="; value: string }
  | { key: string; op: "in" | "notin"; values: string[] }
  | { key: string; op: "exists" | "!exists" };

const SELECTOR_FORMS =
  'a selector like "team=ml", "env!=prod", "tier in (a,b)", "tier notin (a,b)", "owner" or "!owner"';

/** Parses `key=value`, `key!=value`, `key in (a,b)`, `key notin (a,b)`, `key`, `!key`. */
export function parseSelector(raw: string): MetadataSelector | undefined {
  const s = raw.trim();
  let m = /^([^\s=!(),]+)\s*(==|=|!=)\s*([^\s(),]*)$/.exec(s);
  if (m) return { key: m[1] as string, op: m[2] === "!=" ? "!=" : "=", value: m[3] as string };
  m = /^([^\s=!(),]+)\s+(in|notin)\s*\(([^()]*)\)$/.exec(s);
  if (m) {
    const values = (m[3] as string)
      .split(",")
      .map((v) => v.trim())
      .filter((v) => v !== "");
    if (values.length === 0) return undefined;
    return { key: m[1] as string, op: m[2] as "in" | "notin", values };
  }
  m = /^(!?)([^\s=!(),]+)$/.exec(s);
  if (m) return { key: m[2] as string, op: m[1] === "!" ? "!exists" : "exists" };
  return undefined;
}

const selector = text.transform((raw, ctx): MetadataSelector => {
  const parsed = parseSelector(raw);
  if (parsed) return parsed;
  ctx.addIssue({ code: "custom", message: SELECTOR_FORMS, input: raw });
  return z.NEVER;
});

/** `key=value`: the metadata entry that protects a sandbox from every rule. */
const protectLabel = text.regex(/^[^=\s]+=[^=\s]+$/, { error: "a metadata key=value" });

/** Rule names become label values and appear in audit lines. */
const ruleName = text.regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/, {
  error: "a name of letters, digits, '_', '.', '-' (at most 63)",
});

const MatchSchema = z.strictObject({
  /** Lower-cased sandbox states; any state when absent (pause still needs a running state). */
  states: list.optional(),
  /** Template ids; any template when absent. */
  templates: list.optional(),
  /** Every selector must hold. */
  metadata: z.array(selector, { error: "a list of selectors" }).optional(),
  /** Team ids (several teams, platform.teams): the rule runs in those teams only; any when absent. */
  teams: list.optional(),
});

/** What every rule has, whatever it acts on. */
const ruleCommon = {
  name: ruleName,
  /** `delete` is refused unless this is true. */
  allowDelete: bool.default(false),
  /** Inherits the global dryRun when absent. */
  dryRun: bool.optional(),
  /** Actions of this rule per cycle; the global limit applies as well. */
  maxActionsPerCycle: int(0).optional(),
  /** After acting on a sandbox (or dry-running it), leave it alone this long. */
  cooldown: duration(MAX_CONDITION_MS).default(3_600_000),
  /** Mark a sandbox as a candidate this long before acting on it. */
  notifyBefore: duration(MAX_CONDITION_MS).optional(),
};

type Refine = z.core.$RefinementCtx;

function needsAllowDelete(r: { action: string; allowDelete: boolean }, ctx: Refine): void {
  if (r.action === "delete" && !r.allowDelete)
    ctx.addIssue({
      code: "custom",
      path: ["allowDelete"],
      message: "allowDelete: true on a rule whose action is delete",
    });
}

export const PolicyRuleSchema = z
  .strictObject({
    ...ruleCommon,
    /** What the rule acts on: sandboxes (the default). */
    target: z.literal("sandbox").default("sandbox"),
    match: MatchSchema.prefault({}),
    /** No activity (newest log entry, else the configured field, else the start) for this long. */
    idleFor: duration(MAX_CONDITION_MS).optional(),
    /** Never act on a sandbox younger than this. */
    minAge: duration(MAX_CONDITION_MS).optional(),
    /** Act on a sandbox older than this (counted from its start, not from a pause). */
    maxAge: duration(MAX_CONDITION_MS).optional(),
    /**
     * Act on a sandbox paused this long: from its paused event (poll.events or the webhook), else
     * from the first walk that saw it paused. The rule then matches paused sandboxes only.
     */
    pausedFor: duration(MAX_CONDITION_MS).optional(),
    action: oneOf(["pause", "delete", "log"]),
  })
  .superRefine((r, ctx) => {
    needsAllowDelete(r, ctx);
    if (r.action === "pause" && r.pausedFor !== undefined)
      ctx.addIssue({
        code: "custom",
        path: ["pausedFor"],
        message:
          "no pausedFor on a rule whose action is pause (a paused sandbox is paused already)",
      });
    if (
      r.action !== "log" &&
      r.idleFor === undefined &&
      r.maxAge === undefined &&
      r.pausedFor === undefined
    )
      ctx.addIssue({
        code: "custom",
        path: ["idleFor"],
        message: `${r.action === "pause" ? "idleFor or maxAge" : "idleFor, maxAge or pausedFor"} on a rule whose action is ${r.action} (a rule without a condition would act on every match)`,
      });
  });

/** A glob over a snapshot's names: `*` any run of characters, `?` one. */
const nameGlob = text.min(1, { error: "a non-empty name pattern" });

const SnapshotMatchSchema = z.strictObject({
  /** Globs over the snapshot's names, with or without the tag and the team prefix; any when absent. */
  names: z.array(nameGlob, { error: "a list of name patterns" }).optional(),
  /** Team ids (several teams, platform.teams): the rule runs in those teams only; any when absent. */
  teams: list.optional(),
});

/** A retention rule: deletes (or logs) snapshots by age, by last use, keeping the newest few. */
export const SnapshotRuleSchema = z
  .strictObject({
    ...ruleCommon,
    target: z.literal("snapshot"),
    match: SnapshotMatchSchema.prefault({}),
    /** Act on a snapshot made longer ago than this (its createdAt; else since first listed). */
    olderThan: duration(MAX_CONDITION_MS).optional(),
    /** Act on a snapshot no sandbox was started from for this long (lastSpawnedAt, else createdAt). */
    unusedFor: duration(MAX_CONDITION_MS).optional(),
    /** The newest this many of the snapshots the rule matches are never touched, by any rule. */
    keepLatest: int(0, 100_000).optional(),
    action: oneOf(["delete", "log"]),
  })
  .superRefine((r, ctx) => {
    needsAllowDelete(r, ctx);
    if (r.action === "delete" && r.olderThan === undefined && r.unusedFor === undefined)
      ctx.addIssue({
        code: "custom",
        path: ["olderThan"],
        message:
          "olderThan or unusedFor on a rule whose action is delete (a rule without a condition would act on every match)",
      });
  });

export type SnapshotRule = z.output<typeof SnapshotRuleSchema>;

/** A rule of either target: `target` picks the schema (sandbox when absent). */
const AnyRuleSchema = z.preprocess(
  (raw) =>
    raw !== null && typeof raw === "object" && !Array.isArray(raw) && !("target" in raw)
      ? { ...raw, target: "sandbox" }
      : raw,
  z.discriminatedUnion("target", [PolicyRuleSchema, SnapshotRuleSchema], {
    error: 'a rule whose target is "sandbox" or "snapshot"',
  }),
);

export type PolicyRule = z.output<typeof PolicyRuleSchema>;

const ActivitySchema = z.strictObject({
  /** The logs endpoint's `direction` value that reads newest first. */
  logDirection: text.min(1, { error: "a non-empty direction value" }).default("backward"),
  /** Metadata key holding a last-activity time, used when the logs give none. */
  metadataField: text.min(1, { error: "a metadata key" }).optional(),
  /** Numeric runtime field (snake_case, epoch seconds or ms) used when logs and metadata give none. */
  runtimeField: text.min(1, { error: "a runtime field name" }).optional(),
  /** Log reads in flight at once. */
  concurrency: int(1, 256).default(8),
  /** Idle-signal reads one run may make, the blast-radius sample included. */
  maxReadsPerRun: int(1).default(500),
  /** Candidates of each idle rule read at random to estimate its idle share (blast radius). */
  sampleSize: int(1, 10_000).default(100),
  /**
   * Resource usage as a second idle signal (E2B's GET /sandboxes/metrics): a sandbox is idle only
   * when its logs say so and its CPU stayed under `cpuBelowPercent`; usage it cannot read is busy.
   */
  usage: z
    .strictObject({
      cpuBelowPercent: z
        .number({ error: "a percentage above 0 and at most 100" })
        .gt(0, { error: "a percentage above 0 and at most 100" })
        .max(100, { error: "a percentage above 0 and at most 100" })
        .default(2),
    })
    .optional(),
});

const rules = z.array(AnyRuleSchema, { error: "a list of rules" }).superRefine((rs, ctx) => {
  const seen = new Set<string>();
  rs.forEach((r, i) => {
    if (seen.has(r.name))
      ctx.addIssue({ code: "custom", path: [i, "name"], message: `a unique rule name` });
    seen.add(r.name);
  });
});

/** Settings both the config's `policy:` section and a rule file may hold. */
const policyFields = {
  dryRun: bool.optional(),
  protectLabel: protectLabel.optional(),
  maxActionsPerCycle: int(0).optional(),
  consecutiveCycles: int(1, 100).optional(),
  /** A rule that would act on more than this share of what it looked at acts on none. */
  maxMatchPercent: z.number({ error: "a number from 0 to 100" }).min(0).max(100).optional(),
  /** The blast-radius stop applies once a rule looked at this many sandboxes. */
  minSandboxesForMatchPercent: int(1).optional(),
  /** No action on a snapshot older than this. */
  maxSnapshotAgeMs: duration().optional(),
  /** A run stops reading and acting once it has taken this long (default: the poll interval). */
  maxRunTimeMs: duration().optional(),
  activity: ActivitySchema.optional(),
  rules: rules.optional(),
};

/** A rule file (YAML or JSON): its settings override the config's `policy:` section. */
export const PolicyFileSchema = z.strictObject(policyFields);
export type PolicyFile = z.output<typeof PolicyFileSchema>;

/** Where notices and actions are posted as JSON (kube-janitor style owner warnings). */
const WebhookSchema = z.strictObject({
  url: text.refine(
    (s) => {
      try {
        return ["http:", "https:"].includes(new URL(s).protocol);
      } catch {
        return false;
      }
    },
    { error: "an http(s) URL" },
  ),
  /** Header sent with every delivery, its value read from `headerValueFile` (a secret). */
  headerName: text
    .regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, { error: "an HTTP header name" })
    .default("Authorization"),
  headerValueFile: text.min(1, { error: "a file path" }).optional(),
  timeoutMs: duration().default(5_000),
  /** Extra attempts of a failed delivery, with backoff; deliveries are never awaited by a run. */
  retries: int(0, 10).default(3),
});

/** The config's `policy:` section: the settings a rule file may hold, and where the rules are. */
export const policySlice = defineSlice({
  key: "policy",
  fields: {
    ...policyFields,
    webhook: WebhookSchema.optional(),
    /** Default: on when a rule file or inline rules are given. */
    enabled: bool.optional(),
    file: text.min(1, { error: "a file path" }).optional(),
    dryRun: bool.default(true),
  },
  settings: [
    {
      path: "policy.enabled",
      env: `${X}POLICY_ENABLED`,
      flag: "policy-enabled",
      kind: "bool",
      help: "evaluate policy rules",
      shownDefault: "true with a rule file or rules, else false",
    },
    {
      path: "policy.file",
      env: `${X}POLICY_FILE`,
      flag: "policy",
      kind: "string",
      help: "policy rule file (YAML or JSON; see deploy/policy/example.yaml)",
    },
    {
      path: "policy.dryRun",
      env: `${X}POLICY_DRY_RUN`,
      flag: "policy-dry-run",
      kind: "bool",
      help: "make no mutating call (a rule's own dryRun wins)",
    },
  ],
});

/** The `policy:` section as the config holds it: `enabled` settled from the rules given. */
export const PolicySectionSchema = composeSection(policySlice).transform((s) => ({
  ...s,
  enabled: s.enabled ?? (s.file !== undefined || (s.rules?.length ?? 0) > 0),
}));

/** A rule as the engine runs it: its effective dryRun settled once, where the spec is built. */
export type SettledRule = Omit<PolicyRule, "dryRun"> & { dryRun: boolean };
/** A snapshot rule as the engine runs it. */
export type SettledSnapshotRule = Omit<SnapshotRule, "dryRun"> & { dryRun: boolean };

/** The effective policy: config section and rule file merged, defaults filled. */
export interface PolicySpec {
  dryRun: boolean;
  protectLabel: { key: string; value: string };
  maxActionsPerCycle: number;
  consecutiveCycles: number;
  maxMatchPercent: number;
  minSandboxesForMatchPercent: number;
  maxSnapshotAgeMs: number;
  /** Undefined: the poll interval (the engine is told it). */
  maxRunTimeMs: number | undefined;
  activity: z.output<typeof ActivitySchema>;
  /** Each rule's dryRun is its own, else the global one: nothing downstream recomputes it. */
  rules: SettledRule[];
  /** The rules whose target is snapshot (retention), in file order. */
  snapshotRules: SettledSnapshotRule[];
}

/**
 * Whether the poll reads the storage inventory: poll.storage, or a retention rule (which turns it
 * on). The policy feature's needs and the start-up line both ask this.
 */
export function readsStorage(poll: { storage: boolean }, spec: PolicySpec | undefined): boolean {
  return poll.storage || (spec?.snapshotRules.length ?? 0) > 0;
}

/** Every rule of the spec, sandbox rules first: what the metrics, the summary and /status list. */
export function allRules(spec: PolicySpec): (SettledRule | SettledSnapshotRule)[] {
  return [...spec.rules, ...spec.snapshotRules];
}

type Section = z.output<typeof PolicySectionSchema>;

/** Merges the config section with a rule file (file wins) and fills the defaults. */
export function policySpec(section: Section, file: PolicyFile = {}): PolicySpec {
  const pick = <K extends keyof PolicyFile>(k: K): PolicyFile[K] => file[k] ?? section[k];
  const [key, value] = (pick("protectLabel") ?? "sandbox-exporter/protect=true").split("=") as [
    string,
    string,
  ];
  const dryRun = pick("dryRun") ?? true;
  return {
    dryRun,
    protectLabel: { key, value },
    maxActionsPerCycle: pick("maxActionsPerCycle") ?? 10,
    consecutiveCycles: pick("consecutiveCycles") ?? 2,
    maxMatchPercent: pick("maxMatchPercent") ?? 50,
    minSandboxesForMatchPercent: pick("minSandboxesForMatchPercent") ?? 10,
    maxSnapshotAgeMs: pick("maxSnapshotAgeMs") ?? 120_000,
    maxRunTimeMs: pick("maxRunTimeMs"),
    activity: pick("activity") ?? ActivitySchema.parse({}),
    rules: (pick("rules") ?? []).flatMap((r) =>
      r.target === "sandbox" ? [{ ...r, dryRun: r.dryRun ?? dryRun }] : [],
    ),
    snapshotRules: (pick("rules") ?? []).flatMap((r) =>
      r.target === "snapshot" ? [{ ...r, dryRun: r.dryRun ?? dryRun }] : [],
    ),
  };
}

declare module "../config/settings.js" {
  interface Settings {
    policy: z.output<typeof PolicySectionSchema>;
  }
}

/**
 * The rules of `spec` that run in team `team`: those whose `match.teams` is absent or names it.
 * An exporter that does not know its team (one team, platform.teamId unset) runs every rule.
 */
export function forTeam(spec: PolicySpec, team: string | undefined): PolicySpec {
  if (team === undefined) return spec;
  const runs = (r: { match: { teams?: readonly string[] | undefined } }): boolean =>
    r.match.teams === undefined || r.match.teams.includes(team);
  return {
    ...spec,
    rules: spec.rules.filter(runs),
    snapshotRules: spec.snapshotRules.filter(runs),
  };
}
