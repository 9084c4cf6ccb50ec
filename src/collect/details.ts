// A list and, when asked, each item's detail record: how /nodes and /templates are read.
import { mapLimit } from "../util/concurrency.js";
import type { Reading } from "./collector.js";

/** Detail reads (/nodes/{id}, /templates/{id}) in flight at once. */
const DETAIL_CONCURRENCY = 8;

type Detailed = { id: string; numeric: Record<string, number>; info: Record<string, string> };

/** Reads a list and, when `enabled`, each item's detail record merged over its summary. */
export async function withDetails<T extends Detailed>(
  list: () => Promise<T[]>,
  detail: (id: string) => Promise<T>,
  enabled: boolean,
): Promise<Reading<T[]>> {
  const items = await list();
  if (!enabled) return { value: items, requests: 1 };
  const value = await mapLimit(items, DETAIL_CONCURRENCY, async (item) =>
    mergeDetail(item, await detail(item.id)),
  );
  return { value, requests: 1 + items.length };
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
