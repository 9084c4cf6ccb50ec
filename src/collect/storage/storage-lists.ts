// The two storage lists, each record checked on its own: GET /snapshots (paged like E2B's other
// lists: `limit` up to 100, the next page's cursor in X-Next-Token) and GET /volumes (one list on
// E2B; a next token is followed all the same). A record that is not an object or has no id is
// dropped and counted (sandbox_exporter_invalid_values_dropped_total{resource,field}), the rest of
// its page kept; a body that is no list fails the read, named.
import { z } from "zod";
import { RECORD_FIELD } from "../../platform/normalize/invalid-values.js";
import { deferList, UntrackableRecordError } from "../../platform/normalize/normalize.js";
import type { PlatformReader } from "../collector.js";
import { type ListPass, type PageBounds, type PassRead, readPass } from "../paging.js";

/**
 * Snapshot ids remembered at most (the first of the list, which E2B orders newest first): a
 * snapshot is first seen when its id is among them and was not at the read before.
 */
export const MAX_KNOWN_SNAPSHOTS = 100_000;
/** E2B's largest page of /snapshots (also its default). */
export const SNAPSHOTS_PAGE_LIMIT = 100;

/** One stored thing, by its id; a snapshot's names too (`team/name`, maybe with a tag). */
export interface StoredRecord {
  id: string;
  names: readonly string[];
}

/** A list of each kind: its endpoint, the field of its id, the resource its drops count under. */
export const LISTS = {
  snapshots: { endpoint: "/snapshots", id: "snapshotID", resource: "snapshot", paged: true },
  volumes: { endpoint: "/volumes", id: "volumeID", resource: "volume", paged: false },
} as const;
export type StorageKind = keyof typeof LISTS;

const page = z.array(z.unknown(), { error: "a list of records" });
const id = z.string().trim().min(1);

/** What a pass over one list keeps: the records counted, the first records of the list. */
export interface StoredTally {
  count: number;
  /** The first MAX_KNOWN_SNAPSHOTS records (the newest: E2B lists newest first). */
  records: StoredRecord[];
}

/**
 * One tick's read of a list: on from where the last tick's stopped, up to its page and time
 * limits (a pass over a million snapshots takes many ticks); see readPass.
 */
export function readList(
  reader: PlatformReader,
  kind: StorageKind,
  bounds: PageBounds,
  previous: ListPass<StoredTally> | undefined,
): Promise<PassRead<StoredTally>> {
  const { endpoint, paged } = LISTS[kind];
  return readPass<StoredRecord, StoredTally>({
    list: endpoint,
    bounds,
    previous,
    start: (from) =>
      from ? { count: from.count, records: [...from.records] } : { count: 0, records: [] },
    add: (acc, r) => {
      acc.count++;
      // Volumes are only counted: their records are not kept.
      if (kind === "snapshots" && acc.records.length < MAX_KNOWN_SNAPSHOTS) acc.records.push(r);
    },
    fetchPage: async (token) => {
      const query = paged
        ? { limit: SNAPSHOTS_PAGE_LIMIT, nextToken: token }
        : { nextToken: token };
      // Background: granted only while no other request waits, within its share of the budget.
      const reply = await reader.getJsonReply(
        endpoint,
        endpoint,
        query,
        (body) => page.parse(body),
        {
          background: true,
        },
      );
      // The list normalizer's page: a bad record dropped and counted, the rest kept; the cursor
      // from X-Next-Token.
      return deferList(reader.normalizer, reply.body, reply.headers, (raw, path) =>
        record(reader, kind, raw, path),
      );
    },
  });
}

/** The record of `raw`; throws (the page drops and counts it) when it is no object with an id. */
function record(
  reader: PlatformReader,
  kind: StorageKind,
  raw: unknown,
  path: string,
): StoredRecord {
  const { id: idField, resource } = LISTS[kind];
  if (typeof raw !== "object" || raw === null || Array.isArray(raw))
    throw new UntrackableRecordError(path, `a ${resource} object`, raw, resource, RECORD_FIELD);
  const fields = raw as Record<string, unknown>;
  const got = id.safeParse(fields[idField]);
  if (!got.success)
    throw new UntrackableRecordError(
      `${path}.${idField}`,
      "an id",
      fields[idField],
      resource,
      "id",
    );
  // A names field that is no list loses the names (counted), not the record: it still counts.
  const names = Array.isArray(fields.names)
    ? fields.names.filter((n): n is string => typeof n === "string" && n !== "")
    : [];
  if (fields.names != null && !Array.isArray(fields.names))
    reader.normalizer.invalid.add(resource, "names");
  return { id: got.data, names };
}
