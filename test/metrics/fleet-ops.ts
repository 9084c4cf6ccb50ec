// Random changes to a fleet of sandboxes with hostile ids, templates and metadata: the ops the
// differential test draws, and the long run the promtool check reads (test/promtool/).
import fc from "fast-check";
import type { Sandbox } from "../../src/platform/types.js";
import { metricsWith, sandbox, snapshot, T0 } from "./fixtures.js";

/** Sandbox ids, quotes, backslashes, non-ASCII and newlines among them. */
export const IDS = [
  "a",
  "b",
  "c",
  "d",
  "e",
  "f",
  "g",
  "h",
  "i",
  "j",
  'q"x',
  "back\\slash",
  "ü-1",
  "n\nl",
];
const TEMPLATES = ["base", "py", "", "t\u00e9"];
const STATES = ["running", "paused", "starting"];
const TEAMS = ["ml", "web", 'quo"te', "new\nline", "ü"];
/** The metadata keys exported as labels. */
export const META_LABELS = ["team", "env"];

/** One change to the fleet. */
export type Op =
  | { op: "create"; id: string; template: string; team?: string }
  | { op: "delete"; id: string }
  | { op: "state"; id: string; state: string }
  | { op: "meta"; id: string; team?: string; env?: string }
  | { op: "template"; id: string; template: string }
  | { op: "resources"; id: string; cpu?: number; memory?: number }
  | { op: "timeout"; id: string; endAt?: number };

const arbId = fc.constantFrom(...IDS);
/** Any one change, on any id (ids that do not exist are ignored). */
export const arbOp: fc.Arbitrary<Op> = fc.oneof(
  fc.record({
    op: fc.constant("create" as const),
    id: arbId,
    template: fc.constantFrom(...TEMPLATES),
    team: fc.option(fc.constantFrom(...TEAMS), { nil: undefined }),
  }),
  fc.record({ op: fc.constant("delete" as const), id: arbId }),
  fc.record({ op: fc.constant("state" as const), id: arbId, state: fc.constantFrom(...STATES) }),
  fc.record({
    op: fc.constant("meta" as const),
    id: arbId,
    team: fc.option(fc.constantFrom(...TEAMS), { nil: undefined }),
    env: fc.option(fc.constantFrom("prod", "dev"), { nil: undefined }),
  }),
  fc.record({
    op: fc.constant("template" as const),
    id: arbId,
    template: fc.constantFrom(...TEMPLATES),
  }),
  fc.record({
    op: fc.constant("resources" as const),
    id: arbId,
    cpu: fc.option(fc.constantFrom(1, 2, 0.5, 8), { nil: undefined }),
    memory: fc.option(fc.constantFrom(256, 512, 1024.5), { nil: undefined }),
  }),
  fc.record({
    op: fc.constant("timeout" as const),
    id: arbId,
    endAt: fc.option(fc.constantFrom(T0 + 60_000, T0 + 3_600_000, T0 - 1_000), { nil: undefined }),
  }),
);

/** Applies one change to the fleet (ids that do not exist are ignored, as a platform would 404). */
export function apply(fleet: Map<string, Sandbox>, o: Op): void {
  const s = fleet.get(o.id);
  if (o.op === "create") {
    if (!s)
      fleet.set(
        o.id,
        sandbox(o.id, { templateId: o.template, metadata: o.team ? { team: o.team } : {} }),
      );
    return;
  }
  if (!s) return;
  if (o.op === "delete") fleet.delete(o.id);
  else if (o.op === "state") fleet.set(o.id, { ...s, state: o.state });
  else if (o.op === "template") fleet.set(o.id, { ...s, templateId: o.template });
  else if (o.op === "resources") fleet.set(o.id, { ...s, cpuCount: o.cpu, memoryMB: o.memory });
  else if (o.op === "timeout") fleet.set(o.id, { ...s, endAt: o.endAt });
  else {
    const metadata: Record<string, string> = {};
    if (o.team !== undefined) metadata.team = o.team;
    if (o.env !== undefined) metadata.env = o.env;
    fleet.set(o.id, { ...s, metadata });
  }
}

/**
 * The text-format body after a long run of changes (40 batches, seed 42) with per-sandbox series
 * on: the same body every time.
 */
export async function longRunText(): Promise<string> {
  const { metrics } = metricsWith({ perSandboxMetrics: true, metadataLabels: META_LABELS });
  const fleet = new Map<string, Sandbox>();
  const ops = fc.sample(fc.array(arbOp, { minLength: 3, maxLength: 10 }), {
    numRuns: 40,
    seed: 42,
  });
  for (const [n, batch] of ops.entries()) {
    for (const op of batch) apply(fleet, op);
    metrics.update(snapshot({ cycle: n + 1, sandboxes: [...fleet.values()] }));
  }
  return Buffer.concat((await metrics.render("prometheus", false)).body).toString();
}
