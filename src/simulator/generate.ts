// Deterministic fixture generation: the same seed always builds the same fleet.

import type { SandboxInit, SimNode, SimTemplate } from "./model.js";
import type { Prng } from "./prng.js";

const ALIASES = ["base", "code-interpreter", "desktop", "python-data", "node-web"];
const TEAMS = ["ml", "web", "data", "infra"];
const ENVS = ["prod", "staging", "dev"];
const ENVD_VERSIONS = ["0.2.4", "0.2.4", "0.2.4", "0.1.5"];
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

/** Builds `count` ready templates. */
export function generateTemplates(rng: Prng, count: number, now: number): SimTemplate[] {
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
      envdVersion: rng.pick(ENVD_VERSIONS),
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
function pickMetadata(rng: Prng): Record<string, string> {
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
): Required<Omit<SandboxInit, "domain" | "accessToken" | "cpuPct" | "logs" | "files">> {
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
