// The landing page at "/": links to every endpoint, nothing else.

const BASE_LINKS: Array<[string, string]> = [
  ["/metrics", "Prometheus metrics (cached snapshot of the last poll)"],
  ["/status", "last cycle per collector, durations, errors, staleness (JSON)"],
  ["/healthz", "liveness"],
  ["/readyz", "readiness: a first poll cycle has completed"],
];

/** Routes that take deliveries (POST only): named, not linked, since a browser's GET gets a 405. */
const RECEIVER_PREFIX = "/webhooks/";

/** Renders the HTML landing page, listing optional routes too. */
export function indexPage(extraRoutes: string[]): string {
  const pages = extraRoutes.filter((r) => !r.startsWith(RECEIVER_PREFIX));
  const receivers = extraRoutes.filter((r) => r.startsWith(RECEIVER_PREFIX));
  const links = [
    ...[...BASE_LINKS, ...pages.map((r): [string, string] => [r, ""])].map(
      ([href, text]) => `<li><a href="${href}">${href}</a> ${text}</li>`,
    ),
    ...receivers.map((r) => `<li><code>POST ${r}</code> receives webhook deliveries</li>`),
  ].join("\n");
  return `<!doctype html>
<html><head><meta charset="utf-8"><title>sandbox-exporter</title></head>
<body><h1>sandbox-exporter</h1>
<ul>
${links}
</ul>
</body></html>
`;
}
