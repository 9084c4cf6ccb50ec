// The landing page at "/": links to every endpoint, nothing else.

const BASE_LINKS: Array<[string, string]> = [
  ["/metrics", "Prometheus metrics (cached snapshot of the last poll)"],
  [
    "/status",
    "last cycle per collector, durations, errors, staleness; probe runs; the policy's plan (JSON)",
  ],
  ["/healthz", "liveness"],
  ["/readyz", "readiness: 200 once some collector's data is good, 503 before"],
];

/** What the optional routes do, as the page says it. */
const ROUTE_TEXT: Record<string, string> = {
  "/probe":
    "runs one probe of a module now and answers with its metrics (creates a sandbox; ?module=NAME, &debug=true for a trace)",
};

/** Routes that take deliveries (POST only): named, not linked, since a browser's GET gets a 405. */
const RECEIVER_PREFIX = "/webhooks/";

/**
 * Renders the HTML landing page, listing optional routes too; `links` gives the href of a route
 * whose bare path is no page (e.g. /probe with a module), so every link answers 200.
 */
export function indexPage(extraRoutes: string[], links: Record<string, string> = {}): string {
  const pages = extraRoutes.filter((r) => !r.startsWith(RECEIVER_PREFIX));
  const receivers = extraRoutes.filter((r) => r.startsWith(RECEIVER_PREFIX));
  const items = [
    ...BASE_LINKS.map(([href, text]) => [href, text] as const),
    ...pages.map((r) => [links[r] ?? r, ROUTE_TEXT[r] ?? ""] as const),
  ];
  const lines = [
    ...items.map(([href, text]) => {
      const h = escapeHtml(href);
      return `<li><a href="${h}">${h}</a> ${escapeHtml(text)}</li>`;
    }),
    ...receivers.map(
      (r) => `<li><code>POST ${escapeHtml(r)}</code> receives webhook deliveries</li>`,
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
