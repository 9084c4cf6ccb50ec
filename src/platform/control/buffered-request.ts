// One request of the control channel read whole into memory through undici's dispatch API: no
// response stream, no AbortController and no URL object per request. At 1,000 list pages a cycle
// those cost more than undici's own `request()` loop spends in all (docs/benchmark.md, #40).
import type { Dispatcher } from "undici";
import { timeoutError, timerMs } from "../../util/duration.js";
import { BodyTooLargeError } from "../http-errors.js";

/** What one request asks for. */
export interface BufferedRequest {
  /** `http://host:port`. */
  origin: string;
  /** Path and query, encoded. */
  path: string;
  method: "GET" | "POST" | "DELETE";
  headers: Record<string, string>;
  body?: string;
  /**
   * Bound on the whole exchange, from this call to the body's last byte: past it the request is
   * aborted and the promise rejects with a TimeoutError (as AbortSignal.timeout's). Also undici's
   * bound on waiting for the headers and on a pause between two body chunks.
   */
  timeoutMs: number;
  /** Bound on the body: past it the request is aborted with a BodyTooLargeError. */
  maxBodyBytes: number;
  /** The final (non-1xx) status line arrived: called once, before the body is read. */
  onHead?: (statusCode: number) => void;
}

/** A whole response. */
export interface BufferedResponse {
  statusCode: number;
  /** Lower-case names; a repeated header as an array (undici's parseHeaders). */
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

/** Sends `r` through `dispatcher` and reads the whole response. */
export function requestBuffered(
  dispatcher: Dispatcher,
  r: BufferedRequest,
): Promise<BufferedResponse> {
  return new Promise((resolve, reject) => {
    const handler = new BufferingHandler(r, resolve, reject);
    const bound = timerMs(r.timeoutMs);
    try {
      dispatcher.dispatch(
        {
          origin: r.origin,
          path: r.path,
          method: r.method,
          headers: r.headers,
          ...(r.body !== undefined ? { body: r.body } : {}),
          headersTimeout: bound,
          bodyTimeout: bound,
        },
        handler,
      );
    } catch (err) {
      // undici's own dispatchers report through the handler; another may throw (its timer goes too).
      handler.onResponseError(undefined, err as Error);
    }
  });
}

/** Collects one response; settles its promise once, on the end, an error or the time bound. */
class BufferingHandler implements Dispatcher.DispatchHandler {
  private controller: Dispatcher.DispatchController | undefined;
  private statusCode = 0;
  private headers: Record<string, string | string[] | undefined> = {};
  private readonly chunks: Buffer[] = [];
  private size = 0;
  /** Why the request ended early (the time bound, the body cap), once it has. */
  private reason: Error | undefined;
  private settled = false;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly r: BufferedRequest,
    private readonly resolve: (res: BufferedResponse) => void,
    private readonly reject: (err: Error) => void,
  ) {
    // Unref'd like AbortSignal.timeout's timer: a pending request alone never holds the process open.
    this.timer = setTimeout(() => this.timedOut(), timerMs(r.timeoutMs)).unref();
  }

  /** Called again when undici retries the request on a new connection: the latest one counts. */
  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.reason) controller.abort(this.reason);
  }

  onResponseStart(
    _controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: Record<string, string | string[] | undefined>,
  ): void {
    if (statusCode < 200) return; // 100 Continue and the like: the final answer follows
    this.statusCode = statusCode;
    this.headers = headers;
    this.r.onHead?.(statusCode);
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.settled) return;
    this.size += chunk.byteLength;
    if (this.size > this.r.maxBodyBytes) {
      this.end(new BodyTooLargeError(this.r.maxBodyBytes, this.size));
      controller.abort(this.reason as Error);
      return;
    }
    this.chunks.push(chunk);
  }

  onResponseEnd(): void {
    if (!this.settle()) return;
    const body = Buffer.concat(this.chunks, this.size);
    this.chunks.length = 0;
    this.resolve({ statusCode: this.statusCode, headers: this.headers, body });
  }

  onResponseError(_controller: Dispatcher.DispatchController | undefined, err: Error): void {
    this.end(err);
  }

  private timedOut(): void {
    this.end(timeoutError());
    // Before a connection took the request, it is aborted when one does (onRequestStart).
    this.controller?.abort(this.reason as Error);
  }

  /** Rejects with `err` unless already settled. */
  private end(err: Error): void {
    if (!this.settle()) return;
    this.reason = err;
    this.chunks.length = 0;
    this.reject(err);
  }

  /** Marks the request settled and disarms the timer; false when it already was. */
  private settle(): boolean {
    if (this.settled) return false;
    this.settled = true;
    clearTimeout(this.timer);
    return true;
  }
}
