/**
 * Vitest global setup for the Worker project: a loopback GitHub REST API (127.0.0.1, an
 * OS-chosen port) that VCS feedback posts to. Every request is checked against GitHub's
 * published OpenAPI description (`@octokit/openapi`, api.github.com): the path must match one of
 * its path templates with that method, and a JSON body must carry the operation's required
 * fields with values of the declared types and enums. A request that does not is answered 404
 * or 422 and recorded with what was wrong, so a test sees it.
 *
 * Calls are kept per bearer token (each test's hook has its own token), with the comments each
 * issue holds. A token starting `bad-` is answered `401 Bad credentials`, one starting `flaky-`
 * `502` once per path, one starting `reset-` a rate-limit 403 (`x-ratelimit-reset`
 * {@link RATE_LIMIT_WAIT_SECONDS} ahead) once per path, `limited-` a rate-limit `403` with
 * `Retry-After: 1` once per path, and `missing-` `404`, as GitHub would. `GET /_calls/<token>`
 * lists a token's calls. `POST /_apps` registers a GitHub App (`fake-github-app.ts`): its
 * installation and token endpoints take only a JWT signed by the app's key, and every call it
 * or its installation tokens make is also listed under `GET /_calls/app-<appId>`.
 */
import { readFile } from "node:fs/promises";
import { createServer, type IncomingMessage } from "node:http";
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import type { TestProject } from "vitest/node";
import { FakeApps } from "./fake-github-app.ts";

declare module "vitest" {
  export interface ProvidedContext {
    fakeGithubUrl: string;
  }
}

type Schema = {
  $ref?: string;
  type?: string | string[];
  enum?: unknown[];
  required?: string[];
  properties?: Record<string, Schema>;
  oneOf?: Schema[];
  anyOf?: Schema[];
};
type Operation = { requestBody?: { content?: Record<string, { schema?: Schema }> } };
type Spec = {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema> };
};

/** A call as the fake received it, with any contract violations found. */
export type FakeGithubCall = {
  method: string;
  path: string;
  template: string | null;
  body: unknown;
  violations: string[];
  status: number;
  /** When it arrived (ms since the epoch). */
  at: number;
};

/** How long a `reset-` token's rate limit lasts (`x-ratelimit-reset`). */
export const RATE_LIMIT_WAIT_SECONDS = 5;

async function bodyOf(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) {
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString("utf8");
}

function templateRegExp(template: string): RegExp {
  const pattern = template.replace(/[.*+?^$()|[\]\\]/g, "\\$&").replace(/\{[^}]+\}/g, "[^/]+");
  return new RegExp(`^${pattern}$`);
}

function resolve(spec: Spec, schema: Schema | undefined): Schema | undefined {
  const ref = schema?.$ref;
  if (!ref) {
    return schema;
  }
  const name = ref.replace("#/components/schemas/", "");
  return spec.components.schemas[name];
}

function typeOk(type: string | string[] | undefined, value: unknown): boolean {
  if (type === undefined || value === null) {
    return true;
  }
  const types = Array.isArray(type) ? type : [type];
  const actual = Array.isArray(value) ? "array" : typeof value;
  return types.some(
    (t) =>
      t === actual ||
      (t === "integer" && Number.isInteger(value)) ||
      (t === "number" && actual === "number"),
  );
}

/** What is wrong with `body` for the operation's JSON schema: required fields, types, enums. */
function violations(spec: Spec, operation: Operation, body: unknown): string[] {
  const schema = resolve(spec, operation.requestBody?.content?.["application/json"]?.schema);
  if (!schema) {
    return body === undefined ? [] : ["the operation takes no JSON body"];
  }
  if (typeof body !== "object" || body === null) {
    return ["the body is not a JSON object"];
  }
  const record = body as Record<string, unknown>;
  const found: string[] = [];
  for (const field of schema.required ?? []) {
    if (!(field in record)) {
      found.push(`required field ${field} is missing`);
    }
  }
  for (const [field, value] of Object.entries(record)) {
    const property = resolve(spec, schema.properties?.[field]);
    if (!property) {
      found.push(`field ${field} is not in the schema`);
      continue;
    }
    if (!typeOk(property.type, value)) {
      found.push(`field ${field} is not of type ${String(property.type)}`);
    }
    if (property.enum && !property.enum.includes(value)) {
      found.push(
        `field ${field} is ${JSON.stringify(value)}, not one of ${property.enum.join(", ")}`,
      );
    }
  }
  return found;
}

/** The comments of one issue, paged as GitHub pages them (`per_page`, `page`). */
function page<T>(list: T[], query: URLSearchParams): T[] {
  const size = Math.min(100, Number(query.get("per_page") ?? 30) || 30);
  const at = Math.max(1, Number(query.get("page") ?? 1) || 1);
  return list.slice((at - 1) * size, at * size);
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const require = createRequire(import.meta.url);
  const file = require.resolve("@octokit/openapi/generated/api.github.com.json");
  const spec = JSON.parse(await readFile(file, "utf8")) as Spec;
  const templates = Object.keys(spec.paths).map((t) => ({ t, re: templateRegExp(t) }));
  const calls = new Map<string, FakeGithubCall[]>();
  const comments = new Map<string, { id: number; body: string }[]>();
  const failedOnce = new Set<string>();
  const apps = new FakeApps();
  let nextId = 1000;

  const record = (key: string, call: FakeGithubCall) =>
    calls.set(key, [...(calls.get(key) ?? []), call]);

  const server = createServer(async (req, res) => {
    const url = new URL(req.url ?? "/", "http://fake");
    const raw = await bodyOf(req);
    const answer = (status: number, json: unknown, headers: Record<string, string> = {}) => {
      res
        .writeHead(status, { "content-type": "application/json", ...headers })
        .end(JSON.stringify(json));
      return status;
    };
    if (url.pathname.startsWith("/_calls/")) {
      answer(200, calls.get(decodeURIComponent(url.pathname.slice(8))) ?? []);
      return;
    }
    if (url.pathname === "/_apps" && req.method === "POST") {
      const options = (raw ? JSON.parse(raw) : {}) as { tokenLifetimeSeconds?: number };
      answer(201, apps.register(options.tokenLifetimeSeconds));
      return;
    }
    const method = (req.method ?? "GET").toLowerCase();
    const body = raw ? (JSON.parse(raw) as unknown) : undefined;
    const token = (req.headers.authorization ?? "").replace(/^Bearer /, "");
    const match = templates.find(({ t, re }) => re.test(url.pathname) && spec.paths[t]?.[method]);
    const operation = match ? spec.paths[match.t]?.[method] : undefined;
    const found = operation ? violations(spec, operation, body) : ["no such operation"];
    const call: FakeGithubCall = {
      method: method.toUpperCase(),
      path: url.pathname,
      template: match?.t ?? null,
      body,
      violations: found,
      status: 0,
      at: Date.now(),
    };
    record(token, call);
    const asApp = match?.t.startsWith("/app/") || match?.t === "/repos/{owner}/{repo}/installation";
    const identity = asApp ? await apps.appOf(token) : apps.tokenOn(token, url.pathname);
    if (identity && "appId" in identity) {
      record(`app-${identity.appId}`, call);
    }
    call.status = ((): number => {
      if (!operation) {
        return answer(404, { message: "Not Found" });
      }
      if (found.length > 0) {
        return answer(422, { message: `Validation Failed: ${found.join("; ")}` });
      }
      if (identity && "error" in identity) {
        return answer(401, { message: identity.error });
      }
      if (identity && "status" in identity) {
        return answer(identity.status, { message: identity.message });
      }
      if (asApp && identity) {
        return serveApp(identity.appId, url.pathname, body, answer);
      }
      if (token.startsWith("bad-") || token === "") {
        return answer(401, { message: "Bad credentials" });
      }
      const key = `${token} ${method} ${url.pathname}`;
      if (token.startsWith("flaky-") && !failedOnce.has(key)) {
        failedOnce.add(key);
        return answer(502, { message: "Server Error" });
      }
      if (token.startsWith("reset-") && !failedOnce.has(key)) {
        failedOnce.add(key);
        const reset = Math.floor(Date.now() / 1000) + RATE_LIMIT_WAIT_SECONDS;
        return answer(
          403,
          { message: "API rate limit exceeded for installation." },
          { "x-ratelimit-remaining": "0", "x-ratelimit-reset": String(reset) },
        );
      }
      if (token.startsWith("limited-") && !failedOnce.has(key)) {
        failedOnce.add(key);
        return answer(
          403,
          { message: "API rate limit exceeded for user ID 1." },
          { "retry-after": "1" },
        );
      }
      if (token.startsWith("missing-")) {
        return answer(404, { message: "Not Found" });
      }
      return serve(method, url, body as { body?: string } | undefined, answer);
    })();
  });

  /** The installation of an app and its access tokens. */
  function serveApp(
    appId: number,
    path: string,
    body: unknown,
    reply: (status: number, json: unknown) => number,
  ): number {
    const installationId = apps.installationOf(appId);
    if (path.endsWith("/installation")) {
      return reply(200, { id: installationId, app_id: appId, target_type: "Organization" });
    }
    const asked = /^\/app\/installations\/(\d+)\/access_tokens$/.exec(path);
    if (!asked || Number(asked[1]) !== installationId) {
      return reply(404, { message: "Not Found" });
    }
    const repositories = (body as { repositories?: string[] } | undefined)?.repositories ?? [];
    return reply(201, {
      ...apps.mint(appId, repositories),
      permissions: { statuses: "write", pull_requests: "write" },
      repository_selection: "selected",
    });
  }

  function serve(
    method: string,
    url: URL,
    body: { body?: string } | undefined,
    reply: (status: number, json: unknown) => number,
  ): number {
    const path = url.pathname;
    const issue = /^\/repos\/([^/]+\/[^/]+)\/issues\/(\d+)\/comments$/.exec(path);
    const edit = /^\/repos\/[^/]+\/[^/]+\/issues\/comments\/(\d+)$/.exec(path);
    if (issue && method === "get") {
      return reply(200, page(comments.get(path) ?? [], url.searchParams));
    }
    if (issue && method === "post") {
      const comment = { id: nextId++, body: body?.body ?? "" };
      comments.set(path, [...(comments.get(path) ?? []), comment]);
      return reply(201, comment);
    }
    if (edit && method === "patch") {
      for (const list of comments.values()) {
        const comment = list.find((c) => c.id === Number(edit[1]));
        if (comment) {
          comment.body = body?.body ?? "";
          return reply(200, comment);
        }
      }
      return reply(404, { message: "Not Found" });
    }
    return reply(201, { id: nextId++, ...(body ?? {}) });
  }

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  project.provide("fakeGithubUrl", `http://127.0.0.1:${port}`);
  return () => new Promise<void>((resolve) => server.close(() => resolve()));
}
