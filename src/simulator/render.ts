// Records -> the JSON the platform sends (E2B-style field names and formats).
import type { SimNode, SimSandbox, SimTemplate } from "./model.js";
import type { SimState } from "./state.js";
import { cpuOf, DISK_USED_SHARE, MEM_USED_SHARE } from "./usage.js";

const MIB = 1_048_576;

/** Epoch ms -> RFC 3339 text. */
export function iso(ms: number): string {
  return new Date(ms).toISOString();
}

/** A sandbox as the list (detail=false) or the detail/resume endpoints (detail=true) send it. */
export function renderSandbox(
  s: SimSandbox,
  domain: string,
  detail: boolean,
): Record<string, unknown> {
  const out: Record<string, unknown> = {
    sandboxID: s.sandboxID,
    templateID: s.templateID,
    alias: s.alias,
    clientID: s.clientID,
    startedAt: iso(s.startedAt),
    endAt: iso(s.endAt),
    cpuCount: s.cpuCount,
    memoryMB: s.memoryMB,
    diskSizeMB: s.diskSizeMB,
    metadata: s.metadata,
    state: s.state,
    envdVersion: s.envdVersion,
  };
  if (detail) {
    out.domain = s.domain ?? domain;
    if (s.accessToken !== undefined) out.envdAccessToken = s.accessToken;
  }
  return out;
}

/**
 * A sandbox as create, connect and resume send it (E2B's `Sandbox`): what a client needs to reach
 * it, not its resources.
 */
export function renderNewSandbox(s: SimSandbox, domain: string): Record<string, unknown> {
  return {
    sandboxID: s.sandboxID,
    templateID: s.templateID,
    alias: s.alias,
    clientID: s.clientID,
    envdVersion: s.envdVersion,
    envdAccessToken: s.accessToken,
    domain: s.domain ?? domain,
  };
}

/** Per-node usage derived from the sandboxes that live on it. */
export interface NodeUsage {
  running: number;
  starting: number;
  paused: number;
  allocatedCPU: number;
  allocatedMemoryBytes: number;
  /** Cores busy in running sandboxes (their CPU use, as the usage endpoints report it). */
  usedCPU: number;
  /** Memory used by running sandboxes, as the usage endpoints report it. */
  usedMemoryBytes: number;
  /** Disk used by running sandboxes, as the usage endpoints report it. */
  usedDiskBytes: number;
}

/** A node no sandbox lives on. */
export const NO_USAGE: Readonly<NodeUsage> = {
  running: 0,
  starting: 0,
  paused: 0,
  allocatedCPU: 0,
  allocatedMemoryBytes: 0,
  usedCPU: 0,
  usedMemoryBytes: 0,
  usedDiskBytes: 0,
};

/**
 * Usage of every node of `state`, in one pass over the fleet; with `others`, the states of the
 * other teams sharing those nodes, their sandboxes count too.
 */
export function nodeUsage(
  state: SimState,
  others: readonly SimState[] = [],
): Map<string, NodeUsage> {
  const out = new Map<string, NodeUsage>();
  for (const n of state.nodes) out.set(n.nodeID, { ...NO_USAGE });
  for (const fleet of [state, ...others]) addUsage(out, fleet);
  return out;
}

/** Adds the sandboxes of `state` to the usage of the nodes they live on. */
function addUsage(out: Map<string, NodeUsage>, state: SimState): void {
  for (const s of state.sandboxes.values()) {
    const u = out.get(s.nodeID);
    if (!u) continue;
    if (s.state === "paused") {
      u.paused++;
      continue;
    }
    if (s.state === "running") {
      u.running++;
      u.usedCPU += (cpuOf(s) / 100) * s.cpuCount;
      u.usedMemoryBytes += Math.round(s.memoryMB * MIB * MEM_USED_SHARE);
      u.usedDiskBytes += Math.round(s.diskSizeMB * MIB * DISK_USED_SHARE);
    } else if (s.state === "starting") u.starting++;
    u.allocatedCPU += s.cpuCount;
    u.allocatedMemoryBytes += s.memoryMB * MIB;
  }
}

/** A node as the list (detail=false) or detail endpoint sends it. */
export function renderNode(
  n: SimNode,
  usage: NodeUsage | undefined,
  detail: boolean,
): Record<string, unknown> {
  const u = usage ?? NO_USAGE;
  const out: Record<string, unknown> = {
    nodeID: n.nodeID,
    clusterID: n.clusterID,
    status: n.status,
    sandboxCount: u.running,
    sandboxStartingCount: u.starting,
    createSuccesses: n.createSuccesses,
    createFails: n.createFails,
    version: n.version,
    commit: n.commit,
    cpuCount: n.cpuCount,
    memoryTotalBytes: n.memoryTotalBytes,
    allocatedCPU: u.allocatedCPU,
    allocatedMemoryBytes: u.allocatedMemoryBytes,
    maxSandboxes: n.maxSandboxes,
  };
  if (detail) {
    out.machineInfo = {
      cpuFamily: "6",
      cpuModel: "143",
      cpuModelName: "Intel Xeon",
      cpuArchitecture: "x86_64",
    };
    out.cachedBuilds = [];
  }
  return out;
}

/** A template as the list (detail=false) or detail endpoint sends it. */
export function renderTemplate(t: SimTemplate, detail: boolean): Record<string, unknown> {
  const out: Record<string, unknown> = {
    templateID: t.templateID,
    buildID: t.buildID,
    aliases: [t.alias],
    status: t.status,
    version: t.version,
    replicas: t.replicas,
    cpuCount: t.cpuCount,
    memoryMB: t.memoryMB,
    diskSizeMB: t.diskSizeMB,
    public: t.public,
    envdVersion: t.envdVersion,
    createdAt: iso(t.createdAt),
    updatedAt: iso(t.updatedAt),
    spawnCount: t.spawnCount,
    buildCount: t.buildCount,
  };
  if (t.error !== undefined) out.error = t.error;
  if (detail) {
    out.builds = [{ buildID: t.buildID, status: t.status, createdAt: iso(t.updatedAt) }];
  }
  return out;
}

/** Cluster totals derived from nodes and sandboxes. */
export function renderOverview(state: SimState): Record<string, number> {
  let running = 0;
  let paused = 0;
  let cpuUsed = 0;
  let memUsed = 0;
  for (const s of state.sandboxes.values()) {
    if (s.state === "paused") {
      paused++;
      continue;
    }
    if (s.state === "running") running++;
    cpuUsed += s.cpuCount;
    memUsed += s.memoryMB * MIB;
  }
  let cpuTotal = 0;
  let memTotal = 0;
  let maxSandboxes = 0;
  let ready = 0;
  for (const n of state.nodes) {
    cpuTotal += n.cpuCount;
    memTotal += n.memoryTotalBytes;
    maxSandboxes += n.maxSandboxes;
    if (n.status === "ready") ready++;
  }
  return {
    nodeCount: state.nodes.length,
    readyNodeCount: ready,
    cpuCount: cpuTotal,
    cpuAllocated: cpuUsed,
    memoryTotalBytes: memTotal,
    memoryAllocatedBytes: memUsed,
    sandboxCount: state.sandboxes.size,
    runningSandboxCount: running,
    pausedSandboxCount: paused,
    maxSandboxes,
    templateCount: state.templates.length,
  };
}
