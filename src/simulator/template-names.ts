// E2B's template references (infra packages/shared/pkg/id/id.go and api/internal/utils/split.go):
// "namespace/alias:tag", "alias:tag" or a raw id, parsed and checked as E2B's API parses them.

/** The tag a reference without one means. */
export const DEFAULT_TAG = "default";
const IDENTIFIER = /^[a-z0-9-_]+$/;
const TAG = /^[a-z0-9-_.]+$/;
const SANDBOX_ID = /^[a-z0-9]+$/;

/** A parsed reference: the identifier (namespace/alias or alias) and a tag other than the default. */
export interface TemplateName {
  identifier: string;
  /** Absent for no tag and for an explicit `:default` (E2B normalizes it away). */
  tag?: string;
}

/** E2B's cleanAndValidate: lower-cased and trimmed, or the error text naming the part. */
function clean(value: string, part: string, re: RegExp): string | { error: string } {
  const cleaned = value.trim().toLowerCase();
  return re.test(cleaned) ? cleaned : { error: `invalid ${part}: ${value}` };
}

/** E2B's id.ParseName; a string is the error text E2B's handlers put after their own prefix. */
export function parseName(input: string): TemplateName | string {
  const text = input.trim();
  const colon = text.indexOf(":");
  const ref = colon < 0 ? text : text.slice(0, colon);
  let tag: string | undefined;
  if (colon >= 0) {
    const t = clean(text.slice(colon + 1), "tag", TAG);
    if (typeof t !== "string") return t.error;
    if (t !== DEFAULT_TAG) tag = t;
  }
  const slash = ref.indexOf("/");
  let namespace: string | undefined;
  if (slash >= 0) {
    const ns = clean(ref.slice(0, slash), "namespace", IDENTIFIER);
    if (typeof ns !== "string") return ns.error;
    namespace = ns;
  }
  const alias = clean(slash < 0 ? ref : ref.slice(slash + 1), "template ID", IDENTIFIER);
  if (typeof alias !== "string") return alias.error;
  const identifier = namespace === undefined ? alias : `${namespace}/${alias}`;
  return tag === undefined ? { identifier } : { identifier, tag };
}

/** The namespace of "namespace/alias", or undefined for a bare alias. */
export function namespaceOf(identifier: string): string | undefined {
  const slash = identifier.indexOf("/");
  return slash < 0 ? undefined : identifier.slice(0, slash);
}

/** The alias of "namespace/alias" (E2B's ExtractAlias). */
export function aliasOf(identifier: string): string {
  return identifier.slice(identifier.indexOf("/") + 1);
}

/** E2B's ValidateNamespaceMatchesTeam: the error text, or undefined when the namespace is the team's. */
export function foreignNamespace(identifier: string, slug: string): string | undefined {
  const ns = namespaceOf(identifier);
  return ns === undefined || ns === slug
    ? undefined
    : `namespace '${ns}' must match your team '${slug}'`;
}

/** E2B's utils.ShortID: the sandbox id without its client suffix, or undefined when invalid. */
export function shortSandboxId(compositeId: string): string | undefined {
  const parts = compositeId.split("-");
  if (parts.length > 2) return undefined;
  const id = parts[0] ?? "";
  return SANDBOX_ID.test(id) ? id : undefined;
}
