// What the control client is asked and what it answers: the queries of its reads and the records
// of its sandbox calls, shared by the client and the files of its endpoint groups.

import type { CreateRejectReason } from "../normalize/team-metrics.js";
import type { Sandbox } from "../types.js";
import type { ControlOptions } from "./transport.js";

/** Query of the sandbox list; `metadata` and `state` go to the platform verbatim (URL-encoded). */
export type SandboxQuery = {
  state?: string;
  metadata?: string;
  nextToken?: string;
  limit?: number;
};

/** ControlOptions, and what the client reports of the answers it gets. */
export interface ControlClientOptions extends ControlOptions {
  /**
   * A create was refused with 429: why (from its text) and the concurrency limit it names, or what
   * it named in the limit's place that is out of range (not learned).
   */
  onCreateRejected?: (reason: CreateRejectReason, limit?: number, ignoredLimit?: string) => void;
}

/** Query of the lifecycle events (E2B: limit 1-100, newest first unless orderAsc). */
export type SandboxEventQuery = {
  offset?: number;
  limit?: number;
  orderAsc?: boolean;
  /** Full type names (`sandbox.lifecycle.killed`), sent as repeated `types`. */
  types?: readonly string[];
  /** One sandbox's events (GET /events/sandboxes/{sandboxID}). */
  sandboxId?: string;
};

/** Query of a sandbox's logs. */
export type LogQuery = { cursor?: string; limit?: number; direction?: string };

/** A getJsonReply answer: the parsed JSON body, unvalidated, and the headers (lower-case names). */
export interface JsonReply<T = unknown> {
  body: T;
  headers: Readonly<Record<string, string | string[] | undefined>>;
}

/** What createSandbox asks for. */
export interface CreateRequest {
  templateId: string;
  timeoutS?: number;
  metadata?: Record<string, string>;
  secure?: boolean;
  autoPause?: boolean;
  autoPauseTimeoutS?: number;
  /** E2B's `autoResume: {enabled: true}` (sent with autoPause, as its SDK requires). */
  autoResume?: boolean;
  /** false: E2B's `network.allowPublicTraffic: false`, the proxy then wants the traffic token. */
  allowPublicTraffic?: boolean;
}

/** What POST /sandboxes returns. */
export interface CreatedSandbox {
  id: string;
  templateId: string;
  domain?: string;
  /** Token of the in-sandbox agent (E2B `envdAccessToken`), when the platform issues one. */
  accessToken?: string;
  /** Version of the in-sandbox agent (E2B `envdVersion`), when the answer says. */
  envdVersion?: string;
  /** Auto-pause was asked for, on a platform whose create takes it (E2B); false: not supported. */
  autoPause?: boolean;
  /** Auto-resume on traffic was asked for, on a platform whose create takes it (E2B); false: not supported. */
  autoResume?: boolean;
  /** Token the proxy wants in `e2b-traffic-access-token` (created with allowPublicTraffic false). */
  trafficAccessToken?: string;
  raw: unknown;
}

/** What a resume (E2B: connect) returns: the sandbox, and its agent's token and version when sent. */
export type ResumedSandbox = Sandbox & { accessToken?: string; envdVersion?: string };
