// Resuming a paused sandbox: POST /sandboxes/{id}/resume, or E2B's connect by whichever of its two
// routes the platform serves; the answer's agent token joins the secrets.

import { PlatformHttpError, PlatformNotFoundError } from "../http-errors.js";
import { normalizeSandbox } from "../normalize/normalize.js";
import { type ControlCore, enc } from "./control-core.js";
import type { ResumedSandbox } from "./control-types.js";
import { agentOf } from "./create-sandbox.js";

/** E2B's two connect routes: v2 (what its SDK calls) and v1 (deprecated, in the OpenAPI document). */
const CONNECT_V1 = "/sandboxes/{id}/connect";
const CONNECT_V2 = "/v2/sandboxes/{id}/connect";
type ConnectRoute = typeof CONNECT_V1 | typeof CONNECT_V2;

/** Time to live asked of E2B's connect when the caller gives none, seconds (E2B requires one). */
const CONNECT_TIMEOUT_S = 300;

/** The resume of one client, which remembers the connect route the platform answered. */
export class SandboxResumer {
  /** The connect route the platform answered, once one did (E2B serves v1, v2 or both). */
  private connectRoute: ConnectRoute | undefined;

  constructor(private readonly core: ControlCore) {}

  /**
   * POST /sandboxes/{id}/resume with `body`: one attempt; the restored sandbox, with the agent
   * token and version the answer carries (E2B's connect hands out the current token).
   */
  async resume(id: string, body: object): Promise<ResumedSandbox> {
    if (this.core.o.flavor === "e2b") return this.connect(id, body);
    const e = "/sandboxes/{id}/resume";
    const r = await this.core.send({
      method: "POST",
      path: `/sandboxes/${enc(id)}/resume`,
      endpoint: e,
      body,
    });
    return this.resumed(e, r.body);
  }

  /**
   * E2B's connect: resumes a paused sandbox, a no-op on a running one. Until a route has answered,
   * v1 (in E2B's OpenAPI document, deprecated) is tried first and v2 (what E2B's SDK calls) when
   * v1 answers 404, 405 or 410; the route that answers is kept for this client, and tried first
   * from then on. v1 requires the time to live (seconds); v2 takes the same body.
   */
  private async connect(id: string, body: object): Promise<ResumedSandbox> {
    const payload = { timeout: CONNECT_TIMEOUT_S, ...body };
    const known = this.connectRoute;
    const first = known ?? CONNECT_V1;
    try {
      // Before a route is known, a 404 may mean only that the route is missing: not counted yet.
      return await this.connectBy(first, id, payload, known === undefined);
    } catch (err) {
      // A route that answered before reports a missing sandbox with 404: that is the answer.
      if (known ? !routeGone(err) : !(err instanceof PlatformNotFoundError || routeGone(err)))
        throw err;
      this.connectRoute = undefined;
      try {
        return await this.connectBy(first === CONNECT_V1 ? CONNECT_V2 : CONNECT_V1, id, payload);
      } catch (other) {
        // The second route is not there either: the first one's 404 was about the sandbox.
        throw routeGone(other) && err instanceof PlatformNotFoundError ? err : other;
      }
    }
  }

  /** One connect by `route`; the route is remembered once it answers. */
  private async connectBy(
    route: ConnectRoute,
    id: string,
    body: object,
    trial = false,
  ): Promise<ResumedSandbox> {
    const r = await this.core.send({
      method: "POST",
      path: route.replace("{id}", enc(id)),
      endpoint: route,
      body,
      ...(trial ? { notFoundExpected: true } : {}),
    });
    this.connectRoute = route;
    return this.resumed(route, r.body);
  }

  /** A resume or connect answer: the sandbox, and its agent token (a secret) and version. */
  private resumed(endpoint: string, raw: unknown): ResumedSandbox {
    const agent = agentOf(raw);
    if (agent.accessToken) this.core.transport.secrets.addTransient(agent.accessToken);
    return this.core.decode(endpoint, "POST", () => ({
      ...normalizeSandbox(this.core.n, raw),
      ...agent,
    }));
  }
}

/** A 405 or 410: the platform has no such route (any more); a 404 may also be a missing sandbox. */
function routeGone(err: unknown): boolean {
  return err instanceof PlatformHttpError && (err.status === 405 || err.status === 410);
}
