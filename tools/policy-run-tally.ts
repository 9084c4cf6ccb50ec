// What each policy run cost, counted from outside the engine: the platform's request counters
// read at the run's start and end, and the exporter's log lines written in between.

/** One policy run as the platform and the log saw it. */
export interface PolicyRunCount {
  /** Ms from the tally's origin (the exporter's start) to the run's start, and the run's length. */
  startMs: number;
  ms: number;
  /** Requests to the policy's routes during the run, by route, and their sum. */
  requests: Record<string, number>;
  requestsTotal: number;
  /** Lines the policy logged during the run, and the audit lines among them. */
  lines: number;
  auditLines: number;
  /** Audit lines of an action attempted (dry_run, done, failed), and of a notice. */
  actions: number;
  notices: number;
  /** Rule summary lines, and their counts by result (pending, skipped_*) summed over rules. */
  summaries: number;
  skipped: Record<string, number>;
  /** Sandboxes an action was attempted on. */
  acted: string[];
}

/** A parsed pino line: the fields the tally reads. */
export type LogRecord = Record<string, unknown>;

/** Results of an action attempted, each its own audit line (see the engine's `audit`). */
const ATTEMPTED = new Set(["dry_run", "done", "failed"]);

/**
 * Splits the policy's requests and log lines into runs. `start` and `end` take the platform's
 * counters (route -> requests so far) at the run's edges; `line` takes every line the exporter
 * logs. Only `routes` count as the policy's requests (the poll may walk during a run), and only
 * lines of `component` as its lines.
 */
export class PolicyRunTally {
  readonly runs: PolicyRunCount[] = [];
  /** Policy lines logged outside any run. */
  outsideLines = 0;
  /** Ms from the origin to the first action attempted. */
  firstActionMs: number | undefined;
  private current: (PolicyRunCount & { before: Record<string, number> }) | undefined;

  constructor(
    private readonly routes: readonly string[],
    private readonly origin: number,
    private readonly component = "policy",
  ) {}

  /** A run starts at `at` (ms, same clock as the origin) with the platform's counters. */
  start(counters: Record<string, number>, at: number): void {
    if (this.current) throw new Error("a policy run started before the last one ended");
    this.current = {
      startMs: at - this.origin,
      ms: 0,
      requests: {},
      requestsTotal: 0,
      lines: 0,
      auditLines: 0,
      actions: 0,
      notices: 0,
      summaries: 0,
      skipped: {},
      acted: [],
      before: { ...counters },
    };
  }

  /** One line the exporter logged at `at`. */
  line(record: LogRecord, at: number): void {
    if (record.component !== this.component) return;
    const run = this.current;
    if (!run) {
      this.outsideLines++;
      return;
    }
    run.lines++;
    if (record.audit !== true) return;
    run.auditLines++;
    if (typeof record.result === "string" && ATTEMPTED.has(record.result)) {
      run.actions++;
      if (typeof record.sandbox === "string") run.acted.push(record.sandbox);
      this.firstActionMs ??= at - this.origin;
    } else if (record.result === "pending") run.notices++;
    else if (typeof record.skipped === "object" && record.skipped !== null) {
      run.summaries++;
      for (const [result, n] of Object.entries(record.skipped))
        if (typeof n === "number") run.skipped[result] = (run.skipped[result] ?? 0) + n;
    }
  }

  /** The run in flight ends at `at` with these counters; returns its count. */
  end(counters: Record<string, number>, at: number): PolicyRunCount {
    const run = this.current;
    if (!run) throw new Error("a policy run ended that had not started");
    this.current = undefined;
    const { before, ...count } = run;
    count.ms = at - this.origin - count.startMs;
    for (const route of this.routes) {
      const n = (counters[route] ?? 0) - (before[route] ?? 0);
      if (n === 0) continue;
      count.requests[route] = n;
      count.requestsTotal += n;
    }
    this.runs.push(count);
    return count;
  }
}

/** A pino destination that hands each line, parsed, to `onLine` as it is written. */
export function lineSink(onLine: (record: LogRecord) => void): { write(chunk: string): void } {
  return {
    write(chunk: string): void {
      for (const text of chunk.split("\n")) if (text !== "") onLine(JSON.parse(text) as LogRecord);
    },
  };
}
