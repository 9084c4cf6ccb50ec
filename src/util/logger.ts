// The one pino logger factory; redaction is declared once here.
import { type DestinationStream, type Logger, pino } from "pino";
import pretty from "pino-pretty";

/** Paths never written to a log line, wherever a caller puts them. */
export const REDACT_PATHS = [
  "apiKey",
  "*.apiKey",
  "*.*.apiKey",
  "accessToken",
  "*.accessToken",
  "password",
  "*.password",
  "bearerToken",
  "*.bearerToken",
  "headers.authorization",
  'headers["x-api-key"]',
  'headers["x-access-token"]',
];

/** Builds the process logger: JSON by default, human-readable with format "pretty". */
export function createLogger(
  level: string,
  format: "json" | "pretty",
  destination?: DestinationStream,
): Logger {
  const options = {
    level,
    redact: { paths: REDACT_PATHS, censor: "***" },
    base: { name: "sandbox-exporter" },
  };
  if (format === "pretty") {
    return pino(options, pretty({ colorize: false, destination: destination ?? 1, sync: true }));
  }
  return destination ? pino(options, destination) : pino(options);
}
