// Deterministic fixture generation: the same seed always builds the same fleet.

import { CURRENT_ENVD_VERSION } from "./envd.js";
import type { SandboxInit, SimNode, SimSandbox, SimTemplate } from "./model.js";
import type { Prng } from "./prng.js";
import { BUSY_CPU_PCT, IDLE_CPU_PCT } from "./usage.js";

const ALIASES = ["base", "code-interpreter", "desktop", "python-data", "node-web"];
const TEAMS = ["ml", "web", "data", "infra"];
const ENVS = ["prod", "staging", "dev"];
const DAY_MS = 86_400_000;

/** A sandbox id shaped like the platform's (20 lowercase alphanumerics). */
export function sandboxId(rng: Prng): string {
  return `i${rng.chars(19)}`;
}

/** A UUID-shaped hex string. */
export function uuid(rng: Prng): string {
  const h = rng.chars(32, "0123456789abcdef");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20)}`;
}

/** `value`, after the draw that once picked it: every later field of a seeded fleet stays as it was. */
function afterDraw<T>(rng: Prng, value: T): T {
  rng.next();
  return value;
}

/** Builds `count` ready templates; template i runs envd `envdVersions[i % length]`. */
export function generateTemplates(
  rng: Prng,
  count: number,
  now: number,
  envdVersions: readonly string[] = [CURRENT_ENVD_VERSION],
): SimTemplate[] {
  const out: SimTemplate[] = [];
  for (let i = 0; i < count; i++) {
    const createdAt = Math.floor((now - rng.int(30, 400) * DAY_MS) / 1000) * 1000;
    out.push({
      templateID: rng.chars(20),
      alias: ALIASES[i] ?? `template-${i + 1}`,
      buildID: uuid(rng),
      status: "ready",
      version: `v${rng.int(1, 12)}`,
      replicas: rng.int(1, 3),
      error: undefined,
      cpuCount: rng.pick([1, 2, 2, 4, 8]),
      memoryMB: rng.pick([512, 1024, 2048, 4096, 8192]),
      diskSizeMB: rng.pick([5120, 10240, 20480]),
      envdVersion: afterDraw(rng, envdVersions[i % envdVersions.length] ?? CURRENT_ENVD_VERSION),
      public: rng.next() < 0.3,
      createdAt,
      updatedAt: createdAt + rng.int(0, 20) * DAY_MS,
      spawnCount: rng.int(10, 50_000),
      buildCount: rng.int(1, 40),
    });
  }
  return out;
}

/** Builds `count` nodes, ready since `now`, with room for `sandboxes` sandboxes between them. */
export function generateNodes(rng: Prng, count: number, sandboxes: number, now: number): SimNode[] {
  const perNode = Math.max(100, Math.ceil((sandboxes / Math.max(count, 1)) * 1.5));
  const out: SimNode[] = [];
  const clusterID = uuid(rng);
  for (let i = 0; i < count; i++) {
    out.push({
      nodeID: `node-${rng.chars(8)}`,
      clusterID,
      status: "ready",
      statusChangedAt: Math.floor(now / 1000) * 1000,
      version: "0.42.0",
      commit: rng.chars(7, "0123456789abcdef"),
      // Roomy enough for the largest template mix: allocation stays below capacity.
      cpuCount: Math.ceil((perNode * 4) / 16) * 16,
      memoryTotalBytes: perNode * 8 * 1024 * 1048576,
      maxSandboxes: perNode,
      createSuccesses: rng.int(1000, 100_000),
      createFails: rng.int(0, 50),
    });
  }
  return out;
}

/** The lifecycle state of a generated sandbox: mostly running, some paused, a few in between. */
function pickState(rng: Prng): string {
  const r = rng.next();
  if (r < 0.8) return "running";
  if (r < 0.95) return "paused";
  if (r < 0.98) return "starting";
  return "killing";
}

/** Metadata of a generated sandbox; one in five carries none. */
export function pickMetadata(rng: Prng): Record<string, string> {
  if (rng.next() < 0.2) return {};
  const md: Record<string, string> = { team: rng.pick(TEAMS), env: rng.pick(ENVS) };
  if (rng.next() < 0.3) md.owner = `user-${rng.int(1, 50)}`;
  return md;
}

/** One generated sandbox (id not yet checked for uniqueness). */
export function generateSandbox(
  rng: Prng,
  templates: readonly SimTemplate[],
  nodes: readonly SimNode[],
  now: number,
): Required<
  Omit<SandboxInit, "domain" | "accessToken" | "autoResume" | "cpuPct" | "logs" | "files">
> {
  const template = rng.pick(templates);
  const startedAt = Math.floor((now - rng.int(60, 3 * 86_400) * 1000) / 1000) * 1000;
  return {
    sandboxID: sandboxId(rng),
    templateID: template.templateID,
    alias: template.alias,
    clientID: rng.chars(8, "0123456789abcdef"),
    state: pickState(rng),
    cpuCount: template.cpuCount,
    memoryMB: template.memoryMB,
    diskSizeMB: template.diskSizeMB,
    startedAt,
    endAt: Math.floor((now + rng.int(300, 86_400) * 1000) / 1000) * 1000,
    metadata: pickMetadata(rng),
    envdVersion: template.envdVersion,
    nodeID: nodes.length > 0 ? rng.pick(nodes).nodeID : "",
  };
}

/** What a running sandbox of a mixed fleet does: see applyActivityMix. */
export type ActivityKind = "idle" | "silent_busy" | "active";

/** Shares (0..1) of the running sandboxes that are idle and silent-but-busy; the rest are active. */
export interface ActivityMix {
  idle: number;
  silentBusy: number;
  /** Newest log entry of an idle or silent-but-busy sandbox at least this long ago. */
  quietForMs: number;
  /** Newest log entry of an active sandbox this long ago (or newer). */
  activeAgoMs: number;
}

/**
 * Gives the running sandboxes a known mix, in exact shares: idle (quiet logs, idle CPU),
 * silent-but-busy (quiet logs, busy CPU: a computation that writes no log line) and active (a
 * recent log line, idle CPU). Sandboxes are taken in generation order, which is random with respect
 * to ids and start times. A quiet one that started too recently to be quiet is started earlier:
 * call this before any log of the fleet is read. Returns each running sandbox's kind.
 */
export function applyActivityMix(
  sandboxes: Iterable<SimSandbox>,
  runningStates: ReadonlySet<string>,
  mix: ActivityMix,
  now: number,
): Map<string, ActivityKind> {
  const running = [...sandboxes].filter((s) => runningStates.has(s.state));
  const busy = Math.round(running.length * mix.silentBusy);
  const quiet = busy + Math.round(running.length * mix.idle);
  const kinds = new Map<string, ActivityKind>();
  running.forEach((s, i) => {
    const kind: ActivityKind = i < busy ? "silent_busy" : i < quiet ? "idle" : "active";
    kinds.set(s.sandboxID, kind);
    s.cpuPct = kind === "silent_busy" ? BUSY_CPU_PCT : IDLE_CPU_PCT;
    if (kind === "active") {
      // Generated log entries follow the start: one a few minutes ago makes the sandbox active.
      const at = now - mix.activeAgoMs;
      const logs = s.logs;
      if ((logs.at(-1)?.timestamp ?? 0) < at)
        logs.push({ timestamp: at, line: "work", level: "info" });
    } else {
      // Logs are generated from the start, a few seconds apart, when first read.
      s.startedAt = Math.min(s.startedAt, now - mix.quietForMs - 60_000);
    }
  });
  return kinds;
}
