// Nodes and templates as E2B's hosted API sends them (its Node, NodeDetail, Template and
// TemplateWithBuilds schemas, the latter for snapshot templates too); sandboxes need no variant
// of their own (see render.ts).
import type { SimNode, SimTemplate } from "./model.js";
import { iso, type NodeUsage } from "./render.js";
import type { SimSnapshot } from "./snapshot-store.js";
import { aliasOf } from "./template-names.js";

const MIB = 1_048_576;
const HUGE_PAGE_BYTES = 2 * MIB;
/** Share of a node's memory set aside as huge pages for the sandboxes' VMs. */
const HUGE_PAGE_SHARE = 0.8;
/** Disk a node keeps per sandbox slot. */
const DISK_PER_SLOT_BYTES = 20_480 * MIB;

/** A node as E2B's GET /nodes (detail=false, `Node`) or GET /nodes/{id} (`NodeDetail`) sends it. */
export function renderE2bNode(n: SimNode, u: NodeUsage, detail: boolean): Record<string, unknown> {
  const hugePagesTotal = Math.floor((n.memoryTotalBytes * HUGE_PAGE_SHARE) / HUGE_PAGE_BYTES);
  const out: Record<string, unknown> = {
    id: n.nodeID,
    serviceInstanceID: `si-${n.nodeID.replace(/^node-/, "")}`,
    clusterID: n.clusterID,
    status: n.status,
    statusChangedAt: iso(n.statusChangedAt),
    sandboxCount: u.running,
    createSuccesses: n.createSuccesses,
    createFails: n.createFails,
    version: n.version,
    commit: n.commit,
    machineInfo: {
      cpuFamily: "6",
      cpuModel: "143",
      cpuModelName: "Intel Xeon",
      cpuArchitecture: "x86_64",
    },
    metrics: {
      allocatedCPU: u.allocatedCPU,
      cpuPercent: Math.min(100, Math.round((u.usedCPU / Math.max(n.cpuCount, 1)) * 100)),
      cpuCount: n.cpuCount,
      allocatedMemoryBytes: u.allocatedMemoryBytes,
      memoryUsedBytes: u.usedMemoryBytes,
      memoryTotalBytes: n.memoryTotalBytes,
      hugePagesTotal,
      hugePagesUsed: Math.min(hugePagesTotal, Math.ceil(u.allocatedMemoryBytes / HUGE_PAGE_BYTES)),
      hugePagesReserved: 0,
      hugePageSizeBytes: HUGE_PAGE_BYTES,
      disks: [
        {
          mountPoint: "/orchestrator",
          device: "/dev/nvme1n1",
          filesystemType: "xfs",
          usedBytes: u.usedDiskBytes,
          totalBytes: n.maxSandboxes * DISK_PER_SLOT_BYTES,
        },
      ],
    },
  };
  // NodeDetail has every field of Node but this one.
  if (!detail) out.sandboxStartingCount = u.starting;
  return out;
}

/** The fields both of E2B's template shapes carry; `lastSpawnedAt` in epoch ms. */
function templateCommon(t: SimTemplate, lastSpawnedAt: number | undefined) {
  return {
    templateID: t.templateID,
    public: t.public,
    aliases: [t.alias],
    names: [t.alias],
    createdAt: iso(t.createdAt),
    updatedAt: iso(t.updatedAt),
    lastSpawnedAt: lastSpawnedAt === undefined ? null : iso(lastSpawnedAt),
    spawnCount: t.spawnCount,
  };
}

/** A template as E2B's GET /templates sends it (`Template`); `lastSpawnedAt` in epoch ms. */
export function renderE2bTemplate(
  t: SimTemplate,
  lastSpawnedAt: number | undefined,
): Record<string, unknown> {
  return {
    ...templateCommon(t, lastSpawnedAt),
    buildID: t.buildID,
    cpuCount: t.cpuCount,
    memoryMB: t.memoryMB,
    diskSizeMB: t.diskSizeMB,
    createdBy: null,
    buildCount: t.buildCount,
    envdVersion: t.envdVersion,
    buildStatus: t.status,
  };
}

/** A template as E2B's GET /templates/{id} sends it (`TemplateWithBuilds`: its last build). */
export function renderE2bTemplateBuilds(
  t: SimTemplate,
  lastSpawnedAt: number | undefined,
): Record<string, unknown> {
  const done = t.status === "ready" || t.status === "error";
  return {
    ...templateCommon(t, lastSpawnedAt),
    builds: [
      {
        buildID: t.buildID,
        status: t.status,
        createdAt: iso(t.updatedAt),
        updatedAt: iso(t.updatedAt),
        ...(done && { finishedAt: iso(t.updatedAt) }),
        cpuCount: t.cpuCount,
        memoryMB: t.memoryMB,
        diskSizeMB: t.diskSizeMB,
        envdVersion: t.envdVersion,
      },
    ],
  };
}

/**
 * A snapshot template as E2B's GET /templates/{id} sends it: its aliases and names, its spawns,
 * and every build newest first (snapshot builds are `uploaded`, which E2B reports as ready).
 */
export function renderE2bSnapshotTemplate(s: SimSnapshot): Record<string, unknown> {
  const builds = [...s.builds].sort(
    (a, b) => b.createdAt - a.createdAt || (a.buildID < b.buildID ? 1 : -1),
  );
  return {
    templateID: s.templateID,
    public: false,
    aliases: s.names.map(aliasOf),
    names: [...s.names],
    createdAt: iso(s.createdAt),
    // Build assignments and spawns leave the env's updated_at as it was.
    updatedAt: iso(s.createdAt),
    lastSpawnedAt: s.lastSpawnedAt === undefined ? null : iso(s.lastSpawnedAt),
    spawnCount: s.spawnCount,
    builds: builds.map((b) => ({
      buildID: b.buildID,
      status: "ready",
      createdAt: iso(b.createdAt),
      updatedAt: iso(b.createdAt),
      finishedAt: iso(b.createdAt),
      cpuCount: s.cpuCount,
      memoryMB: s.memoryMB,
      diskSizeMB: s.diskSizeMB,
      envdVersion: s.envdVersion,
    })),
  };
}
