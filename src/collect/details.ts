// A list and, when asked, each item's detail record: how /nodes and /templates are read.
import { mapLimit } from "../util/concurrency.js";
import type { Reading } from "./collector.js";

/** Detail reads (/nodes/{id}, /templates/{id}) in flight at once. */
const DETAIL_CONCURRENCY = 8;

type Detailed = { id: string; numeric: Record<string, number>; info: Record<string, string> };

/** Reads a list and, when `enabled`, each item's detail record merged over its summary. */
export async function withDetails<T extends Detailed>(
  list: () => Promise<Reading<readonly T[]>>,
  detail: (id: string) => Promise<T>,
  enabled: boolean,
): Promise<Reading<readonly T[]>> {
  const { value: items, requests } = await list();
  if (!enabled) return { value: items, requests };
  const value = await mapLimit(items, DETAIL_CONCURRENCY, async (item) =>
    mergeDetail(item, await detail(item.id)),
  );
  return { value, requests: requests + items.length };
}

/** A read that is one request. */
export async function oneRequest<T>(read: Promise<T>): Promise<Reading<T>> {
  return { value: await read, requests: 1 };
}

/** Detail records win over list summaries, field by field. */
function mergeDetail<T extends Detailed>(summary: T, detail: T): T {
  return {
    ...summary,
    ...detail,
    numeric: { ...summary.numeric, ...detail.numeric },
    info: { ...summary.info, ...detail.info },
  };
}
