// E2B's storage, for the E2B flavor and its demo: snapshot templates (taken of a running sandbox,
// listed, deleted as templates are) and GET /volumes (one data volume per template). Read from
// infra's snapshot_template_create.go, snapshot_template_list.go and template_delete.go.
import { z } from "zod";
import type { ApiHandler, SimContext } from "./context.js";
import { type CursorRow, cursorPaged, type RowsRefusal } from "./cursor-pages.js";
import { compareVersions } from "./envd.js";
import { sendError, sendJson } from "./http-io.js";
import { resolveTemplate } from "./launch-source.js";
import type { RouteDef } from "./router.js";
import { isError, parseBody } from "./sandbox-routes.js";
import type { SimSnapshot } from "./snapshot-store.js";
import type { SimState } from "./state.js";
import {
  aliasOf,
  DEFAULT_TAG,
  foreignNamespace,
  parseName,
  shortSandboxId,
} from "./template-names.js";

/** Oldest envd a snapshot can be taken of (shared/pkg/utils MinEnvdVersionForSnapshot). */
const MIN_SNAPSHOT_ENVD = "0.5.0";
/** E2B's SandboxSnapshotRequest. */
const SnapshotBody = z.object({ name: z.string().optional() }).passthrough();

/** E2B's SandboxNotFoundMsg. */
function sandboxNotFound(id: string): string {
  return `Sandbox "${id}" doesn't exist or you don't have access to it`;
}

/** A snapshot's name, tag and the template it goes to (an existing one: a new build of it). */
interface SnapshotName {
  alias: string;
  tag?: string;
  existing?: SimSnapshot;
}

/** The name a create asks for, or the 400 message. */
function snapshotName(state: SimState, name: string): SnapshotName | string {
  const parsed = parseName(name);
  if (typeof parsed === "string") return `Invalid name: ${parsed}`;
  const foreign = foreignNamespace(parsed.identifier, state.snapshots.slug);
  if (foreign !== undefined) return foreign;
  const existing = state.snapshots.resolve(parsed.identifier);
  return {
    alias: aliasOf(parsed.identifier),
    ...(parsed.tag !== undefined && { tag: parsed.tag }),
    ...(existing && { existing }),
  };
}

/**
 * POST /sandboxes/{sandboxID}/snapshots: a snapshot of a running sandbox (it keeps running),
 * answered with E2B's SnapshotInfo; the name is `<slug>/<alias>` when one was asked for.
 */
const createSnapshot: ApiHandler = async (ctx, req, res, [rawId = ""]) => {
  const id = shortSandboxId(rawId);
  if (id === undefined) return sendError(res, 400, "Invalid sandbox ID");
  const body = await parseBody(req, SnapshotBody, true);
  if (isError(body)) return sendError(res, 400, `Error when parsing request: ${body.error}`);
  const store = ctx.state.snapshots;
  let named: SnapshotName | undefined;
  if (body.name !== undefined) {
    const n = snapshotName(ctx.state, body.name);
    if (typeof n === "string") return sendError(res, 400, n);
    named = n;
  }
  // A paused sandbox is in no orchestrator's store: E2B answers it as unknown.
  const s = ctx.state.sandbox(id);
  if (s?.state !== "running") return sendError(res, 404, sandboxNotFound(id));
  if (compareVersions(s.envdVersion, MIN_SNAPSHOT_ENVD) < 0)
    return sendError(
      res,
      400,
      `sandbox envd version must be at least ${MIN_SNAPSHOT_ENVD} to create snapshots, current version: ${s.envdVersion}`,
    );
  const snap = store.take(s, named ?? {});
  ctx.state.lifecycle("checkpointed", s);
  const tag = named?.tag ?? DEFAULT_TAG;
  const name = named && `${store.slug}/${named.alias}`;
  sendJson(res, 201, {
    snapshotID: `${name ?? snap.templateID}:${tag}`,
    names: name === undefined ? [] : [name],
  });
};

/** The snapshot templates GET /snapshots lists for `url`'s filters, or the refusal. */
function snapshotRows(ctx: SimContext, url: URL): CursorRow[] | RowsRefusal {
  const store = ctx.state.snapshots;
  const rawSandbox = url.searchParams.get("sandboxID");
  const sandboxID = rawSandbox === null ? undefined : shortSandboxId(rawSandbox);
  if (rawSandbox !== null && sandboxID === undefined)
    return { status: 400, message: "Invalid sandbox ID" };
  let only: SimSnapshot | undefined;
  let tag: string | undefined;
  const name = url.searchParams.get("name");
  if (name !== null) {
    const parsed = parseName(name);
    if (typeof parsed === "string") return { status: 400, message: `Invalid name: ${parsed}` };
    const foreign = foreignNamespace(parsed.identifier, store.slug);
    if (foreign !== undefined) return { status: 400, message: foreign };
    // "name:default" asks for the default tag; a bare name matches builds of any tag.
    tag = parsed.tag ?? (name.includes(":") ? DEFAULT_TAG : undefined);
    const found = resolveTemplate(ctx.state, parsed.identifier);
    if (found?.kind !== "snapshot") return [];
    only = found.snapshot;
  }
  const rows: CursorRow[] = [];
  for (const snap of only ? [only] : store.all()) {
    if (sandboxID !== undefined && snap.sandboxID !== sandboxID) continue;
    const build = store.latestBuild(snap, tag);
    if (!build) continue;
    rows.push({
      body: { snapshotID: `${snap.names[0] ?? snap.templateID}:${build.tag}`, names: snap.names },
      at: snap.createdAt,
      id: snap.templateID,
    });
  }
  return rows;
}

/** What keeps a template from being deleted: its running sandboxes first, then its paused ones. */
function sandboxesUsing(state: SimState, templateID: string): "running" | "paused" | undefined {
  let paused = false;
  for (const s of state.sandboxes.values()) {
    if (s.templateID !== templateID) continue;
    if (s.state === "running") return "running";
    if (s.state === "paused") paused = true;
  }
  return paused ? "paused" : undefined;
}

/**
 * DELETE /templates/{id} (the SDK's deleteSnapshot): the tag is ignored, a name or raw id
 * resolves; refused while a sandbox started from it runs or sits paused.
 */
const deleteTemplate: ApiHandler = (ctx, _req, res, [ref = ""]) => {
  const parsed = parseName(ref);
  if (typeof parsed === "string") return sendError(res, 400, `Invalid template ID: ${parsed}`);
  const found = resolveTemplate(ctx.state, parsed.identifier);
  if (!found) return sendError(res, 404, `template '${parsed.identifier}' not found`);
  const id = found.kind === "snapshot" ? found.snapshot.templateID : found.template.templateID;
  const using = sandboxesUsing(ctx.state, id);
  if (using !== undefined)
    return sendError(
      res,
      400,
      `cannot delete template '${id}' because there are ${using} sandboxes using it`,
    );
  if (found.kind === "snapshot") ctx.state.snapshots.delete(id);
  else if (!ctx.state.removeTemplate(found.template))
    return sendError(res, 400, `the simulator keeps its last template '${id}'`);
  res.writeHead(204).end();
};

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
  { method: "POST", template: "/sandboxes/{id}/snapshots", handler: createSnapshot },
  { method: "GET", template: "/snapshots", handler: cursorPaged(snapshotRows) },
  { method: "DELETE", template: "/templates/{id}", handler: deleteTemplate },
  { method: "GET", template: "/volumes", handler: listVolumes },
];
