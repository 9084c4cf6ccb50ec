// Route templates ("/sandboxes/{id}/pause") matched segment by segment; the template is the counter key.

/** A route: method, path template relative to the API prefix, and its handler. */
export interface RouteDef<H> {
  method: string;
  template: string;
  handler: H;
  /** Also served without the /sandboxapi/v1 prefix (the client's control-channel calls). */
  root?: boolean;
}

/** The outcome of matching one request. */
export interface RouteMatch<H> {
  /** Counter key: "METHOD /template" when a template matched, else "METHOD /raw/path". */
  key: string;
  route?: RouteDef<H>;
  /** Values of the {placeholders}, in order. */
  params: string[];
  /** True when a template matched the path but not the method (answer 405). */
  wrongMethod: boolean;
}

/** Matches `path` (prefix already stripped) against `routes`. */
export function matchRoute<H>(
  routes: readonly RouteDef<H>[],
  method: string,
  path: string,
  atRoot = false,
): RouteMatch<H> {
  const segments = path.split("/").slice(1);
  let pathOnly: RouteDef<H> | undefined;
  for (const route of routes) {
    if (atRoot && !route.root) continue;
    const params = matchSegments(route.template, segments);
    if (!params) continue;
    if (route.method === method) {
      return { key: `${method} ${route.template}`, route, params, wrongMethod: false };
    }
    pathOnly ??= route;
  }
  if (pathOnly) return { key: `${method} ${pathOnly.template}`, params: [], wrongMethod: true };
  return { key: `${method} ${path}`, params: [], wrongMethod: false };
}

function matchSegments(template: string, segments: readonly string[]): string[] | undefined {
  const parts = template.split("/").slice(1);
  if (parts.length !== segments.length) return undefined;
  const params: string[] = [];
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i] as string;
    const seg = segments[i] as string;
    if (part.startsWith("{")) {
      if (seg === "") return undefined;
      params.push(decodeURIComponent(seg));
    } else if (part !== seg) {
      return undefined;
    }
  }
  return params;
}
