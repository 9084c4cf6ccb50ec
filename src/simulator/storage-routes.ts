// E2B's storage lists, for the E2B flavor and its demo: GET /snapshots (paged as E2B pages them,
// newest first) and GET /volumes (one list). The simulator keeps no snapshots of its own: each
// paused sandbox stands for one taken of it, so the sandboxes the policy pauses show up in the
// inventory (and leave it when resumed); each template has one data volume.
import type { ApiHandler, SimContext } from "./context.js";
import { type CursorRow, cursorPaged } from "./cursor-pages.js";
import { sendJson } from "./http-io.js";
import type { RouteDef } from "./router.js";

/** E2B's SnapshotInfo of each paused sandbox: a raw id with its tag, and no name. */
function snapshots(ctx: SimContext): CursorRow[] {
  const out: CursorRow[] = [];
  for (const s of ctx.state.sandboxes.values()) {
    if (s.state !== "paused") continue;
    const id = `snap-${s.sandboxID}`;
    out.push({
      body: { snapshotID: `${id}:default`, names: [] },
      at: s.pausedAt ?? s.startedAt,
      id,
    });
  }
  return out;
}

/** E2B's Volume of each template's data volume. */
const listVolumes: ApiHandler = (ctx, _req, res) =>
  sendJson(
    res,
    200,
    ctx.state.templates.map((t) => ({
      volumeID: `vol-${t.templateID}`,
      name: `${t.templateID}-data`,
    })),
  );

/** The storage routes of the E2B flavor. */
export const storageRoutes: RouteDef<ApiHandler>[] = [
  { method: "GET", template: "/snapshots", handler: cursorPaged(snapshots) },
  { method: "GET", template: "/volumes", handler: listVolumes },
];
