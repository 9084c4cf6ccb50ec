// A loopback HTTP forward proxy for tests: absolute-URI requests and CONNECT tunnels, each recorded.
import {
  createServer,
  request as httpRequest,
  type IncomingHttpHeaders,
  type Server,
} from "node:http";
import { type AddressInfo, connect, type Socket } from "node:net";

/** One request the proxy handled. */
export interface ProxiedRequest {
  /** "forward" for an absolute-URI request, "connect" for a CONNECT tunnel. */
  kind: "forward" | "connect";
  method: string;
  /** "host:port" of the target. */
  host: string;
  /** Path and query of a forwarded request; "" for a tunnel. */
  path: string;
  headers: IncomingHttpHeaders;
}

export interface TestProxy {
  url: string;
  /** Every request or tunnel seen, in arrival order. */
  requests: ProxiedRequest[];
  close(): Promise<void>;
}

/** Starts the proxy on 127.0.0.1 at a free port. */
export async function startProxy(): Promise<TestProxy> {
  const requests: ProxiedRequest[] = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer((req, res) => {
    let target: URL;
    try {
      target = new URL(req.url ?? "");
    } catch {
      res.writeHead(400).end("absolute URI expected");
      return;
    }
    const { host, pathname, search } = target;
    requests.push({
      kind: "forward",
      method: req.method ?? "",
      host,
      path: `${pathname}${search}`,
      headers: req.headers,
    });
    const headers = { ...req.headers };
    delete headers["proxy-connection"];
    const up = httpRequest(target, { method: req.method, headers }, (upRes) => {
      res.writeHead(upRes.statusCode ?? 502, upRes.headers);
      upRes.pipe(res);
    });
    up.on("error", () => res.destroy());
    req.pipe(up);
  });
  server.on("connect", (req, client: Socket) => {
    const hostPort = req.url ?? "";
    requests.push({
      kind: "connect",
      method: "CONNECT",
      host: hostPort,
      path: "",
      headers: req.headers,
    });
    const sep = hostPort.lastIndexOf(":");
    const upstream = connect(Number(hostPort.slice(sep + 1)), hostPort.slice(0, sep), () => {
      client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
      upstream.pipe(client);
      client.pipe(upstream);
    });
    const drop = (): void => {
      client.destroy();
      upstream.destroy();
    };
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on("error", drop);
      s.on("close", () => sockets.delete(s));
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
