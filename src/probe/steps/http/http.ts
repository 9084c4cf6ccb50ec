// The http step: a service the probe starts in the sandbox, reached as a user's own users reach it,
// at {port}-{id}.{domain}{path} through the platform's proxy (blackbox_exporter's http prober, on a
// sandbox port). Phases http_wait_ready (start it, wait until the proxy stops answering
// "port is not open") and http_request (status, the nonce in the body, the traffic token).
import { posix } from "node:path";
import { type PortAnswer, PortBodyTooLargeError } from "../../../platform/data/port-request.js";
import { abortable } from "../../abortable.js";
import {
  type PhaseFn,
  type ProbeControl,
  type ProbeHttpSettings,
  type ProbeRun,
  probeSandbox,
} from "../../phase.js";
import { ProbeCheckError } from "../../probe-error.js";
import { expectCleanExit, runCommand } from "../exec/exec.js";
import { STATE_POLL_MS } from "../lifecycle/lifecycle.js";

const SHOWN_BODY_CHARS = 120;
/** E2B's proxy's messages (infra packages/shared/pkg/proxy/template/*.go), which name its answers. */
const PORT_CLOSED_MESSAGE = "The sandbox is running but port is not open";
const NOT_FOUND_MESSAGE = "The sandbox was not found";
const PAUSED_MESSAGE = "The sandbox is paused";
const TRANSITIONING_MESSAGE = "The sandbox is still transitioning. Try again in a moment.";
const TOKEN_MESSAGE_PREFIX = "Sandbox is secured with traffic access token.";

/** What the platform's proxy (not the service) answered, recognised by its shape. */
export type ProxyAnswer =
  | "port_closed"
  | "not_found"
  | "paused"
  | "transitioning"
  | "token_refused"
  | undefined;

/** The step's settings; the config requires them with the http and autoresume steps. */
export function httpSettings(run: Pick<ProbeRun, "settings">): ProbeHttpSettings {
  const h = run.settings.http;
  if (!h) throw new Error("the http step ran without http settings");
  return h;
}

/**
 * Which of E2B's proxy answers this is, by status and JSON body (`message`, the sandbox id, and
 * for a closed port the port): a 502 alone may as well come from the service.
 */
export function proxyAnswer(a: PortAnswer, sandboxId: string, port: number): ProxyAnswer {
  const json = jsonOf(a);
  if (!json || typeof json.message !== "string") return undefined;
  // The proxy names the sandbox by the id it routed on; E2B may append a client id suffix.
  const id = typeof json.sandboxId === "string" ? json.sandboxId : "";
  if (id !== "" && !sandboxId.startsWith(id) && !id.startsWith(sandboxId)) return undefined;
  if (a.status === 502 && json.message === PORT_CLOSED_MESSAGE && json.port === port)
    return "port_closed";
  if (a.status === 502 && json.message === NOT_FOUND_MESSAGE) return "not_found";
  if (a.status === 409 && json.message === PAUSED_MESSAGE) return "paused";
  if (a.status === 409 && json.message === TRANSITIONING_MESSAGE) return "transitioning";
  if (a.status === 403 && json.message.startsWith(TOKEN_MESSAGE_PREFIX)) return "token_refused";
  return undefined;
}

function jsonOf(a: PortAnswer): Record<string, unknown> | undefined {
  const text = a.body.toString("utf8").trim();
  if (!text.startsWith("{")) return undefined;
  try {
    const v: unknown = JSON.parse(text);
    return typeof v === "object" && v !== null ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** The answer in a line: status and the head of its body. */
export function describeAnswer(a: PortAnswer): string {
  const body = a.body.toString("utf8").replace(/\s+/g, " ").trim();
  const shown = body.length > SHOWN_BODY_CHARS ? `${body.slice(0, SHOWN_BODY_CHARS)}...` : body;
  return `HTTP ${a.status}${shown ? `: ${shown}` : ""}`;
}

/** Where the service's nonce file lives: `directory` + `path` (query left out). */
export function servedFile(h: ProbeHttpSettings): string {
  return posix.join(h.directory, decodeURIComponent(h.path.split("?")[0] ?? "/"));
}

/**
 * The command that starts the service in the background and prints its pid; every stream of the
 * child is redirected, or the agent would hold the Start stream open while it runs.
 */
export function serviceCommand(h: ProbeHttpSettings): string {
  const cmd = h.command.replaceAll("{port}", String(h.port)).replaceAll("{dir}", h.directory);
  return `${cmd} >/dev/null 2>&1 </dev/null & echo $!`;
}

/**
 * `control` whose create asks what the http and autoresume steps need: auto-resume (with auto-pause,
 * as E2B requires) and restricted public traffic; `created` learns what the platform took.
 */
export function askingForTraffic(
  control: ProbeControl,
  ask: { autoResume: boolean; allowPublicTraffic: boolean },
  created: (c: { autoResume: boolean; trafficToken?: string }) => void,
): ProbeControl {
  return {
    createSandbox: async (req) => {
      const c = await control.createSandbox({
        ...req,
        ...(ask.autoResume ? { autoPause: true, autoResume: true } : {}),
        ...(ask.allowPublicTraffic ? {} : { allowPublicTraffic: false }),
      });
      created({
        autoResume: c.autoResume === true,
        ...(c.trafficAccessToken ? { trafficToken: c.trafficAccessToken } : {}),
      });
      return c;
    },
    getSandbox: (id, o) => control.getSandbox(id, o),
    deleteSandbox: (id) => control.deleteSandbox(id),
    listSandboxes: (q) => control.listSandboxes(q),
    pauseSandbox: (id) => control.pauseSandbox(id),
    resumeSandbox: (id, body) => control.resumeSandbox(id, body),
  };
}

/**
 * One request to the service's port, within `timeoutMs`; the traffic token unless `noToken`. An
 * answer longer than the probe reads fails `body_too_large` (the service's, not the transport's).
 */
export async function requestService(
  run: ProbeRun,
  signal: AbortSignal,
  timeoutMs: number,
  o: { noToken?: boolean } = {},
): Promise<PortAnswer> {
  const h = httpSettings(run);
  try {
    return await abortable(
      run.data.requestPort(probeSandbox(run), {
        port: h.port,
        path: h.path,
        method: h.method,
        headers: h.headers,
        ...(run.trafficToken && !o.noToken ? { trafficToken: run.trafficToken } : {}),
        signal,
        timeoutMs: Math.max(1, timeoutMs),
      }),
      signal,
    );
  } catch (err) {
    if (err instanceof PortBodyTooLargeError)
      throw new ProbeCheckError("body_too_large", err.message);
    throw err;
  }
}

/** Writes the nonce file the service serves and starts the service; remembers its pid. */
export async function startService(
  run: ProbeRun,
  signal: AbortSignal,
  budgetMs: number,
): Promise<void> {
  const h = httpSettings(run);
  await run.data.writeFile(probeSandbox(run), servedFile(h), `${run.nonce}\n`, { signal });
  const { end, stdout } = await runCommand(run, serviceCommand(h), signal, budgetMs);
  expectCleanExit("starting the HTTP service", end);
  const text = stdout.trim();
  const pid = Number(text);
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(pid) || pid <= 0)
    throw new ProbeCheckError(
      "wrong_output",
      `starting the HTTP service printed no pid: got ${JSON.stringify(stdout.slice(0, 60))}`,
    );
  run.servicePid = pid;
}

/**
 * Passes when the answer is the service's: no proxy answer, a valid status (blackbox's
 * validStatusCodes, default 2xx), the nonce in the body and every failIfBodyNotMatchesRegexp.
 */
export function checkServiceAnswer(run: ProbeRun, a: PortAnswer, what: string): void {
  const h = httpSettings(run);
  const id = probeSandbox(run).id;
  const proxy = proxyAnswer(a, id, h.port);
  if (proxy === "port_closed")
    throw new ProbeCheckError(
      "port_closed",
      `${what}: nothing listens on port ${h.port} (${describeAnswer(a)})`,
    );
  if (proxy === "not_found")
    throw new ProbeCheckError(
      "not_found",
      `${what}: the proxy finds no sandbox ${id} (${describeAnswer(a)})`,
    );
  const valid =
    h.validStatusCodes.length > 0
      ? h.validStatusCodes.includes(a.status)
      : a.status >= 200 && a.status < 300;
  if (!valid) throw new ProbeCheckError("bad_status", `${what}: ${describeAnswer(a)}`);
  const body = a.body.toString("utf8");
  if (h.method !== "HEAD" && !body.includes(run.nonce))
    throw new ProbeCheckError(
      "body_mismatch",
      `${what}: the body lacks the nonce (${describeAnswer(a)})`,
    );
  for (const src of h.failIfBodyNotMatchesRegexp)
    if (!new RegExp(src).test(body))
      throw new ProbeCheckError(
        "body_mismatch",
        `${what}: the body does not match /${src}/ (${describeAnswer(a)})`,
      );
}

/**
 * Starts the service unless a step already did, then requests its port until the proxy stops
 * answering "port is not open"; fails port_closed with the proxy's answer when the next attempt
 * would cross the phase budget.
 */
export const httpWaitReadyPhase: PhaseFn = async (run, signal, budgetMs) => {
  const deadline = run.monotonic() + budgetMs;
  const left = () => deadline - run.monotonic();
  if (run.servicePid === undefined) await startService(run, signal, left());
  const h = httpSettings(run);
  const pollMs = run.settings.statePollMs ?? STATE_POLL_MS;
  const id = probeSandbox(run).id;
  for (let attempt = 1; ; attempt++) {
    const a = await requestService(run, signal, left());
    if (proxyAnswer(a, id, h.port) !== "port_closed") return;
    if (run.monotonic() + pollMs >= deadline)
      throw new ProbeCheckError(
        "port_closed",
        `port ${h.port} still closed after ${attempt} requests (${describeAnswer(a)})`,
      );
    await run.sleep(pollMs, signal);
  }
};

/**
 * The request users make: its answer must be the service's, with the nonce. A restricted sandbox
 * (allowPublicTraffic false) must have come with a traffic token, and is asked again without it,
 * which the proxy must refuse: else not_restricted.
 */
export const httpRequestPhase: PhaseFn = async (run, signal, budgetMs) => {
  const deadline = run.monotonic() + budgetMs;
  const h = httpSettings(run);
  const a = await requestService(run, signal, budgetMs);
  run.http = { firstByte: a.firstByteMs / 1000, total: a.totalMs / 1000 };
  checkServiceAnswer(run, a, `${h.method} ${h.path}`);
  if (h.allowPublicTraffic) return;
  // Without a token the request above went out bare and was served: the port is public.
  if (run.trafficToken === undefined)
    throw new ProbeCheckError(
      "not_restricted",
      `asked for a sandbox without public traffic (allowPublicTraffic false), but create returned no traffic access token and port ${h.port} answered without one`,
    );
  const bare = await requestService(run, signal, deadline - run.monotonic(), { noToken: true });
  if (proxyAnswer(bare, probeSandbox(run).id, h.port) !== "token_refused")
    throw new ProbeCheckError(
      "not_restricted",
      `a request without the traffic token was not refused by the proxy (${describeAnswer(bare)})`,
    );
};
