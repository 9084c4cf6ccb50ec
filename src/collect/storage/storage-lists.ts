// The two storage lists, each record checked on its own: GET /snapshots (paged like E2B's other
// lists: `limit` up to 100, the next page's cursor in X-Next-Token) and GET /volumes (one list on
// E2B; a next token is followed all the same). A record that is not an object or has no id is
// dropped and counted (sandbox_exporter_invalid_values_dropped_total{resource,field}), the rest of
// its page kept; a body that is no list fails the read, named.
import { z } from "zod";
import type { PlatformReader, Reading } from "../collector.js";
import { walkPages } from "../paging.js";

/**
 * Snapshot ids remembered at most (the first of the list, which E2B orders newest first): a
 * snapshot is first seen when its id is among them and was not at the read before.
 */
export const MAX_KNOWN_SNAPSHOTS = 100_000;
/** E2B's largest page of /snapshots (also its default). */
export const SNAPSHOTS_PAGE_LIMIT = 100;

/** One stored thing, by its id. */
export interface StoredRecord {
  id: string;
}

/** A list of each kind: its endpoint, the field of its id, the resource its drops count under. */
export const LISTS = {
  snapshots: { endpoint: "/snapshots", id: "snapshotID", resource: "snapshot", paged: true },
  volumes: { endpoint: "/volumes", id: "volumeID", resource: "volume", paged: false },
} as const;
export type StorageKind = keyof typeof LISTS;

const page = z.array(z.unknown(), { error: "a list of records" });
const id = z.string().trim().min(1);

/** Every record of one list, page after page (at most `maxPages`). */
export async function readList(
  reader: PlatformReader,
  kind: StorageKind,
  maxPages: number,
): Promise<Reading<StoredRecord[]>> {
  const { endpoint, paged } = LISTS[kind];
  const { items, pages } = await walkPages(async (token) => {
    const query = paged ? { limit: SNAPSHOTS_PAGE_LIMIT, nextToken: token } : { nextToken: token };
    const reply = await reader.getJsonReply(endpoint, endpoint, query, (body) => page.parse(body));
    const next = reply.headers["x-next-token"];
    const nextToken = Array.isArray(next) ? next[0] : next;
    const records = reply.body.flatMap((raw) => record(reader, kind, raw));
    return {
      size: reply.body.length,
      items: () => records,
      ...(nextToken ? { nextToken } : {}),
    };
  }, maxPages);
  return { value: items, requests: pages };
}

/** The record of `raw`, or none (counted) when it is not an object with an id. */
function record(reader: PlatformReader, kind: StorageKind, raw: unknown): StoredRecord[] {
  const { id: idField, resource } = LISTS[kind];
  const invalid = reader.normalizer.invalid;
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    invalid.add(resource, "record");
    return [];
  }
  const fields = raw as Record<string, unknown>;
  const got = id.safeParse(fields[idField]);
  if (!got.success) {
    invalid.add(resource, "id");
    return [];
  }
  return [{ id: got.data }];
}
