/** Base class of every error this program raises on purpose: a stable `code` plus operator context. */
export class ExporterError extends Error {
  readonly code: string;
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.name = new.target.name;
  }
}

/** The code given to anything thrown without a string `code` of its own. */
export const UNKNOWN_ERROR_CODE = "ERR_UNKNOWN";

/**
 * The one way to say an error in text: its stable code and the first line of its message, trimmed
 * (what /status, metrics and config problems show). Works on anything thrown, not only errors.
 */
export function errorSummary(err: unknown): { code: string; message: string } {
  const code = err instanceof Error ? (err as { code?: unknown }).code : undefined;
  return {
    code: typeof code === "string" ? code : UNKNOWN_ERROR_CODE,
    message: (errorMessage(err).split("\n")[0] ?? "").trim(),
  };
}

/** The first line of an error's message: `errorSummary(err).message`. */
export function errorLine(err: unknown): string {
  return errorSummary(err).message;
}

/**
 * The whole message of anything thrown; with `maxChars`, cut there and marked with "..." (for
 * texts kept in memory, such as the probe's failure log).
 */
export function errorMessage(err: unknown, maxChars?: number): string {
  const text = err instanceof Error ? err.message : String(err);
  return maxChars !== undefined && text.length > maxChars ? `${text.slice(0, maxChars)}...` : text;
}
