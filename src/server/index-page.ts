// The landing page at "/", generated from the route table: each route with its description.
import { methodsOf, type Route } from "../util/route.js";

/**
 * Renders the HTML landing page from `routes` (hidden ones left out). A route that answers GET is
 * linked, at its example when it needs a parameter, so every link answers 200; the others (POST
 * deliveries, the lifecycle API) are named with their methods, not linked: a browser's GET gets 405.
 */
export function indexPage(routes: readonly Route[]): string {
  const shown = routes.filter((r) => r.hidden !== true);
  const linked = shown.filter((r) => methodsOf(r).includes("GET"));
  const named = shown.filter((r) => !methodsOf(r).includes("GET"));
  const lines = [
    ...linked.map((r) => {
      const h = escapeHtml(r.example ?? r.path);
      return `<li><a href="${h}">${h}</a> ${escapeHtml(r.description)}</li>`;
    }),
    ...named.map(
      (r) =>
        `<li><code>${escapeHtml(`${methodsOf(r).join(", ")} ${r.path}`)}</code> ${escapeHtml(r.description)}</li>`,
    ),
  ].join("\n");
  return `<!doctype html>
<html><head><meta charset="utf-8"><title>sandbox-exporter</title></head>
<body><h1>sandbox-exporter</h1>
<ul>
${lines}
</ul>
</body></html>
`;
}

function escapeHtml(text: string): string {
  return text
    .replaceAll("&", "&amp;")
    .replaceAll("<", "&lt;")
    .replaceAll(">", "&gt;")
    .replaceAll('"', "&quot;");
}
