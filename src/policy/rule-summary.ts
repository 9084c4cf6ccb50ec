// The per-rule summary of what a run decided without acting: at info when it changes, else at
// debug, so a steady fleet's cooldowns and limits are said once, not every run.
import type { Logger } from "pino";
import { LogLimiter } from "../util/log-limiter.js";
import type { PolicyOutcome } from "./policy-run.js";
import { allRules, type PolicySpec } from "./policy-settings.js";
import { loggedAlone } from "./policy-status.js";

/** A rule stopped by its blast radius run after run is said once a minute, with a count. */
const TOO_MANY_LOG_INTERVAL_MS = 60_000;
const TOO_MANY = "policy rule would act on too many sandboxes: acting on none";
const SUMMARY = "policy rule summary";

/** Logs each rule's summary line; remembers the last one said at info, per rule. */
export class RuleSummaryLog {
  private readonly tooMany: LogLimiter;
  /** Rule -> the summary last logged at info (its action and counts, as JSON). */
  private said = new Map<string, string>();

  constructor(
    private readonly log: Logger,
    now: () => number,
  ) {
    this.tooMany = new LogLimiter({ intervalMs: TOO_MANY_LOG_INTERVAL_MS, now });
  }

  /**
   * One line per rule that decided anything without acting (pending, skipped_*): the counts by
   * result. With one line per action and per notice, a run logs at most actions + notices +
   * rules + 1 lines at info, however many sandboxes each rule passes over; a summary equal to
   * the rule's last one at info goes to debug.
   */
  summarize(spec: PolicySpec, outcomes: readonly PolicyOutcome[], stopped: string[]): void {
    const byRule = new Map<string, Record<string, number>>();
    for (const o of outcomes) {
      if (loggedAlone(o)) continue;
      const counts = byRule.get(o.rule) ?? {};
      const result = o.result ?? "pending";
      counts[result] = (counts[result] ?? 0) + 1;
      byRule.set(o.rule, counts);
    }
    const said = new Map<string, string>();
    for (const rule of allRules(spec)) {
      const counts = byRule.get(rule.name);
      // A rule with nothing to summarize forgets its last line: the next one is news again.
      if (!counts) continue;
      const line = { audit: true, rule: rule.name, action: rule.action, skipped: counts };
      if (stopped.includes(rule.name)) {
        this.tooMany.warn(this.log, rule.name, line, TOO_MANY);
        continue;
      }
      const key = JSON.stringify([rule.action, sorted(counts)]);
      said.set(rule.name, key);
      if (this.said.get(rule.name) === key) this.log.debug(line, SUMMARY);
      else this.log.info(line, SUMMARY);
    }
    this.said = said;
  }
}

/** The counts with their keys in order, so equal counts compare equal whatever the order. */
function sorted(counts: Record<string, number>): Array<[string, number]> {
  return Object.entries(counts).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}
