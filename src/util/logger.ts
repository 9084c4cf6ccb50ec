// The one pino logger factory; redaction is declared once here.
import { type DestinationStream, type Logger, type LoggerOptions, pino } from "pino";
import pretty from "pino-pretty";
import { SECRET_FIELD_NAMES, type Secrets } from "./secrets.js";

/**
 * Paths never written to a log line, wherever a caller puts them (up to two levels down): every
 * secret field name the secrets rule knows, e.g. `apiKey`, `*.password`, `*.*["x-api-key"]`.
 */
export const REDACT_PATHS: readonly string[] = SECRET_FIELD_NAMES.flatMap((name) => {
  const key = /^[A-Za-z_$][\w$]*$/.test(name) ? name : `[${JSON.stringify(name)}]`;
  const step = key.startsWith("[") ? "" : ".";
  return [key, `*${step}${key}`, `*.*${step}${key}`];
});

/**
 * Builds the process logger: JSON by default, human-readable with format "pretty". With `secrets`,
 * every message and field is scrubbed of them as the last line of defence (errors are scrubbed
 * where they are made; this catches what a new log call might carry).
 */
export function createLogger(
  level: string,
  format: "json" | "pretty",
  destination?: DestinationStream,
  secrets?: Secrets,
): Logger {
  const options: LoggerOptions = {
    level,
    redact: { paths: [...REDACT_PATHS], censor: "***" },
    base: { name: "sandbox-exporter" },
    ...(secrets ? scrubbing(secrets) : {}),
  };
  if (format === "pretty") {
    return pino(options, pretty({ colorize: false, destination: destination ?? 1, sync: true }));
  }
  return destination ? pino(options, destination) : pino(options);
}

/** pino options that scrub secrets from the message and from every field of a log line. */
function scrubbing(secrets: Secrets): Pick<LoggerOptions, "hooks" | "formatters"> {
  return {
    hooks: {
      logMethod(args, method) {
        // An error goes to pino's `err` serializer (message, stack, code), past the formatter's
        // scrub of the JSON fields: scrubbed here, in place, before it is serialised.
        const first = args[0] as { err?: unknown } | undefined;
        if (first && typeof first === "object" && first.err instanceof Error)
          secrets.scrubError(first.err);
        const clean = args.map((a) => (typeof a === "string" ? secrets.scrub(a) : a));
        method.apply(this, clean as Parameters<typeof method>);
      },
    },
    formatters: {
      log(obj) {
        // Log lines are few and small: one serialisation to scrub nested fields is cheap.
        let text: string;
        try {
          text = JSON.stringify(obj);
        } catch {
          return obj; // circular or BigInt: pino's own serialiser copes, errors were scrubbed at the source
        }
        const clean = secrets.scrub(text);
        return clean === text ? obj : (JSON.parse(clean) as Record<string, unknown>);
      },
    },
  };
}
