// GET /v2/sandboxes: one page of the sandbox list, its query in the platform's form and its items
// normalized on demand.

import {
  type DeferredPage,
  deferList,
  normalizeSandbox,
  normalizeSandboxIf,
} from "../normalize/normalize.js";
import type { Sandbox } from "../types.js";
import type { ControlCore } from "./control-core.js";
import type { SandboxQuery } from "./control-types.js";

/** What a list page may leave out (see ControlClient.listSandboxPage). */
export interface ListPageOptions {
  slim?: boolean;
  keep?: (id: string) => boolean;
}

/** The states E2B knows, asked for explicitly so the walk never depends on the default filter. */
const E2B_STATES = "running,paused";

/**
 * One page of /v2/sandboxes whose items are normalized on demand; `slim` leaves out the metadata
 * but the probe tag, and the unmapped fields; `keep`: only items whose id it accepts are kept.
 */
export async function listSandboxPage(
  core: ControlCore,
  q: SandboxQuery,
  opts: ListPageOptions,
): Promise<DeferredPage<Sandbox>> {
  const e = "/v2/sandboxes";
  const query = listQuery(core.o.flavor, q);
  const r = await core.send({ method: "GET", path: e, endpoint: e, query });
  const n = core.n;
  const slim = opts.slim === true;
  const keep = opts.keep;
  const d = core.decode(e, "GET", () =>
    deferList(n, r.body, r.headers, (raw, p) =>
      keep ? normalizeSandboxIf(n, raw, p, slim, keep) : normalizeSandbox(n, raw, p, slim),
    ),
  );
  return { ...d, items: () => core.decode(e, "GET", () => d.items()) };
}

/**
 * The list query in the platform's form. E2B: each key and value of the metadata filter
 * URL-encoded (`a%20b=c&d=e`, then encoded once more as the parameter), and every state listed
 * (it lists only running sandboxes when asked for none).
 */
function listQuery(flavor: "sandboxapi" | "e2b" | undefined, q: SandboxQuery): SandboxQuery {
  if (flavor !== "e2b") return q;
  const out: SandboxQuery = { ...q, state: q.state ?? E2B_STATES };
  if (q.metadata !== undefined) out.metadata = e2bMetadata(q.metadata);
  return out;
}

/** `k=v&k2=v2` with each key and value URL-encoded, as E2B's metadata filter expects. */
export function e2bMetadata(filter: string): string {
  return filter
    .split("&")
    .filter((part) => part !== "")
    .map((part) => {
      const at = part.indexOf("=");
      const [k, v] = at < 0 ? [part, ""] : [part.slice(0, at), part.slice(at + 1)];
      return `${encodeURIComponent(k.trim())}=${encodeURIComponent(v.trim())}`;
    })
    .join("&");
}
