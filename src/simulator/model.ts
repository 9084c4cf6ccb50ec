// The fake platform's records: what the simulator serves, mutable from tests.
import type { Clock } from "../util/clock.js";
import { deriveSeed, Prng } from "./prng.js";

/** One structured log entry of a sandbox. */
export interface SimLogEntry {
  /** Epoch milliseconds. */
  timestamp: number;
  line: string;
  level: "debug" | "info" | "warn" | "error";
}

/** Fields accepted by SimState.addSandbox; anything left out is filled in deterministically. */
export interface SandboxInit {
  sandboxID?: string;
  templateID?: string;
  alias?: string;
  clientID?: string;
  state?: string;
  cpuCount?: number;
  memoryMB?: number;
  diskSizeMB?: number;
  /** Epoch milliseconds. */
  startedAt?: number;
  /** Epoch milliseconds. */
  endAt?: number;
  metadata?: Record<string, string>;
  domain?: string;
  envdVersion?: string;
  nodeID?: string;
  /** When set, the data plane requires `X-Access-Token` with this value. */
  accessToken?: string;
  /** Created with E2B's `autoResume: {enabled: true}`: data-plane traffic resumes it once paused. */
  autoResume?: boolean;
  /** CPU use in percent while running; default from the id (one in ten busy, see usage-routes). */
  cpuPct?: number;
  logs?: SimLogEntry[];
  files?: Map<string, Buffer>;
}

/** A background process of a sandbox (started with `cmd &`); it survives pause and resume. */
export interface SimProcess {
  pid: number;
  command: string;
  /** Epoch ms on the simulator's clock. */
  startedAt: number;
  /** When it exits by itself (a background `sleep`), epoch ms; undefined: never. */
  endsAt?: number;
  /** The HTTP service it runs (`python -m http.server`): its port and the directory it serves. */
  serves?: { port: number; dir: string };
}

/** A state a read keeps reporting after the real one changed, until `until` (epoch ms). */
export interface ShownState {
  state: string;
  until: number;
}

/** Lines of the generated sandbox logs. */
const LOG_LINES: ReadonlyArray<[SimLogEntry["level"], string]> = [
  ["info", "[envd] starting envd"],
  ["info", "[envd] listening on :49983"],
  ["debug", "[envd] health check ok"],
  ["info", "[process] started /bin/bash -l -c 'python app.py'"],
  ["warn", "[fs] watcher limit reached, falling back to polling"],
  ["info", "[process] process exited with code 0"],
  ["error", "[process] process exited with code 1"],
];

/** A sandbox; `logs` and `files` are built on first use so 100,000 idle sandboxes stay cheap. */
export class SimSandbox {
  /** Immutable: the state's sorted index is keyed by it. */
  readonly sandboxID: string;
  templateID: string;
  alias: string | undefined;
  clientID: string;
  state: string;
  cpuCount: number;
  memoryMB: number;
  diskSizeMB: number;
  startedAt: number;
  endAt: number;
  metadata: Record<string, string>;
  domain: string | undefined;
  envdVersion: string;
  nodeID: string;
  accessToken: string | undefined;
  autoResume: boolean;
  cpuPct: number | undefined;
  /** Created with E2B's `autoPause: true`: paused, not killed, when its time to live ends. */
  autoPause = false;
  /** Created with `network.allowPublicTraffic: false`: its ports want this in e2b-traffic-access-token. */
  trafficToken: string | undefined = undefined;
  /** When the pause route last paused it, epoch ms (simulator clock). */
  pausedAt: number | undefined = undefined;
  /**
   * Stamps file writes into `fileWrittenAt` (an auto-pause knob loses recent ones); the create
   * routes set the simulator's. Set before the first file is written.
   */
  fileClock: Clock | undefined;
  /** When each file was last written, epoch ms (stamped only with `fileClock`). */
  readonly fileWrittenAt = new Map<string, number>();
  /** The files it had when first paused (kept for the filesFromFirstPauseFromResume knob). */
  firstPauseFiles: Map<string, Buffer> | undefined;
  /** Resumes (or E2B connects of a paused sandbox) attempted so far. */
  resumes = 0;
  /** Set by a slow pause or resume: what reads report until the change shows. */
  shownState: ShownState | undefined;
  private logList: SimLogEntry[] | undefined;
  private fileMap: Map<string, Buffer> | undefined;
  private processMap: Map<number, SimProcess> | undefined;
  private readonly logSeed: number;
  private readonly logCount: number;

  constructor(
    init: Required<
      Omit<
        SandboxInit,
        "alias" | "domain" | "accessToken" | "autoResume" | "cpuPct" | "logs" | "files"
      >
    > &
      SandboxInit,
    logSeed: number,
    logCount: number,
  ) {
    this.sandboxID = init.sandboxID;
    this.templateID = init.templateID;
    this.alias = init.alias;
    this.clientID = init.clientID;
    this.state = init.state;
    this.cpuCount = init.cpuCount;
    this.memoryMB = init.memoryMB;
    this.diskSizeMB = init.diskSizeMB;
    this.startedAt = init.startedAt;
    this.endAt = init.endAt;
    this.metadata = init.metadata;
    this.domain = init.domain;
    this.envdVersion = init.envdVersion;
    this.nodeID = init.nodeID;
    this.accessToken = init.accessToken;
    this.autoResume = init.autoResume ?? false;
    this.cpuPct = init.cpuPct;
    this.logList = init.logs;
    this.fileMap = init.files;
    this.logSeed = logSeed;
    this.logCount = logCount;
  }

  /** Log entries, oldest first. */
  get logs(): SimLogEntry[] {
    if (!this.logList) {
      const rng = new Prng(deriveSeed(this.logSeed, this.sandboxID));
      this.logList = [];
      for (let i = 0; i < this.logCount; i++) {
        const [level, line] = rng.pick(LOG_LINES);
        this.logList.push({ timestamp: this.startedAt + i * 1000 + rng.int(0, 999), line, level });
      }
    }
    return this.logList;
  }

  /** In-memory file system: absolute path -> content. */
  get files(): Map<string, Buffer> {
    if (!this.fileMap) {
      const clock = this.fileClock;
      const stamps = this.fileWrittenAt;
      this.fileMap = clock
        ? new (class extends Map<string, Buffer> {
            override set(path: string, content: Buffer): this {
              stamps.set(path, clock.now());
              return super.set(path, content);
            }
          })()
        : new Map();
    }
    return this.fileMap;
  }

  /** Background processes by pid. */
  get processes(): Map<number, SimProcess> {
    this.processMap ??= new Map();
    return this.processMap;
  }

  /** The state a read reports at `now` (epoch ms): the real one once a slow change showed. */
  visibleState(now: number): string {
    if (this.shownState && now < this.shownState.until) return this.shownState.state;
    this.shownState = undefined;
    return this.state;
  }
}

/** A cluster node. */
export interface SimNode {
  nodeID: string;
  clusterID: string;
  status: string;
  /** Epoch milliseconds of the last status change. */
  statusChangedAt: number;
  version: string;
  commit: string;
  cpuCount: number;
  memoryTotalBytes: number;
  maxSandboxes: number;
  createSuccesses: number;
  createFails: number;
}

/** A template (sandbox image). */
export interface SimTemplate {
  templateID: string;
  alias: string;
  buildID: string;
  status: string;
  version: string;
  replicas: number;
  error: string | undefined;
  cpuCount: number;
  memoryMB: number;
  diskSizeMB: number;
  envdVersion: string;
  public: boolean;
  /** Epoch milliseconds. */
  createdAt: number;
  /** Epoch milliseconds. */
  updatedAt: number;
  spawnCount: number;
  buildCount: number;
  /** Why the latest build failed (status `error`), as E2B's build status reports it. */
  buildReason?: SimBuildReason;
}

/** E2B's BuildStatusReason: the message and the step that failed. */
export interface SimBuildReason {
  message: string;
  step?: string;
}

/** A build a template had before its latest one. */
export interface SimBuild {
  templateID: string;
  status: string;
  reason?: SimBuildReason;
}

/** Expected per state x template roll-up, to compare with what the exporter exports. */
export interface GroundTruthRow {
  state: string;
  templateId: string;
  count: number;
  cpuSum: number;
  memoryBytesSum: number;
  /** Epoch seconds of the oldest start in the group. */
  oldestStartSeconds: number;
}
