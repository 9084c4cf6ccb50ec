// What the policy's pauses saved: for each pause done (or planned, dry-run) the running cost
// avoided from the pause until the sandbox runs again, is gone, or reaches its endAt. Savings are
// kept by track slot; only sandboxes the policy acted on have one, so this stays small.

export type SavingMode = "done" | "dry_run";

/** A policy saving still accruing: running cost avoided since `start`. */
interface Saving {
  key: string;
  rule: string;
  sandboxId: string;
  mode: SavingMode;
  start: number;
  /** Running cost per ms of the sandbox at the time of the decision. */
  perMs: number;
  /** The sandbox would have ended here anyway (its endAt); Infinity when unknown. */
  cap: number;
  counted: number;
}

/** Savings of one rule in one mode. */
export interface SavingsTotal {
  rule: string;
  mode: string;
  cost: number;
}

/** A pause to account: times are ms after the accountant's origin. */
export interface PauseSaving {
  slot: number;
  sandboxId: string;
  rule: string;
  mode: SavingMode;
  at: number;
  perMs: number;
  cap: number;
}

/** The policy's savings, accruing by slot and totalled by rule and mode. */
export class PolicySavings {
  private readonly accruing = new Map<number, Saving[]>();
  private readonly saved = new Map<string, SavingsTotal>();

  /** Registers a rule's series at 0 (so rates exist before its first pause). */
  declare(rule: string, mode: SavingMode): void {
    const key = savingKey(rule, mode);
    if (!this.saved.has(key)) this.saved.set(key, { rule, mode, cost: 0 });
  }

  /** Starts a saving; a second one of the same rule and mode on the slot is ignored. */
  start(p: PauseSaving): void {
    const key = savingKey(p.rule, p.mode);
    const list = this.accruing.get(p.slot) ?? [];
    if (list.some((s) => s.key === key)) return;
    this.declare(p.rule, p.mode);
    list.push({
      key,
      rule: p.rule,
      sandboxId: p.sandboxId,
      mode: p.mode,
      start: p.at,
      perMs: p.perMs,
      cap: p.cap,
      counted: 0,
    });
    this.accruing.set(p.slot, list);
  }

  /** Whether the slot has a saving accruing. */
  has(slot: number): boolean {
    return this.accruing.has(slot);
  }

  /** Counts every saving up to `to`. */
  accrueAll(to: number): void {
    for (const list of this.accruing.values()) for (const s of list) this.accrue(s, to);
  }

  /** The slot's phase changed at `at`: a done saving ends when it runs again, a dry-run one when it stops. */
  endOnChange(slot: number, wasRunning: boolean, wasPaused: boolean, at: number): void {
    for (const s of [...(this.accruing.get(slot) ?? [])]) {
      if (s.mode === "dry_run" && wasRunning) this.end(slot, s, at);
      else if (s.mode === "done" && wasPaused) this.end(slot, s, at);
    }
  }

  /** The slot's sandbox is gone at `at`: every saving on it ends. */
  endAll(slot: number, at: number): void {
    for (const s of [...(this.accruing.get(slot) ?? [])]) this.end(slot, s, at);
  }

  /** A policy run at `at`: each dry-run saving whose (rule, sandbox) is no longer planned ends. */
  endUnplanned(at: number, planned: (rule: string, sandboxId: string) => boolean): void {
    for (const [slot, list] of [...this.accruing]) {
      for (const s of [...list]) {
        if (s.mode !== "dry_run") continue;
        if (!planned(s.rule, s.sandboxId)) this.end(slot, s, at);
      }
    }
  }

  /** Savings by rule and mode. */
  totals(): Iterable<Readonly<SavingsTotal>> {
    return this.saved.values();
  }

  private accrue(s: Saving, to: number): void {
    const target = Math.max(0, Math.min(to, s.cap) - Math.max(s.start, 0));
    if (target <= s.counted) return;
    const total = this.saved.get(s.key);
    if (total) total.cost += (target - s.counted) * s.perMs;
    s.counted = target;
  }

  private end(slot: number, s: Saving, at: number): void {
    this.accrue(s, at);
    const rest = (this.accruing.get(slot) ?? []).filter((x) => x !== s);
    if (rest.length > 0) this.accruing.set(slot, rest);
    else this.accruing.delete(slot);
  }
}

function savingKey(rule: string, mode: SavingMode): string {
  return `${rule}\0${mode}`;
}
