/**
 * A forward proxy on 127.0.0.1 that counts what passes: plain requests in absolute form (how
 * clients send http:// URLs to a proxy) and CONNECT tunnels (https:// URLs).
 */
import { createServer, request, type Server } from "node:http";
import { type AddressInfo, connect, type Socket } from "node:net";

export class CountingProxy {
  /** `METHOD http://host:port/path` of each forwarded request. */
  readonly requests: string[] = [];
  /** `host:port` of each CONNECT tunnel. */
  readonly tunnels: string[] = [];
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();

  get url(): string {
    const address = this.server?.address() as AddressInfo | null;
    if (!address) {
      throw new Error("proxy not started");
    }
    return `http://127.0.0.1:${address.port}`;
  }

  async start(): Promise<void> {
    const server = createServer((req, res) => {
      this.requests.push(`${req.method} ${req.url}`);
      const target = new URL(req.url ?? "");
      const upstream = request(
        {
          host: target.hostname,
          port: target.port,
          path: `${target.pathname}${target.search}`,
          method: req.method,
          headers: req.headers,
        },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      upstream.on("error", () => res.writeHead(502).end("bad gateway"));
      req.pipe(upstream);
    });
    server.on("connect", (req, socket: Socket, head) => {
      this.tunnels.push(req.url ?? "");
      const [host, port] = (req.url ?? "").split(":");
      const upstream = connect(Number(port), host ?? "127.0.0.1", () => {
        socket.write("HTTP/1.1 200 Connection Established\r\n\r\n");
        upstream.write(head);
        upstream.pipe(socket);
        socket.pipe(upstream);
      });
      for (const s of [socket, upstream]) {
        this.sockets.add(s);
        s.on("close", () => this.sockets.delete(s));
        s.on("error", () => {
          socket.destroy();
          upstream.destroy();
        });
      }
    });
    server.on("connection", (socket) => {
      this.sockets.add(socket);
      socket.on("close", () => this.sockets.delete(socket));
    });
    this.server = server;
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  }

  async stop(): Promise<void> {
    for (const socket of this.sockets) {
      socket.destroy();
    }
    const server = this.server;
    if (server) {
      await new Promise((resolve) => server.close(resolve));
    }
  }
}
