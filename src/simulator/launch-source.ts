// What a create names and what it starts from: an ordinary template or, in E2B mode, a snapshot
// template, resolved as E2B's API resolves a template reference (sandbox_create.go: ParseName,
// then the alias cache, then the build under the tag).
import type { SimContext } from "./context.js";
import type { SandboxInit, SimTemplate } from "./model.js";
import type { SimSnapshot } from "./snapshot-store.js";
import type { SimState } from "./state.js";
import { aliasOf, DEFAULT_TAG, parseName } from "./template-names.js";

/** A template a reference resolved to. */
export type ResolvedTemplate =
  | { kind: "snapshot"; snapshot: SimSnapshot }
  | { kind: "template"; template: SimTemplate };

/**
 * E2B's alias resolution (AliasCache.Resolve) over both kinds: `<ns>/<alias>` by that name only;
 * a bare identifier by the team's `<slug>/<identifier>`, then by an unnamespaced alias (the
 * simulator's ordinary templates have no namespace), then as a raw id.
 */
export function resolveTemplate(state: SimState, identifier: string): ResolvedTemplate | undefined {
  const store = state.snapshots;
  const named = store.resolve(
    identifier.includes("/") ? identifier : `${store.slug}/${identifier}`,
  );
  if (named) return { kind: "snapshot", snapshot: named };
  if (identifier.includes("/")) return undefined;
  const template = state.template(identifier);
  if (template) return { kind: "template", template };
  const raw = store.get(identifier);
  return raw && { kind: "snapshot", snapshot: raw };
}

/** What a create starts a sandbox from. */
export interface LaunchSource {
  /** The sandbox's templateID: the template's id, or the snapshot template's raw id. */
  templateID: string;
  status: string;
  envdVersion: string;
  /** What the sandbox takes from a snapshot (the state fills an ordinary template's itself). */
  init: SandboxInit;
  /** Counts one sandbox started from it. */
  spawned(): void;
}

function fromTemplate(t: SimTemplate): LaunchSource {
  return {
    templateID: t.templateID,
    status: t.status,
    envdVersion: t.envdVersion,
    init: {},
    spawned: () => {
      t.spawnCount++;
    },
  };
}

/**
 * The source `ref` names, or the refusal [status, message]. This platform's API takes a template
 * id or alias as it is; E2B's parses `namespace/alias:tag` and finds snapshot templates too.
 */
export function launchSource(ctx: SimContext, ref: string): LaunchSource | [number, string] {
  if (ctx.flavor !== "e2b") {
    const t = ctx.state.template(ref);
    return t ? fromTemplate(t) : [404, `template '${ref}' not found`];
  }
  const parsed = parseName(ref);
  if (typeof parsed === "string") return [400, `Invalid template reference: ${parsed}`];
  const { identifier, tag } = parsed;
  const found = resolveTemplate(ctx.state, identifier);
  if (!found) return [404, `template '${identifier}' not found`];
  const noTag: [number, string] = [
    404,
    `tag '${tag ?? DEFAULT_TAG}' does not exist for template '${identifier}'`,
  ];
  // An ordinary template of the simulator has one build, under the default tag.
  if (found.kind === "template") return tag === undefined ? fromTemplate(found.template) : noTag;
  const store = ctx.state.snapshots;
  const snap = found.snapshot;
  if (!store.latestBuild(snap, tag ?? DEFAULT_TAG)) return noTag;
  return {
    templateID: snap.templateID,
    status: "ready",
    envdVersion: snap.envdVersion,
    init: {
      // E2B's sandbox alias is the template's first alias (firstAlias(env.Aliases)).
      ...(snap.names[0] !== undefined && { alias: aliasOf(snap.names[0]) }),
      cpuCount: snap.cpuCount,
      memoryMB: snap.memoryMB,
      diskSizeMB: snap.diskSizeMB,
      envdVersion: snap.envdVersion,
    },
    spawned: () => store.spawned(snap),
  };
}
