// A snapshot's two calls on E2B's template routes: its details (GET /templates/{id}) and its
// deletion (DELETE /templates/{id}, the SDK's Sandbox.deleteSnapshot).
import { parseSnapshotDetail, type SnapshotDetail } from "../normalize/snapshot-detail.js";
import { type ControlCore, enc } from "./control-core.js";

const ENDPOINT = "/templates/{id}";

/**
 * GET /templates/{id} of a snapshot, by its raw template id (E2B looks it up raw: no tag, no
 * name); a 404 is PlatformNotFoundError, not counted as an API error.
 */
export async function snapshotDetail(
  core: ControlCore,
  templateId: string,
): Promise<SnapshotDetail> {
  const r = await core.send({
    method: "GET",
    path: `/templates/${enc(templateId)}`,
    endpoint: ENDPOINT,
    notFoundExpected: true,
  });
  return core.decode(ENDPOINT, "GET", () => parseSnapshotDetail(r.body));
}

/**
 * DELETE /templates/{id} of a snapshot, by its snapshot id (E2B takes a name or a raw id and cuts
 * the tag; the `/` of a name is URL-encoded, as E2B's SDK sends it): every build of the template
 * goes. One attempt, never retried; a 400 (a sandbox uses it) is PlatformHttpError.
 */
export async function deleteSnapshot(core: ControlCore, snapshotId: string): Promise<void> {
  await core.send({ method: "DELETE", path: `/templates/${enc(snapshotId)}`, endpoint: ENDPOINT });
}
