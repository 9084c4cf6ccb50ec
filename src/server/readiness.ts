// Readiness: the exporter is ready once some of its data is good, not merely once a cycle ended.
import { collectorStatuses, type Snapshot } from "../collect/snapshot.js";

/**
 * True once `snapshot` holds good data: a collector other than health has succeeded (now or
 * earlier), or health reads the platform up. A first cycle that failed entirely (health reading
 * the platform down from a 500 is a read, but no data) is not ready.
 */
export function hasGoodData(snapshot: Snapshot | undefined): boolean {
  if (snapshot === undefined) return false;
  if (snapshot.health?.up === true) return true;
  return collectorStatuses(snapshot).some(
    (c) => c.name !== "health" && c.lastSuccessAt !== undefined,
  );
}
