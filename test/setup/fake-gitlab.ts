/**
 * Vitest global setup: a loopback GitLab REST API (v4) for VCS feedback. GitLab publishes no
 * OpenAPI description of these calls, so each request is checked against the parameters its
 * REST docs list ("Commits: set the pipeline status of a commit": `state` one of pending,
 * running, success, failed, canceled, skipped; `ref`, `name`/`context`, `target_url`,
 * `description`, `coverage`, `pipeline_id`; "Notes: merge requests": list, create and modify a
 * note, `body` required). A request that does not fit is answered 400 (404 for an endpoint
 * GitLab does not have) and recorded with what was wrong. Calls are kept per `PRIVATE-TOKEN`
 * (`GET /_calls/<token>`); a token starting `bad-` is answered `401 Unauthorized`.
 */
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import type { TestProject } from "vitest/node";

declare module "vitest" {
  export interface ProvidedContext {
    fakeGitlabUrl: string;
  }
}

/** A call as the fake received it, with any departures from GitLab's documented parameters. */
export type FakeGitlabCall = {
  method: string;
  path: string;
  template: string | null;
  body: unknown;
  violations: string[];
  status: number;
};

const STATUS_FIELDS = [
  "state",
  "ref",
  "name",
  "context",
  "target_url",
  "description",
  "coverage",
  "pipeline_id",
];
const STATES = ["pending", "running", "success", "failed", "canceled", "skipped"];
/** GitLab's longest note (characters). */
const NOTE_MAX = 1_000_000;

async function bodyOf(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) {
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString("utf8");
}

function statusViolations(record: Record<string, unknown>): string[] {
  const found = Object.keys(record)
    .filter((k) => !STATUS_FIELDS.includes(k))
    .map((k) => `parameter ${k} is not documented`);
  if (!STATES.includes(String(record.state))) {
    found.push(`state ${JSON.stringify(record.state)} is not one of ${STATES.join(", ")}`);
  }
  for (const field of ["name", "target_url", "description"]) {
    if (field in record && typeof record[field] !== "string") {
      found.push(`parameter ${field} is not a string`);
    }
  }
  return found;
}

function noteViolations(record: Record<string, unknown>): string[] {
  const found = Object.keys(record)
    .filter((k) => !["body", "internal", "created_at", "merge_request_diff_head_sha"].includes(k))
    .map((k) => `parameter ${k} is not documented`);
  if (typeof record.body !== "string" || record.body.length === 0) {
    found.push("parameter body is required");
  } else if (record.body.length > NOTE_MAX) {
    found.push(`body is longer than ${NOTE_MAX} characters`);
  }
  return found;
}

/** The documented endpoint a request names, and what is wrong with its parameters. */
export function gitlabViolations(
  method: string,
  path: string,
  body: unknown,
): { template: string | null; violations: string[] } {
  const record = (body ?? {}) as Record<string, unknown>;
  if (method === "post" && /^\/api\/v4\/projects\/[^/]+\/statuses\/[0-9a-f]{40}$/.test(path)) {
    return { template: "/projects/:id/statuses/:sha", violations: statusViolations(record) };
  }
  const notes = /^\/api\/v4\/projects\/[^/]+\/merge_requests\/\d+\/notes(\/\d+)?$/.exec(path);
  const list = method === "get" && !notes?.[1];
  const create = method === "post" && !notes?.[1];
  const modify = method === "put" && notes?.[1];
  if (notes && (list || create || modify)) {
    return {
      template: `/projects/:id/merge_requests/:merge_request_iid/notes${notes[1] ? "/:note_id" : ""}`,
      violations: list ? [] : noteViolations(record),
    };
  }
  return { template: null, violations: ["no such GitLab endpoint"] };
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const calls = new Map<string, FakeGitlabCall[]>();
  const notes = new Map<string, { id: number; body: string }[]>();
  let nextId = 5000;

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
    const token = String(req.headers["private-token"] ?? "");
    const found = gitlabViolations(method, url.pathname, body);
    const call: FakeGitlabCall = {
      method: method.toUpperCase(),
      path: url.pathname,
      template: found.template,
      body,
      violations: found.violations,
      status: 0,
    };
    calls.set(token, [...(calls.get(token) ?? []), call]);
    call.status = ((): number => {
      if (found.template === null) {
        return answer(404, { message: "404 Not Found" });
      }
      if (found.violations.length > 0) {
        return answer(400, { message: found.violations.join("; ") });
      }
      if (token === "" || token.startsWith("bad-")) {
        return answer(401, { message: "401 Unauthorized" });
      }
      return serve(method, url, (body ?? {}) as { body?: string }, answer);
    })();
  });

  function serve(
    method: string,
    url: URL,
    body: { body?: string },
    reply: (status: number, json: unknown) => number,
  ): number {
    const list = /^(.*\/notes)(?:\/(\d+))?$/.exec(url.pathname);
    if (!list?.[1]) {
      return reply(201, { id: nextId++, status: (body as { state?: string }).state });
    }
    const key = list[1];
    const existing = notes.get(key) ?? [];
    if (method === "get") {
      const size = Math.min(100, Number(url.searchParams.get("per_page") ?? 20) || 20);
      const at = Math.max(1, Number(url.searchParams.get("page") ?? 1) || 1);
      return reply(200, existing.slice((at - 1) * size, at * size));
    }
    if (method === "post") {
      const note = { id: nextId++, body: body.body ?? "" };
      notes.set(key, [...existing, note]);
      return reply(201, note);
    }
    const note = existing.find((n) => n.id === Number(list[2]));
    if (!note) {
      return reply(404, { message: "404 Not found" });
    }
    note.body = body.body ?? "";
    return reply(200, note);
  }

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  project.provide("fakeGitlabUrl", `http://127.0.0.1:${port}`);
  return () => new Promise<void>((resolve) => server.close(() => resolve()));
}
