// Where logins come from, for the bcrypt gate's priority: an address that has not sent a wrong
// password lately is served before the guesses of one that has. Addresses only, never a secret.
import { isIPv6 } from "node:net";

/** Addresses remembered at most; the one refused longest ago goes first. */
const MAX_SUSPECT_SOURCES = 4_096;
/** How long a wrong password marks its address. */
const SUSPECT_MS = 10 * 60_000;

/**
 * The source a login is counted under: the IPv4 address (also when written IPv4-mapped), or the
 * IPv6 /64, which one host or one customer usually holds whole.
 */
export function sourceOf(address: string | undefined): string | undefined {
  if (address === undefined || address === "") return undefined;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1];
  if (!isIPv6(address)) return address;
  const [head = "", tail = ""] = address.split("%", 1)[0]?.split("::") ?? [];
  const left = head === "" ? [] : head.split(":");
  const right = tail === "" ? [] : tail.split(":");
  const groups = address.includes("::")
    ? [...left, ...Array(8 - left.length - right.length).fill("0"), ...right]
    : left;
  return `${groups
    .slice(0, 4)
    .map((g) => Number.parseInt(g, 16).toString(16))
    .join(":")}::/64`;
}

/** Addresses that sent a wrong password in the last SUSPECT_MS, bounded, on an injected clock. */
export class SuspectSources {
  /** Source -> when it last failed, oldest first. */
  readonly #failedAt = new Map<string, number>();
  readonly #now: () => number;

  constructor(now: () => number) {
    this.#now = now;
  }

  /** Marks `source` as having sent a wrong password now. */
  failed(source: string): void {
    this.#failedAt.delete(source);
    if (this.#failedAt.size >= MAX_SUSPECT_SOURCES) {
      const oldest = this.#failedAt.keys().next().value;
      if (oldest !== undefined) this.#failedAt.delete(oldest);
    }
    this.#failedAt.set(source, this.#now());
  }

  /** True when `source` sent a wrong password in the last SUSPECT_MS. */
  has(source: string): boolean {
    const at = this.#failedAt.get(source);
    if (at === undefined) return false;
    if (this.#now() - at < SUSPECT_MS) return true;
    this.#failedAt.delete(source);
    return false;
  }
}
