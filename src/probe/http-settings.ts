// The settings of the http and autoresume steps (the probe section's `http`, and a module's, laid
// over it field by field). Names follow blackbox_exporter's http prober.
import { z } from "zod";
import { bool, int, oneOf, text } from "../config/fields.js";

const HTTP_METHODS = ["GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH"] as const;
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** Headers the proxy routes or authenticates on: the probe sets them itself. */
const RESERVED_HEADERS = new Set([
  "host",
  "e2b-sandbox-id",
  "e2b-sandbox-port",
  "e2b-traffic-access-token",
  "content-length",
]);

/** A regular expression the answer's body must match (blackbox's fail_if_body_not_matches_regexp). */
const regexp = text.refine(
  (src) => {
    try {
      new RegExp(src);
      return true;
    } catch {
      return false;
    }
  },
  { error: "a valid regular expression" },
);

/**
 * The http and autoresume steps: a service the probe starts in the sandbox and requests through
 * the platform's proxy at {port}-{id}.{domain}{path}. Names follow blackbox_exporter's http prober.
 * The fields without defaults: a module's section gives only what it changes.
 */
const httpFields = {
  /** Sandbox port the service listens on (not the agent's). */
  port: int(1, 65_535),
  /** Path requested; the nonce file is written at `directory` + this path. */
  path: text.regex(/^\/[^\s]*$/, { error: "a path starting with /" }),
  method: oneOf(HTTP_METHODS),
  /**
   * Started in the background through the agent's Start call; `{port}` and `{dir}` are filled in.
   * The default serves `directory` with the base template's Python.
   */
  command: text.min(1, { error: "a command" }),
  /** Directory the service serves; the nonce file is written below it. */
  directory: text.regex(/^\/\S*$/, { error: "an absolute directory" }),
  /** Accepted statuses; empty: any 2xx (blackbox's default). */
  validStatusCodes: z.array(int(100, 599), { error: "a list of HTTP status codes" }),
  /** Each must match the body, besides the nonce, which always must be in it. */
  failIfBodyNotMatchesRegexp: z.array(regexp, { error: "a list of regular expressions" }),
  headers: z
    .record(text, text, { error: "a mapping of header name to value" })
    .superRefine((m, ctx) => {
      for (const name of Object.keys(m))
        if (!HEADER_NAME.test(name) || RESERVED_HEADERS.has(name.toLowerCase()))
          ctx.addIssue({
            code: "custom",
            path: [name],
            message: `a header name other than ${[...RESERVED_HEADERS].join(", ")}`,
            input: name,
          });
    }),
  /**
   * false: the sandbox is created with network.allowPublicTraffic false; the probe sends the
   * traffic token and checks that a request without it is refused.
   */
  allowPublicTraffic: bool,
};

/** The top-level `http` section, where its defaults live. */
export const HttpSchema = z.strictObject({
  port: httpFields.port.default(8000),
  path: httpFields.path.default("/sandbox-exporter-probe.txt"),
  method: httpFields.method.default("GET"),
  command: httpFields.command.default("python3 -m http.server {port} --directory {dir}"),
  directory: httpFields.directory.default("/tmp/sandbox-exporter-http"),
  validStatusCodes: httpFields.validStatusCodes.default([]),
  failIfBodyNotMatchesRegexp: httpFields.failIfBodyNotMatchesRegexp.default([]),
  headers: httpFields.headers.default({}),
  allowPublicTraffic: httpFields.allowPublicTraffic.default(true),
});

/** A module's `http` section: each field it gives replaces the top-level one (headers by name). */
export const ModuleHttpSchema = z.strictObject(httpFields).partial();

/** Settings of the http and autoresume steps, filled in. */
export type ProbeHttpConfig = z.output<typeof HttpSchema>;

/** `over`'s headers and those of `base` it does not name (header names ignore case). */
export function mergeHeaders(
  base: Readonly<Record<string, string>>,
  over: Readonly<Record<string, string>>,
): Record<string, string> {
  const named = new Set(Object.keys(over).map((k) => k.toLowerCase()));
  const kept = Object.entries(base).filter(([k]) => !named.has(k.toLowerCase()));
  return { ...Object.fromEntries(kept), ...over };
}
