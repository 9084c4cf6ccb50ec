// The record of one HTTP route. The type lives here, below every layer, so a feature (the probe,
// the E2B webhook) can declare its routes without importing the server that mounts them.
import type { IncomingMessage, ServerResponse } from "node:http";

/** Methods a route may declare. */
export type HttpMethod = "GET" | "HEAD" | "POST" | "PUT";

/** open: no credentials ever; authenticated: the listener's auth; exemptable: authenticated unless `exempt`. */
export type RouteAuth = "open" | "authenticated" | "exemptable";

/** Why the server answered a request to a route without running its handler. */
export type RouteRefusal = "unauthorized" | "method";

/** Answers one request; the URL is parsed once by the server. */
export type RouteHandler = (req: IncomingMessage, url: URL, res: ServerResponse) => Promise<void>;

/** One HTTP route: everything the server, its auth, its start-up warning and the landing page know of it. */
export interface Route {
  /** The method(s) served; any other is answered 405 with Allow listing these. */
  method: HttpMethod | readonly HttpMethod[];
  /** Exact path, e.g. "/probe". */
  path: string;
  auth: RouteAuth;
  /** For "exemptable" routes: the setting that opens it (webhooks.e2bAuthExempt). */
  exempt?: boolean;
  /** Requests make the exporter act on the platform (a probe creates a sandbox). */
  acting: boolean;
  /** One line, shown on the landing page. */
  description: string;
  /** The path with the parameter it needs ("/probe?module=quick"): shown and linked instead of the bare path. */
  example?: string;
  /** Not on the landing page. */
  hidden?: boolean;
  handler: RouteHandler;
  /** Told of each request refused before the handler ran: the listener's auth (401) or the method (405). */
  refused?(why: RouteRefusal): void;
}

/** The methods `route` answers, in the order declared. */
export function methodsOf(route: Route): readonly HttpMethod[] {
  return typeof route.method === "string" ? [route.method] : route.method;
}

/** True when requests reach the route without the listener's credentials. */
export function isOpen(route: Route): boolean {
  return route.auth === "open" || (route.auth === "exemptable" && route.exempt === true);
}
