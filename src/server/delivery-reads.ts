// The webhook deliveries being read and the bound on them as a whole: how many at once and the
// body bytes they hold. Anyone who reaches the route can post to it, so at either bound the
// delivery read longest gives its place to the new one: senders that hold a body back cannot keep
// E2B's prompt deliveries (they end in milliseconds) out.
import type { IncomingMessage } from "node:http";
import { deadline } from "../util/duration.js";
import type { InflightBudget, InflightTicket } from "../util/inflight-budget.js";

/** The bound a delivery was refused at: too many deliveries in flight, or too many bytes. */
export type Bound = "deliveries" | "bytes";

/** What one delivery's body may be. */
export interface BodyLimits {
  /** Largest delivery body read; past it "too_large". */
  maxBodyBytes: number;
  /** Longest a delivery's body may take to arrive: a sender trickling bytes is cut off. */
  bodyTimeoutMs: number;
}

/** A read body, or why there is none. */
export type BodyRead = Buffer | "too_large" | "timeout" | "aborted" | Bound;

/** A delivery being read; `evict` ends its read as refused at `bound` and gives its budget back. */
interface Reading {
  evict(bound: Bound): void;
}

/** The deliveries in flight against one budget, oldest first. */
export class DeliveryReads {
  // A Set keeps insertion order: the first is the delivery read longest.
  readonly #reading = new Set<Reading>();

  constructor(readonly budget: InflightBudget) {}

  /** A place for one more delivery, the one read longest evicted to make it; undefined when none. */
  enter(): InflightTicket | undefined {
    const ticket = this.budget.enter();
    if (ticket) return ticket;
    this.#reading.values().next().value?.evict("deliveries");
    return this.budget.enter();
  }

  /**
   * The whole body, or "too_large" as soon as it is longer than `maxBodyBytes` (a declared
   * Content-Length is believed first; reading stops there), "timeout" when it has not all arrived
   * within `bodyTimeoutMs`, "aborted" when the connection broke first, or the bound it was refused
   * at: evicted by a newer delivery, or its own bytes not fitting once every older one is gone.
   * Bytes are counted against the ticket as they arrive, making room by evicting the oldest
   * delivery; a declared length takes nothing, so an idle sender holds a place but no bytes.
   * Whatever it refuses, it keeps no chunk.
   */
  read(req: IncomingMessage, limits: BodyLimits, ticket: InflightTicket): Promise<BodyRead> {
    const reading = this.#reading;
    const max = limits.maxBodyBytes;
    const declared = Number(req.headers["content-length"]);
    const known = req.headers["content-length"] !== undefined && Number.isFinite(declared);
    if (known && declared > max) return Promise.resolve("too_large");
    return new Promise((resolve) => {
      let chunks: Buffer[] = [];
      let size = 0;
      const limit = deadline(limits.bodyTimeoutMs);
      const self: Reading = {
        evict: (bound) => {
          stop(bound);
          ticket.release();
        },
      };
      reading.add(self);
      const stop = (outcome: "too_large" | "timeout" | Bound): void => {
        done();
        chunks = [];
        req.pause();
        resolve(outcome);
      };
      const onTimeout = (): void => stop("timeout");
      limit.signal.addEventListener("abort", onTimeout, { once: true });
      const done = (): void => {
        reading.delete(self);
        limit.clear();
        limit.signal.removeEventListener("abort", onTimeout);
        req.off("data", onData);
        req.off("end", onEnd);
        req.off("error", onError);
        req.off("close", onClose);
      };
      const onData = (chunk: Buffer): void => {
        size += chunk.byteLength;
        if (size > max) {
          stop("too_large");
          return;
        }
        // No room: the oldest delivery goes, this one when it is the oldest.
        while (!ticket.take(chunk.byteLength)) {
          const oldest = reading.values().next().value;
          if (oldest === undefined || oldest === self) {
            stop("bytes");
            return;
          }
          oldest.evict("bytes");
        }
        chunks.push(chunk);
      };
      const onEnd = (): void => {
        done();
        resolve(Buffer.concat(chunks, size));
      };
      const onError = (): void => {
        done();
        chunks = [];
        resolve("aborted");
      };
      // A connection closed before the end: the same as an error.
      const onClose = (): void => {
        if (!req.complete) onError();
      };
      req.on("data", onData);
      req.on("end", onEnd);
      req.on("error", onError);
      req.on("close", onClose);
    });
  }
}
