// The fake platform's data: sandboxes (with a sorted id index for paging), nodes, templates and
// the team's snapshot templates.
import type { Clock } from "../util/clock.js";
import { CostTruth } from "./cost-truth.js";
import { SimulatorError } from "./errors.js";
import { generateNodes, generateSandbox, generateTemplates, sandboxId, uuid } from "./generate.js";
import {
  type GroundTruthRow,
  type SandboxInit,
  type SimBuild,
  type SimBuildReason,
  type SimNode,
  SimSandbox,
  type SimTemplate,
} from "./model.js";
import { deriveSeed, Prng } from "./prng.js";
import { SnapshotStore } from "./snapshot-store.js";

export interface SimStateOptions {
  seed: number;
  sandboxes: number;
  templates: number;
  nodes: number;
  logLinesPerSandbox: number;
  clock: Clock;
  /** envd versions the generated templates take in turn; default the current one only. */
  envdVersions?: readonly string[];
  /** The team's slug, which namespaces snapshot names; default DEFAULT_TEAM_SLUG. */
  teamSlug?: string;
  /** Nodes shared with other teams' states (one cluster); default: `nodes` generated from the seed. */
  sharedNodes?: SimNode[];
}

/** Index of the first element of sorted `ids` greater than `id` (or >= when `inclusive`). */
export function upperBound(ids: readonly string[], id: string, inclusive = false): number {
  let lo = 0;
  let hi = ids.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const v = ids[mid] as string;
    if (v < id || (!inclusive && v === id)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** E2B's lifecycle event types, without the `sandbox.lifecycle.` prefix. */
export type SimLifecycleType =
  | "created"
  | "killed"
  | "paused"
  | "resumed"
  | "updated"
  | "checkpointed";

/** A change of a sandbox's lifecycle, as the platform would record it. */
export interface SimLifecycleEvent {
  type: SimLifecycleType;
  sandbox: SimSandbox;
  /** Simulator clock, epoch ms. */
  at: number;
  /** Killed only: E2B's kill reason (request, timeout, admin, orphaned, ...). */
  killReason?: string;
}

/** Everything the simulator serves; tests mutate it through these methods. */
export class SimState {
  readonly sandboxes = new Map<string, SimSandbox>();
  readonly nodes: SimNode[];
  readonly templates: SimTemplate[];
  readonly clock: Clock;
  /** Sandbox ids in ascending order: list pages are slices of it, found by binary search. */
  private ids: string[] = [];
  /** Sandboxes newest first, built on demand and dropped on every insert or removal. */
  private byStart: SimSandbox[] | undefined;
  private readonly fleetRng: Prng;
  private readonly addRng: Prng;
  private readonly buildRng: Prng;
  /** Builds templates had before their latest one, by build id (E2B answers their status too). */
  readonly pastBuilds = new Map<string, SimBuild>();
  private readonly seed: number;
  private readonly logLines: number;
  private nextNode = 0;
  private readonly lifecycleObservers: Array<(e: SimLifecycleEvent) => void> = [];
  /** Each sandbox's running and paused spans from its lifecycle (GET /_sim/cost). */
  readonly costTruth: CostTruth;
  /** The team's snapshot templates (E2B mode serves them). */
  readonly snapshots: SnapshotStore;

  constructor(options: SimStateOptions) {
    if (options.templates < 1) throw new SimulatorError("at least one template is required");
    this.clock = options.clock;
    this.costTruth = new CostTruth(this);
    this.seed = options.seed;
    this.logLines = options.logLinesPerSandbox;
    const now = this.clock.now();
    this.templates = generateTemplates(
      new Prng(deriveSeed(this.seed, "templates")),
      options.templates,
      now,
      options.envdVersions,
    );
    this.nodes =
      options.sharedNodes ??
      generateNodes(
        new Prng(deriveSeed(this.seed, "nodes")),
        options.nodes,
        options.sandboxes,
        now,
      );
    this.fleetRng = new Prng(deriveSeed(this.seed, "fleet"));
    this.addRng = new Prng(deriveSeed(this.seed, "add"));
    this.buildRng = new Prng(deriveSeed(this.seed, "builds"));
    this.snapshots = new SnapshotStore(
      this.clock,
      new Prng(deriveSeed(this.seed, "snapshots")),
      options.teamSlug,
    );
    this.setSandboxCount(options.sandboxes);
  }

  /** Sandbox ids in ascending order (do not mutate). */
  sortedIds(): readonly string[] {
    return this.ids;
  }

  /**
   * Sandboxes by start time, newest first, then by id: the order E2B pages `/v2/sandboxes` in
   * (do not mutate).
   */
  startOrder(): readonly SimSandbox[] {
    this.byStart ??= [...this.sandboxes.values()].sort(
      (a, b) => b.startedAt - a.startedAt || cmp(a.sandboxID, b.sandboxID),
    );
    return this.byStart;
  }

  /** Adds a sandbox; unspecified fields are filled deterministically. Returns it. */
  addSandbox(partial: SandboxInit = {}): SimSandbox {
    const base = generateSandbox(this.addRng, this.templates, this.nodes, this.clock.now());
    let id = partial.sandboxID ?? base.sandboxID;
    if (partial.sandboxID !== undefined && this.sandboxes.has(id)) {
      throw new SimulatorError(`sandbox ${id} already exists`);
    }
    while (this.sandboxes.has(id)) id = sandboxId(this.addRng);
    const template = this.template(partial.templateID ?? base.templateID);
    const merged = {
      ...base,
      state: "running",
      startedAt: this.clock.now(),
      metadata: {},
      nodeID: this.pickNode(),
      ...(template && {
        alias: template.alias,
        cpuCount: template.cpuCount,
        memoryMB: template.memoryMB,
        diskSizeMB: template.diskSizeMB,
        envdVersion: template.envdVersion,
      }),
      ...stripUndefined(partial),
      sandboxID: id,
    };
    const added = this.insert(new SimSandbox(merged, this.seed, this.logLines));
    this.lifecycle("created", added);
    return added;
  }

  /** Removes a sandbox, recorded as killed for `reason` (E2B's kill reasons); false when it did not exist. */
  removeSandbox(id: string, reason = "request"): boolean {
    const s = this.sandboxes.get(id);
    if (!s) return false;
    this.sandboxes.delete(id);
    this.byStart = undefined;
    const i = upperBound(this.ids, id, true);
    if (this.ids[i] === id) this.ids.splice(i, 1);
    this.lifecycle("killed", s, reason);
    return true;
  }

  /** Calls `fn` on every lifecycle change from now on (creates, kills, pauses, resumes, ...). */
  onLifecycle(fn: (e: SimLifecycleEvent) => void): void {
    this.lifecycleObservers.push(fn);
  }

  /** Records a lifecycle change of `sandbox` (routes call it for pauses and resumes). */
  lifecycle(type: SimLifecycleType, sandbox: SimSandbox, killReason?: string): void {
    const e: SimLifecycleEvent = { type, sandbox, at: this.clock.now() };
    if (killReason !== undefined) e.killReason = killReason;
    for (const fn of this.lifecycleObservers) fn(e);
  }

  /** The sandbox with this id, or undefined. */
  sandbox(id: string): SimSandbox | undefined {
    return this.sandboxes.get(id);
  }

  /** Sets a sandbox's lifecycle state. */
  setState(id: string, state: string): void {
    this.mustSandbox(id).state = state;
  }

  /** Appends a log line stamped with the clock's now. */
  appendLog(id: string, line: string, level: "debug" | "info" | "warn" | "error" = "info"): void {
    this.mustSandbox(id).logs.push({ timestamp: this.clock.now(), line, level });
  }

  /** The node with this id, or undefined. */
  node(id: string): SimNode | undefined {
    return this.nodes.find((n) => n.nodeID === id);
  }

  /** Sets a node's status (ready|draining|connecting|unhealthy|...). */
  setNodeStatus(id: string, status: string): void {
    const node = this.node(id);
    if (!node) throw new SimulatorError(`unknown node ${id}`);
    node.status = status;
    node.statusChangedAt = this.clock.now();
  }

  /** The template with this id or alias, or undefined. */
  template(idOrAlias: string): SimTemplate | undefined {
    return this.templates.find((t) => t.templateID === idOrAlias || t.alias === idOrAlias);
  }

  /**
   * Removes an ordinary template (E2B's DELETE /templates/{id} checks first that no sandbox uses
   * it); false when it is the last one, which the generated fleet and the churn need.
   */
  removeTemplate(template: SimTemplate): boolean {
    const i = this.templates.indexOf(template);
    if (i < 0 || this.templates.length === 1) return false;
    this.templates.splice(i, 1);
    return true;
  }

  /**
   * A new build of the template: its latest build becomes this one, in `status` (ready by
   * default); `reason` is what its build status reports (E2B: only for `error`). Returns its id.
   */
  buildTemplate(id: string, status = "ready", reason?: SimBuildReason): string {
    const t = this.template(id);
    if (!t) throw new SimulatorError(`unknown template ${id}`);
    this.pastBuilds.set(t.buildID, {
      templateID: t.templateID,
      status: t.status,
      ...(t.buildReason && { reason: t.buildReason }),
    });
    t.buildID = uuid(this.buildRng);
    t.buildCount++;
    t.status = status;
    t.buildReason = reason;
    t.updatedAt = this.clock.now();
    return t.buildID;
  }

  /** The status of one build of a template (its latest or an earlier one), or undefined. */
  templateBuild(templateId: string, buildId: string): SimBuild | undefined {
    const t = this.templates.find((x) => x.templateID === templateId);
    if (!t) return undefined;
    if (t.buildID === buildId)
      return {
        templateID: t.templateID,
        status: t.status,
        ...(t.buildReason && { reason: t.buildReason }),
      };
    const past = this.pastBuilds.get(buildId);
    return past?.templateID === templateId ? past : undefined;
  }

  /** Sets a template's status, and its error text (cleared when omitted). */
  setTemplateStatus(id: string, status: string, error?: string): void {
    const template = this.template(id);
    if (!template) throw new SimulatorError(`unknown template ${id}`);
    template.status = status;
    template.error = error;
    template.updatedAt = this.clock.now();
  }

  /** Grows (with freshly generated sandboxes) or shrinks (dropping the highest ids) to n. */
  setSandboxCount(n: number): void {
    this.byStart = undefined;
    const now = this.clock.now();
    const added: string[] = [];
    while (this.sandboxes.size < n) {
      const init = generateSandbox(this.fleetRng, this.templates, this.nodes, now);
      while (this.sandboxes.has(init.sandboxID)) init.sandboxID = sandboxId(this.fleetRng);
      this.sandboxes.set(init.sandboxID, new SimSandbox(init, this.seed, this.logLines));
      added.push(init.sandboxID);
    }
    if (added.length > 0) this.mergeIds(added.sort());
    while (this.sandboxes.size > n) {
      const id = this.ids.pop() as string;
      this.sandboxes.delete(id);
    }
  }

  /** Per state x template totals of the current fleet, sorted by state then template. */
  groundTruth(): GroundTruthRow[] {
    const rows = new Map<string, GroundTruthRow>();
    for (const s of this.sandboxes.values()) {
      const key = `${s.state}\u0000${s.templateID}`;
      let row = rows.get(key);
      if (!row) {
        row = {
          state: s.state,
          templateId: s.templateID,
          count: 0,
          cpuSum: 0,
          memoryBytesSum: 0,
          oldestStartSeconds: Number.POSITIVE_INFINITY,
        };
        rows.set(key, row);
      }
      row.count++;
      row.cpuSum += s.cpuCount;
      row.memoryBytesSum += s.memoryMB * 1048576;
      row.oldestStartSeconds = Math.min(row.oldestStartSeconds, s.startedAt / 1000);
    }
    return [...rows.values()].sort((a, b) =>
      a.state === b.state ? cmp(a.templateId, b.templateId) : cmp(a.state, b.state),
    );
  }

  private insert(sandbox: SimSandbox): SimSandbox {
    this.sandboxes.set(sandbox.sandboxID, sandbox);
    this.byStart = undefined;
    const i = upperBound(this.ids, sandbox.sandboxID);
    // One insertion is a binary search and a memmove; no list request ever re-sorts.
    this.ids.splice(i, 0, sandbox.sandboxID);
    return sandbox;
  }

  /** Merges sorted new ids into the index in one pass (splicing 100,000 one by one is quadratic). */
  private mergeIds(added: readonly string[]): void {
    const merged: string[] = new Array(this.ids.length + added.length);
    let i = 0;
    let j = 0;
    let k = 0;
    while (i < this.ids.length || j < added.length) {
      const a = this.ids[i];
      const b = added[j];
      if (b === undefined || (a !== undefined && a < b)) {
        merged[k++] = a as string;
        i++;
      } else {
        merged[k++] = b;
        j++;
      }
    }
    this.ids = merged;
  }

  private mustSandbox(id: string): SimSandbox {
    const s = this.sandboxes.get(id);
    if (!s) throw new SimulatorError(`unknown sandbox ${id}`);
    return s;
  }

  /** Round-robin over ready nodes, so created sandboxes spread like a scheduler would. */
  private pickNode(): string {
    const ready = this.nodes.filter((n) => n.status === "ready");
    if (ready.length === 0) return this.nodes[0]?.nodeID ?? "";
    const node = ready[this.nextNode++ % ready.length] as SimNode;
    return node.nodeID;
  }
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
