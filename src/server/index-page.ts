// The landing page at "/": links to every endpoint, nothing else.

const BASE_LINKS: Array<[string, string]> = [
  ["/metrics", "Prometheus metrics (cached snapshot of the last poll)"],
  ["/status", "last cycle per collector, durations, errors, staleness (JSON)"],
  ["/healthz", "liveness"],
  ["/readyz", "readiness: a first poll cycle has completed"],
];

/** Renders the HTML landing page, listing optional routes too. */
export function indexPage(extraRoutes: string[]): string {
  const links = [...BASE_LINKS, ...extraRoutes.map((r): [string, string] => [r, ""])]
    .map(([href, text]) => `<li><a href="${href}">${href}</a> ${text}</li>`)
    .join("\n");
  return `<!doctype html>
<html><head><meta charset="utf-8"><title>sandbox-exporter</title></head>
<body><h1>sandbox-exporter</h1>
<ul>
${links}
</ul>
</body></html>
`;
}
