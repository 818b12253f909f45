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
 * `502` once per path, `limited-` a rate-limit `403` with `Retry-After: 1` once per path, and
 * `missing-` `404`, as GitHub would (GitLab: `bad-` is `401 Unauthorized`). `GET /_calls/<token>`
 * lists a token's calls.
 */
import { readFile } from "node:fs/promises";
import { createServer, type IncomingMessage } from "node:http";
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import type { TestProject } from "vitest/node";

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
};

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

/**
 * GitLab has no published OpenAPI description of these calls; its REST docs ("Commits: set the
 * pipeline status of a commit", "Notes: merge requests") list the parameters checked here.
 */
const GITLAB_STATUS_FIELDS = [
  "state",
  "ref",
  "name",
  "context",
  "target_url",
  "description",
  "coverage",
  "pipeline_id",
];
const GITLAB_STATES = ["pending", "running", "success", "failed", "canceled", "skipped"];

function gitlabViolations(
  method: string,
  path: string,
  body: unknown,
): { template: string | null; violations: string[] } {
  const record = (body ?? {}) as Record<string, unknown>;
  if (method === "post" && /^\/api\/v4\/projects\/[^/]+\/statuses\/[0-9a-f]{40}$/.test(path)) {
    const violations = Object.keys(record)
      .filter((k) => !GITLAB_STATUS_FIELDS.includes(k))
      .map((k) => `parameter ${k} is not documented`);
    if (!GITLAB_STATES.includes(String(record.state))) {
      violations.push(
        `state ${JSON.stringify(record.state)} is not one of ${GITLAB_STATES.join(", ")}`,
      );
    }
    return { template: "/projects/:id/statuses/:sha", violations };
  }
  const notes = /^\/api\/v4\/projects\/[^/]+\/merge_requests\/\d+\/notes(\/\d+)?$/.exec(path);
  if (
    notes &&
    (method === "get" || (method === "post" && !notes[1]) || (method === "put" && notes[1]))
  ) {
    const needsBody = method !== "get";
    const violations =
      needsBody && typeof record.body !== "string" ? ["parameter body is required"] : [];
    return {
      template: `/projects/:id/merge_requests/:merge_request_iid/notes${notes[1] ? "/:note_id" : ""}`,
      violations,
    };
  }
  return { template: null, violations: ["no such GitLab endpoint"] };
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const require = createRequire(import.meta.url);
  const file = require.resolve("@octokit/openapi/generated/api.github.com.json");
  const spec = JSON.parse(await readFile(file, "utf8")) as Spec;
  const templates = Object.keys(spec.paths).map((t) => ({ t, re: templateRegExp(t) }));
  const calls = new Map<string, FakeGithubCall[]>();
  const comments = new Map<string, { id: number; body: string }[]>();
  const failedOnce = new Set<string>();
  let nextId = 1000;

  const server = createServer(async (req, res) => {
    const url = new URL(req.url ?? "/", "http://fake");
    const raw = await bodyOf(req);
    const answer = (status: number, json: unknown) => {
      res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(json));
      return status;
    };
    if (url.pathname.startsWith("/_calls/")) {
      answer(200, calls.get(decodeURIComponent(url.pathname.slice(8))) ?? []);
      return;
    }
    const method = (req.method ?? "GET").toLowerCase();
    const body = raw ? (JSON.parse(raw) as unknown) : undefined;
    if (url.pathname.startsWith("/api/v4/")) {
      const gitlabToken = String(req.headers["private-token"] ?? "");
      const found = gitlabViolations(method, url.pathname, body);
      const call: FakeGithubCall = {
        method: method.toUpperCase(),
        path: url.pathname,
        template: found.template,
        body,
        violations: found.violations,
        status: 0,
      };
      calls.set(gitlabToken, [...(calls.get(gitlabToken) ?? []), call]);
      call.status =
        found.template === null
          ? answer(404, { message: "404 Not Found" })
          : found.violations.length > 0
            ? answer(400, { message: found.violations.join("; ") })
            : gitlabToken.startsWith("bad-")
              ? answer(401, { message: "401 Unauthorized" })
              : serve(method, url.pathname, body as { body?: string } | undefined, answer);
      return;
    }
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
    };
    calls.set(token, [...(calls.get(token) ?? []), call]);
    call.status = ((): number => {
      if (!operation) {
        return answer(404, { message: "Not Found" });
      }
      if (found.length > 0) {
        return answer(422, { message: `Validation Failed: ${found.join("; ")}` });
      }
      if (token.startsWith("bad-") || token === "") {
        return answer(401, { message: "Bad credentials" });
      }
      const key = `${token} ${method} ${url.pathname}`;
      if (token.startsWith("flaky-") && !failedOnce.has(key)) {
        failedOnce.add(key);
        return answer(502, { message: "Server Error" });
      }
      if (token.startsWith("limited-") && !failedOnce.has(key)) {
        failedOnce.add(key);
        res.setHeader("retry-after", "1");
        return answer(403, { message: "API rate limit exceeded for user ID 1." });
      }
      if (token.startsWith("missing-")) {
        return answer(404, { message: "Not Found" });
      }
      return serve(method, url.pathname, body as { body?: string } | undefined, answer);
    })();
  });

  function serve(
    method: string,
    path: string,
    body: { body?: string } | undefined,
    reply: (status: number, json: unknown) => number,
  ): number {
    const issue =
      /^\/repos\/([^/]+\/[^/]+)\/issues\/(\d+)\/comments$/.exec(path) ??
      /^\/api\/v4\/projects\/[^/]+\/merge_requests\/\d+\/notes$/.exec(path);
    const edit =
      /^\/repos\/[^/]+\/[^/]+\/issues\/comments\/(\d+)$/.exec(path) ??
      /^\/api\/v4\/projects\/[^/]+\/merge_requests\/\d+\/notes\/(\d+)$/.exec(path);
    if (issue && method === "get") {
      return reply(200, comments.get(path) ?? []);
    }
    if (issue && method === "post") {
      const comment = { id: nextId++, body: body?.body ?? "" };
      comments.set(path, [...(comments.get(path) ?? []), comment]);
      return reply(201, comment);
    }
    if (edit && (method === "patch" || method === "put")) {
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
