// What every call of one control client goes through: the shared transport as one caller, the
// client's own normalizer, and the decoding of a body (a wrong shape becomes a typed error).

import { PlatformBodyError } from "../http-errors.js";
import { NormalizeError, Normalizer, normalizeList } from "../normalize/normalize.js";
import type { Page } from "../types.js";
import type { ControlClientOptions } from "./control-types.js";
import type { Caller } from "./limiter.js";
import type { Call, ControlTransport, Reply } from "./transport.js";

/** One client's view of the channel; the endpoint groups (sandbox-calls.ts, ...) call through it. */
export class ControlCore {
  /** Its tables remember the records this client read: one per client (withOwnNormalizer). */
  readonly n: Normalizer;

  constructor(
    readonly o: ControlClientOptions,
    readonly transport: ControlTransport,
    /** Whose request budget its calls take from the shared limiter. */
    readonly caller: Caller,
  ) {
    this.n = new Normalizer(o.fieldMap);
  }

  /** One call on the shared transport, from this client's budget. */
  send(call: Call): Promise<Reply> {
    return this.transport.send(call, this.caller);
  }

  /** A list answer, whatever its wrapper, each item normalized by `item`. */
  page<T>(r: Reply, endpoint: string, item: (raw: unknown, path: string) => T): Page<T> {
    return this.decode(endpoint, "GET", () => normalizeList(this.n, r.body, r.headers, item));
  }

  /**
   * Runs a normalizer; a body of the wrong shape becomes PlatformBodyError naming the endpoint,
   * with secrets scrubbed from the received text before it was cut to an excerpt.
   */
  decode<T>(endpoint: string, method: string, fn: () => T): T {
    try {
      return fn();
    } catch (err) {
      const secrets = this.transport.secrets;
      const detail =
        err instanceof NormalizeError
          ? err.redacted(secrets).message
          : err instanceof Error
            ? err.message
            : String(err);
      this.transport.badBody(endpoint, method);
      throw this.transport.scrubbed(new PlatformBodyError(endpoint, method, detail));
    }
  }
}

/** An id as one path segment. */
export function enc(id: string): string {
  return encodeURIComponent(id);
}
