/** Base class of every error this program raises on purpose: a stable `code` plus operator context. */
export class ExporterError extends Error {
  readonly code: string;
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.name = new.target.name;
  }
}
