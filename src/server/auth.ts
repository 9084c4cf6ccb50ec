// Listener authentication in the manner of Prometheus' exporter-toolkit: bcrypt basic auth with
// verified credentials remembered, plus the deprecated bearer token.
import { createHash, timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";
import bcrypt from "bcryptjs";

/** Accepted credentials; both may be set, either one passes. */
export interface ServerAuth {
  /** Deprecated (server.bearerTokenFile). */
  bearerToken?: string;
  /** user -> bcrypt hash of the password. */
  basicUsers?: Readonly<Record<string, string>>;
}

/** Checks a password against a bcrypt hash. */
export type PasswordCompare = (password: string, hash: string) => Promise<boolean>;

/** Paths that stay open so orchestrators can probe liveness without credentials. */
const OPEN_PATHS = ["/healthz", "/readyz"];

/** Verified credentials remembered at most; the oldest goes first, as a scrape repeats its own. */
const MAX_VERIFIED = 100;

/**
 * exporter-toolkit's stand-in for an unknown user (bcrypt of "fakepassword", cost 10): comparing
 * against it costs what a real user costs, so timing does not tell which users exist.
 */
const UNKNOWN_USER_HASH = "$2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi";

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

/**
 * The listener's gate. A verified basic-auth credential is remembered (keyed by a SHA-256 of user,
 * password and hash, so the password itself is not kept), so a scrape pays bcrypt once; a refusal
 * is never remembered. A new gate is built when the users change.
 */
export class ListenerAuth {
  readonly #auth: ServerAuth | undefined;
  readonly #compare: PasswordCompare;
  readonly #open: Set<string>;
  readonly #verified = new Set<string>();
  readonly #pending = new Map<string, Promise<boolean>>();
  /** bcrypt runs one compare at a time, as exporter-toolkit's mutex does: it is CPU-bound. */
  #queue: Promise<unknown> = Promise.resolve();

  constructor(
    auth: ServerAuth | undefined,
    options: { compare?: PasswordCompare; openPaths?: readonly string[] } = {},
  ) {
    this.#auth = auth;
    this.#compare = options.compare ?? ((password, hash) => bcrypt.compare(password, hash));
    this.#open = new Set([...OPEN_PATHS, ...(options.openPaths ?? [])]);
  }

  /** True when requests (other than to open paths) must carry credentials. */
  get required(): boolean {
    return requiresCredentials(this.#auth);
  }

  /** True when the request may proceed. */
  async authorize(req: IncomingMessage, path: string): Promise<boolean> {
    const auth = this.#auth;
    if (!auth || !requiresCredentials(auth) || this.#open.has(path)) return true;
    const header = req.headers.authorization ?? "";
    const space = header.indexOf(" ");
    const scheme = header.slice(0, space).toLowerCase();
    const value = header.slice(space + 1).trim();
    if (scheme === "bearer" && auth.bearerToken) return sameSecret(value, auth.bearerToken);
    if (scheme === "basic" && auth.basicUsers) {
      const decoded = Buffer.from(value, "base64").toString("utf8");
      const colon = decoded.indexOf(":");
      if (colon < 0) return false;
      const user = decoded.slice(0, colon);
      const known = Object.hasOwn(auth.basicUsers, user);
      const hash = known ? (auth.basicUsers[user] as string) : UNKNOWN_USER_HASH;
      const ok = await this.#verify(user, decoded.slice(colon + 1), hash);
      return ok && known;
    }
    return false;
  }

  async #verify(user: string, password: string, hash: string): Promise<boolean> {
    const key = createHash("sha256")
      .update(`${user.length}:${user}\u0000${password.length}:${password}\u0000${hash}`)
      .digest("hex");
    if (this.#verified.has(key)) return true;
    // Concurrent scrapes with the same credential share one compare.
    let pending = this.#pending.get(key);
    if (!pending) {
      pending = this.#queue.then(() => this.#compare(password, hash));
      this.#queue = pending.catch(() => false);
      this.#pending.set(key, pending);
    }
    try {
      const ok = await pending;
      if (ok) this.#remember(key);
      return ok;
    } catch {
      return false;
    } finally {
      this.#pending.delete(key);
    }
  }

  #remember(key: string): void {
    if (this.#verified.size >= MAX_VERIFIED) {
      const oldest = this.#verified.values().next().value;
      if (oldest !== undefined) this.#verified.delete(oldest);
    }
    this.#verified.add(key);
  }
}
