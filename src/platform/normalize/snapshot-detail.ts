// A snapshot's details as GET /templates/{id} serves them (E2B's TemplateWithBuilds): when it was
// made, when a sandbox was last started from it (null: never) and how often.
import { z } from "zod";
import { parseIsoTime } from "../../util/time.js";

/** What the retention rules need of a snapshot's details (epoch ms). */
export interface SnapshotDetail {
  createdAt: number;
  lastSpawnedAt: number | null;
  spawnCount?: number;
}

const time = z.string().transform((s, ctx) => {
  const at = parseIsoTime(s);
  if (at !== undefined) return at;
  ctx.addIssue({ code: "custom", message: "an ISO-8601 time" });
  return z.NEVER;
});

const Detail = z.looseObject({
  createdAt: time,
  lastSpawnedAt: time.nullish(),
  spawnCount: z.number().int().min(0).optional(),
});

/** Parses one answer; throws (naming the field) when createdAt or lastSpawnedAt is not a time. */
export function parseSnapshotDetail(body: unknown): SnapshotDetail {
  const d = Detail.parse(body);
  return {
    createdAt: d.createdAt,
    lastSpawnedAt: d.lastSpawnedAt ?? null,
    ...(d.spawnCount !== undefined ? { spawnCount: d.spawnCount } : {}),
  };
}
