/**
 * How the agent's requests leave the host: through the proxy the environment names (either
 * case, lower case first, NO_PROXY honoured), trusting --ca-cert inside proxy tunnels and on
 * direct connections, and failing with a cause an operator can act on. Real servers on
 * 127.0.0.1: a counting proxy, an HTTP origin and an HTTPS origin with a CA made at test time.
 */
import { createServer, type Server } from "node:http";
import { createServer as createTlsServer } from "node:https";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { CoordinatorError, send } from "../../agent/src/client/http.ts";
import { TransientError } from "../../agent/src/errors.ts";
import { describeNetworkError } from "../../agent/src/net/errors.ts";
import { configureNetwork, httpFetch, PROXY_VARIABLES } from "../../agent/src/net/fetch.ts";
import { CountingProxy } from "./helpers/proxy.ts";
import { makeTestCa, type TestCa } from "./helpers/tls.ts";

let ca: TestCa;
let proxy: CountingProxy;
let plain: Server;
let secure: Server;
const saved = Object.fromEntries(PROXY_VARIABLES.map((name) => [name, process.env[name]]));

const urlOf = (server: Server, scheme: string) =>
  `${scheme}://127.0.0.1:${(server.address() as AddressInfo).port}`;

beforeAll(async () => {
  ca = await makeTestCa();
  proxy = new CountingProxy();
  await proxy.start();
  plain = createServer((_req, res) => res.end("plain"));
  secure = createTlsServer({ key: ca.key, cert: ca.cert }, (_req, res) => res.end("secure"));
  await Promise.all(
    [plain, secure].map((s) => new Promise<void>((resolve) => s.listen(0, "127.0.0.1", resolve))),
  );
});
afterEach(() => {
  for (const name of PROXY_VARIABLES) {
    if (saved[name] === undefined) {
      delete process.env[name];
    } else {
      process.env[name] = saved[name];
    }
  }
  configureNetwork({ extraCas: [] });
  proxy.requests.length = 0;
  proxy.tunnels.length = 0;
});
afterAll(async () => {
  await Promise.all([proxy.stop(), ...[plain, secure].map((s) => new Promise((r) => s.close(r)))]);
  await ca.dispose();
});

function useEnv(env: Record<string, string>, extraCas: string[] = []): void {
  for (const name of PROXY_VARIABLES) {
    delete process.env[name];
  }
  Object.assign(process.env, env);
  configureNetwork({ extraCas });
}

describe("proxies and CAs", () => {
  it("sends http through HTTP_PROXY and tunnels https through HTTPS_PROXY, trusting --ca-cert", async () => {
    useEnv({ HTTP_PROXY: proxy.url, HTTPS_PROXY: proxy.url }, [ca.caPem]);
    expect(await (await httpFetch(`${urlOf(plain, "http")}/coordinator`)).text()).toBe("plain");
    expect(await (await httpFetch(`${urlOf(secure, "https")}/mirror`)).text()).toBe("secure");
    expect(proxy.requests).toEqual([`GET ${urlOf(plain, "http")}/coordinator`]);
    expect(proxy.tunnels).toEqual([urlOf(secure, "https").replace("https://", "")]);
  });

  it("prefers the lower-case variables and goes direct for NO_PROXY hosts", async () => {
    useEnv({ HTTP_PROXY: "http://127.0.0.1:1", http_proxy: proxy.url });
    await (await httpFetch(`${urlOf(plain, "http")}/lower`)).text();
    expect(proxy.requests).toHaveLength(1);
    useEnv({ HTTPS_PROXY: proxy.url, HTTP_PROXY: proxy.url, NO_PROXY: "127.0.0.1" }, [ca.caPem]);
    await (await httpFetch(`${urlOf(plain, "http")}/direct`)).text();
    await (await httpFetch(`${urlOf(secure, "https")}/direct`)).text();
    expect(proxy.requests).toHaveLength(1);
    expect(proxy.tunnels).toEqual([]);
  });

  it("trusts the CA on direct connections too, and says what to do without it", async () => {
    useEnv({}, [ca.caPem]);
    expect(await (await httpFetch(`${urlOf(secure, "https")}/`)).text()).toBe("secure");
    useEnv({});
    const error = await httpFetch(`${urlOf(secure, "https")}/`).catch((e: unknown) => e);
    expect(describeNetworkError(error)).toMatch(
      /^TLS certificate not trusted: .*add (it|its CA) with --ca-cert \((UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED_CERT_IN_CHAIN)/,
    );
  });
});

describe("failure causes", () => {
  it("names a refused connection, an unknown host and an HTTP refusal with its code", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const target = { address: `http://127.0.0.1:${port}`, userAgent: "test" };
    const refused = await send(target, { method: "POST", path: "/agent/v1/register" }).catch(
      (e: unknown) => e,
    );
    expect(refused).toBeInstanceOf(TransientError);
    expect((refused as Error).message).toBe(
      `POST /agent/v1/register: cannot reach http://127.0.0.1:${port} (connection refused: nothing listens at that address and port (connect ECONNREFUSED 127.0.0.1:${port}))`,
    );
    const dns = await send(
      { address: "http://outpost.invalid", userAgent: "test" },
      { method: "GET", path: "/healthz" },
    ).catch((e: unknown) => e);
    expect((dns as Error).message).toMatch(
      /cannot reach http:\/\/outpost\.invalid \(DNS lookup failed/,
    );
    const refusing = createServer((_req, res) =>
      res
        .writeHead(409, { "content-type": "application/json" })
        .end(JSON.stringify({ error: { code: "LEASE_LOST", message: "lease x is not held" } })),
    );
    await new Promise<void>((resolve) => refusing.listen(0, "127.0.0.1", resolve));
    const status = await send(
      { address: urlOf(refusing, "http"), userAgent: "test" },
      { method: "POST", path: "/agent/v1/jobs/j/leases/x/start?wait=1" },
    ).catch((e: unknown) => e);
    await new Promise((resolve) => refusing.close(resolve));
    expect(status).toBeInstanceOf(CoordinatorError);
    expect((status as Error).message).toBe(
      "POST /agent/v1/jobs/j/leases/x/start answered 409 LEASE_LOST: lease x is not held",
    );
  });
});
