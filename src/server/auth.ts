// Listener authentication in the manner of Prometheus' exporter-toolkit: bcrypt basic auth with
// verified credentials remembered, plus the deprecated bearer token. bcrypt is what an
// unauthenticated caller can make the exporter spend, so its compares run off the event loop, a
// bounded number at a time, a remembered answer never waits behind them, and a login from an
// address that sent no wrong password lately goes before the guesses of one that did.
import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { type Clock, systemClock } from "../util/clock.js";
import { LogLimiter, type WarnLogger } from "../util/log-limiter.js";
import { BcryptPool } from "./bcrypt-pool.js";
import { SuspectSources, sourceOf } from "./login-sources.js";

/** Accepted credentials; both may be set, either one passes. */
export interface ServerAuth {
  /** Deprecated (server.bearerTokenFile). */
  bearerToken?: string;
  /** user -> bcrypt hash of the password. */
  basicUsers?: Readonly<Record<string, string>>;
}

/** Checks a password against a bcrypt hash. */
export type PasswordCompare = (password: string, hash: string) => Promise<boolean>;

/** What the gate says of a request: let in, refused (401), or no compare could be had now (503). */
export type AuthVerdict = "ok" | "unauthorized" | "busy";

/** Verified credentials remembered at most; the oldest goes first, as a scrape repeats its own. */
const MAX_VERIFIED = 100;
/** Refused credentials remembered at most, so the same wrong password is not compared again. */
const MAX_REFUSED = 1_000;
/** Threads comparing at once: one keeps a core for the event loop on a small pod. */
const COMPARE_THREADS = 1;
/**
 * Compares waiting at most; one more is refused at once (503). With the running one, 9 compares at
 * cost 10 (about 70 ms each in bcryptjs) keep a correct login that got a place within a second.
 */
const MAX_WAITING_COMPARES = 8;
/**
 * Compares one configured user name may have running or waiting: a flood of guesses at one name
 * leaves places for the other users' logins.
 */
const MAX_COMPARES_PER_USER = 3;
/**
 * Compares all unknown user names have running or waiting together: a flood with a new made-up
 * name each time takes these places only, and the configured users keep the rest. Its refusal is
 * the same 503 as a configured user's, so the answer tells no one which names exist.
 */
const MAX_UNKNOWN_COMPARES = 3;
/**
 * Priority compares waiting at most: one per address that sent no wrong password lately, served
 * before every other waiting compare, so a flood from elsewhere cannot refuse the right client.
 */
const MAX_PRIORITY_WAITING = 8;
/** One warning line a minute about refused logins, with the count of the others. */
const WARN_INTERVAL_MS = 60_000;
/** What a 503 asks the client to wait before it tries again. */
const RETRY_AFTER_SECONDS = 1;

/**
 * exporter-toolkit's stand-in for an unknown user (bcrypt of "fakepassword", cost 10): comparing
 * against it costs what a real user costs, so timing does not tell which users exist.
 */
const UNKNOWN_USER_HASH = "$2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi";
/** The budget key of every unknown user name (a symbol: no configured name can equal it). */
const UNKNOWN: unique symbol = Symbol("unknown user");

function sameSecret(a: string, b: string): boolean {
  const ha = createHash("sha256").update(a).digest();
  const hb = createHash("sha256").update(b).digest();
  return timingSafeEqual(ha, hb);
}

/**
 * True when the listener asks for credentials. A configured but empty token (an empty token file)
 * counts: it closes the listener rather than silently opening it.
 */
export function requiresCredentials(auth: ServerAuth | undefined): boolean {
  return auth?.bearerToken !== undefined || auth?.basicUsers !== undefined;
}

/** Settings of a LoginVerifier; every part has a default. */
export interface LoginVerifierOptions {
  /** The compare (tests count and hold the calls); default bcryptjs on worker threads. */
  compare?: PasswordCompare;
  /** Compares running at once (default COMPARE_THREADS). */
  threads?: number;
  /** Compares waiting at most (default MAX_WAITING_COMPARES). */
  maxWaiting?: number;
  /** Compares of one configured user name running or waiting at most (default MAX_COMPARES_PER_USER). */
  maxPerUser?: number;
  /** Compares of all unknown user names together at most (default MAX_UNKNOWN_COMPARES). */
  maxUnknown?: number;
  /** Priority compares waiting at most (default MAX_PRIORITY_WAITING). */
  maxPriority?: number;
  /** Where refused logins are warned about, once a minute. */
  logger?: WarnLogger;
  clock?: Clock;
}

/** A credential's remembered answer, with what it was checked against (for a reload). */
interface Remembered {
  user: string;
  hash: string;
}

/**
 * Checks basic-auth passwords against bcrypt hashes for the listener, across reloads. An answer is
 * remembered (keyed by an HMAC of user, password and hash under a key of this process's own, so
 * neither the password nor a fast unkeyed digest of it is kept): bcrypt gives the same answer for
 * the same three, so a scrape pays bcrypt once and the same wrong password is compared once.
 * Compares run `threads` at a time. An address that sent no wrong password lately has one priority
 * compare at a time, served before the others (at most `maxPriority` waiting). Every other compare
 * waits behind them, at most `maxWaiting`, `maxPerUser` of one configured user and `maxUnknown` of
 * all unknown names together; past that a login is refused at once rather than queued.
 */
export class LoginVerifier {
  readonly #compare: PasswordCompare;
  readonly #pool: BcryptPool | undefined;
  readonly #threads: number;
  readonly #maxWaiting: number;
  readonly #maxPerUser: number;
  readonly #maxUnknown: number;
  readonly #maxPriority: number;
  /** The key of the remembered answers' HMAC: random, never written anywhere. */
  readonly #secret = randomBytes(32);
  /** Compares running or waiting by configured user name, and of every unknown name under UNKNOWN. */
  readonly #byUser = new Map<string | typeof UNKNOWN, number>();
  /** Sources with a priority compare running or waiting. */
  readonly #prioritySources = new Set<string>();
  readonly #suspects: SuspectSources;
  readonly #verified = new Map<string, Remembered>();
  readonly #refused = new Map<string, Remembered>();
  readonly #pending = new Map<string, Promise<boolean>>();
  readonly #priority: Array<() => void> = [];
  readonly #waiting: Array<() => void> = [];
  #running = 0;
  readonly #logger: WarnLogger;
  readonly #warnings: LogLimiter;

  constructor(o: LoginVerifierOptions = {}) {
    this.#threads = o.threads ?? COMPARE_THREADS;
    this.#maxWaiting = o.maxWaiting ?? MAX_WAITING_COMPARES;
    this.#maxPerUser = o.maxPerUser ?? MAX_COMPARES_PER_USER;
    this.#maxUnknown = o.maxUnknown ?? MAX_UNKNOWN_COMPARES;
    this.#maxPriority = o.maxPriority ?? MAX_PRIORITY_WAITING;
    if (o.compare) this.#compare = o.compare;
    else {
      const pool = new BcryptPool(this.#threads);
      this.#pool = pool;
      this.#compare = (password, hash) => pool.compare(password, hash);
    }
    this.#logger = o.logger ?? { warn: () => {} };
    const clock = o.clock ?? systemClock;
    this.#warnings = new LogLimiter({ intervalMs: WARN_INTERVAL_MS, now: () => clock.now() });
    this.#suspects = new SuspectSources(() => clock.now());
  }

  /**
   * True, false, or "busy" when no compare can be had now (nothing remembered for it either).
   * `source` (from sourceOf) is the caller's address: a wrong password marks it, and without a
   * mark its login goes first.
   */
  async verify(
    user: string,
    password: string,
    hash: string,
    source?: string,
  ): Promise<boolean | "busy"> {
    const key = createHmac("sha256", this.#secret)
      .update(`${user.length}:${user}\u0000${password.length}:${password}\u0000${hash}`)
      .digest("hex");
    const answer =
      this.#remembered(key) ?? (await this.#compareOnce(key, user, password, hash, source));
    if (answer === false && source !== undefined) this.#suspects.failed(source);
    return answer;
  }

  /** A remembered answer: it never waits behind the compares of others. */
  #remembered(key: string): boolean | undefined {
    if (this.#verified.has(key)) {
      touch(this.#verified, key);
      return true;
    }
    if (this.#refused.has(key)) {
      touch(this.#refused, key);
      return false;
    }
    return undefined;
  }

  /** Starts the compare of one credential, or joins the one running; "busy" past the bounds. */
  #compareOnce(
    key: string,
    user: string,
    password: string,
    hash: string,
    source: string | undefined,
  ): Promise<boolean | "busy"> | "busy" {
    // Concurrent requests with the same credential share one compare.
    const shared = this.#pending.get(key);
    if (shared) return shared;
    const done = this.#admit(user, hash, source);
    if (done === undefined) return "busy";
    const pending = this.#run(password, hash, done).then(
      (ok) => {
        // The stand-in's own password opens nothing: it must not take a verified place.
        const verified = ok && hash !== UNKNOWN_USER_HASH;
        remember(verified ? this.#verified : this.#refused, key, { user, hash }, verified);
        return verified;
      },
      () => false,
    );
    this.#pending.set(key, pending);
    void pending.finally(() => this.#pending.delete(key));
    return pending;
  }

  /** Takes a place for a compare: its release and queue, or undefined when none is left. */
  #admit(user: string, hash: string, source: string | undefined): Admission | undefined {
    const free = this.#running < this.#threads;
    if (
      source !== undefined &&
      !this.#prioritySources.has(source) &&
      !this.#suspects.has(source) &&
      (free || this.#priority.length < this.#maxPriority)
    ) {
      this.#prioritySources.add(source);
      return { queue: this.#priority, release: () => this.#prioritySources.delete(source) };
    }
    // Unknown names are all compared against the stand-in, and share one budget.
    const unknown = hash === UNKNOWN_USER_HASH;
    const budget = unknown ? UNKNOWN : user;
    const mine = this.#byUser.get(budget) ?? 0;
    const full = !free && this.#waiting.length >= this.#maxWaiting;
    if (full || mine >= (unknown ? this.#maxUnknown : this.#maxPerUser)) {
      this.#warnings.warn(
        this.#logger,
        "busy",
        { running: this.#running, waiting: this.#waiting.length, bound: full ? "all" : "user" },
        "listener login refused (503): bcrypt compares at their bound (a flood of logins?)",
      );
      return undefined;
    }
    this.#byUser.set(budget, mine + 1);
    const release = (): void => {
      const left = (this.#byUser.get(budget) ?? 1) - 1;
      if (left > 0) this.#byUser.set(budget, left);
      else this.#byUser.delete(budget);
    };
    return { queue: this.#waiting, release };
  }

  /** Forgets the answers for users whose hash is no longer `users`' (a reload); the rest stay. */
  retain(users: Readonly<Record<string, string>> | undefined): void {
    for (const memory of [this.#verified, this.#refused])
      for (const [key, r] of memory)
        if (users?.[r.user] !== r.hash && r.hash !== UNKNOWN_USER_HASH) memory.delete(key);
  }

  /** Ends the compare threads. */
  async close(): Promise<void> {
    await this.#pool?.close();
  }

  async #run(password: string, hash: string, place: Admission): Promise<boolean> {
    if (this.#running >= this.#threads)
      await new Promise<void>((resolve) => place.queue.push(resolve));
    else this.#running++;
    try {
      return await this.#compare(password, hash);
    } finally {
      place.release();
      // The place passes straight to the next waiter, priority first; `running` stays the same.
      const next = this.#priority.shift() ?? this.#waiting.shift();
      if (next) next();
      else this.#running--;
    }
  }
}

/** A compare's place: the queue it waits in when every thread is busy, and what frees it. */
interface Admission {
  queue: Array<() => void>;
  release: () => void;
}

/** Moves `key` to the newest end of `memory`. */
function touch(memory: Map<string, Remembered>, key: string): void {
  const r = memory.get(key) as Remembered;
  memory.delete(key);
  memory.set(key, r);
}

function remember(
  memory: Map<string, Remembered>,
  key: string,
  r: Remembered,
  verified: boolean,
): void {
  if (memory.size >= (verified ? MAX_VERIFIED : MAX_REFUSED)) {
    const oldest = memory.keys().next().value;
    if (oldest !== undefined) memory.delete(oldest);
  }
  memory.set(key, r);
}

/**
 * The listener's gate for one set of credentials; a new gate is built when the users change.
 * Which routes it guards is the route table's to say (a route's `auth`).
 */
export class ListenerAuth {
  readonly #auth: ServerAuth | undefined;
  readonly #verifier: LoginVerifier;

  constructor(
    auth: ServerAuth | undefined,
    options: { compare?: PasswordCompare; verifier?: LoginVerifier } = {},
  ) {
    this.#auth = auth;
    this.#verifier =
      options.verifier ?? new LoginVerifier(options.compare ? { compare: options.compare } : {});
    // The verifier outlives a reload: what it remembers of users whose hash stayed is kept.
    this.#verifier.retain(auth?.basicUsers);
  }

  /** True when requests (other than to open routes) must carry credentials. */
  get required(): boolean {
    return requiresCredentials(this.#auth);
  }

  /** Whether the request may proceed, is refused, or finds every compare taken. */
  async check(req: IncomingMessage): Promise<AuthVerdict> {
    const auth = this.#auth;
    if (!auth || !requiresCredentials(auth)) return "ok";
    const header = req.headers.authorization ?? "";
    const space = header.indexOf(" ");
    const scheme = header.slice(0, space).toLowerCase();
    const value = header.slice(space + 1).trim();
    if (scheme === "bearer" && auth.bearerToken)
      return sameSecret(value, auth.bearerToken) ? "ok" : "unauthorized";
    if (scheme === "basic" && auth.basicUsers) {
      const decoded = Buffer.from(value, "base64").toString("utf8");
      const colon = decoded.indexOf(":");
      if (colon < 0) return "unauthorized";
      const user = decoded.slice(0, colon);
      const known = Object.hasOwn(auth.basicUsers, user);
      const hash = known ? (auth.basicUsers[user] as string) : UNKNOWN_USER_HASH;
      const source = sourceOf(req.socket.remoteAddress);
      const ok = await this.#verifier.verify(user, decoded.slice(colon + 1), hash, source);
      if (ok === "busy") return "busy";
      return ok && known ? "ok" : "unauthorized";
    }
    return "unauthorized";
  }
}

/** The answer to a request the gate did not let in: 401 asking for basic auth, or 503 to retry. */
export function refuseLogin(res: ServerResponse, verdict: Exclude<AuthVerdict, "ok">): void {
  const busy = verdict === "busy";
  const body = busy ? "too many logins being checked; retry\n" : "unauthorized\n";
  if (busy) res.setHeader("Retry-After", String(RETRY_AFTER_SECONDS));
  else res.setHeader("WWW-Authenticate", 'Basic realm="sandbox-exporter", charset="UTF-8"');
  res.statusCode = busy ? 503 : 401;
  res.setHeader("Content-Type", "text/plain; charset=utf-8");
  res.setHeader("Content-Length", Buffer.byteLength(body));
  res.end(body);
}
