// How busy a sandbox is: one model behind the usage endpoints and E2B's node metrics.
// Usage is flat over time: a busy sandbox stays busy, whatever its logs say.
import { fnv1a32 } from "../util/shard.js";
import type { SimSandbox } from "./model.js";

const MIB = 1_048_576;
/** Shares of its memory and disk a running sandbox uses. */
export const MEM_USED_SHARE = 0.25;
export const DISK_USED_SHARE = 0.1;
/** CPU of a busy sandbox and of an idle one, percent. */
export const BUSY_CPU_PCT = 62.5;
export const IDLE_CPU_PCT = 0.5;

/** CPU use of a running sandbox: its own setting, else one in ten busy (by id), the rest idle. */
export function cpuOf(s: SimSandbox): number {
  if (s.cpuPct !== undefined) return s.cpuPct;
  return fnv1a32(s.sandboxID) % 10 === 0 ? BUSY_CPU_PCT : IDLE_CPU_PCT;
}

/** Resource use of a running sandbox (the fields of E2B's SandboxMetric but the times). */
export interface SandboxUsage {
  cpuCount: number;
  cpuUsedPct: number;
  memUsed: number;
  memTotal: number;
  memCache: number;
  diskUsed: number;
  diskTotal: number;
}

/** What a running sandbox uses: its CPU share, a quarter of its memory, a tenth of its disk. */
export function sandboxUsage(s: SimSandbox): SandboxUsage {
  const memTotal = s.memoryMB * MIB;
  const diskTotal = s.diskSizeMB * MIB;
  return {
    cpuCount: s.cpuCount,
    cpuUsedPct: cpuOf(s),
    memUsed: Math.round(memTotal * MEM_USED_SHARE),
    memTotal,
    memCache: Math.round(memTotal * 0.05),
    diskUsed: Math.round(diskTotal * DISK_USED_SHARE),
    diskTotal,
  };
}
