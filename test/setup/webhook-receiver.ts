/**
 * Vitest global setup for the Worker project: a loopback webhook receiver (127.0.0.1, an
 * OS-chosen port) that tests inside workerd point notification configurations at. Each test
 * uses its own path: `POST /hooks/<name>` records the request (headers and raw body) and answers
 * the next scripted status (200 once the script is spent); `PUT /script/<name>` sets the script
 * (`[{ status, retryAfter? }]`); `GET /requests/<name>` lists what arrived. Its URL is
 * `inject("webhookReceiverUrl")`.
 */
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import type { TestProject } from "vitest/node";

declare module "vitest" {
  export interface ProvidedContext {
    webhookReceiverUrl: string;
  }
}

type Answer = { status: number; retryAfter?: string };
type Received = { headers: Record<string, string>; body: string };

async function bodyOf(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) {
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString("utf8");
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const scripts = new Map<string, Answer[]>();
  const received = new Map<string, Received[]>();
  const server = createServer(async (req, res) => {
    const [, kind, name = ""] = (req.url ?? "").split("/");
    const body = await bodyOf(req);
    if (kind === "script" && req.method === "PUT") {
      scripts.set(name, JSON.parse(body) as Answer[]);
      res.writeHead(204).end();
      return;
    }
    if (kind === "requests" && req.method === "GET") {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify(received.get(name) ?? []));
      return;
    }
    if (kind === "hooks" && req.method === "POST") {
      const headers = Object.fromEntries(
        Object.entries(req.headers).map(([k, v]) => [
          k,
          Array.isArray(v) ? v.join(", ") : (v ?? ""),
        ]),
      );
      received.set(name, [...(received.get(name) ?? []), { headers, body }]);
      const answer = scripts.get(name)?.shift() ?? { status: 200 };
      res.writeHead(answer.status, answer.retryAfter ? { "retry-after": answer.retryAfter } : {});
      res.end(answer.status >= 400 ? "receiver says no" : "ok");
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  project.provide("webhookReceiverUrl", `http://127.0.0.1:${port}`);
  return () => new Promise<void>((resolve) => server.close(() => resolve()));
}
