/**
 * Bounded fuzzing of every route of the app (enumerated from `newApp(systemClock).routes`): 1,500 random and
 * mutated requests — JSON bodies, headers, methods, tarballs, state bodies, webhook payloads, log
 * chunks at wrong offsets, dashboard forms (urlencoded and multipart, well-formed with the
 * session's CSRF token, malformed, oversized, of the wrong type) — with valid, foreign, revoked
 * and garbage credentials and a signed-in dashboard session, from a seeded PRNG so a failure
 * replays. Never a 5xx; and every refused (4xx) request leaves D1 and the pool queues exactly as
 * they were.
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import type { JobAssignment } from "@outpost/protocol";
import { beforeAll, describe, expect, it } from "vitest";
import { newApp } from "../../src/app.ts";
import { systemClock } from "../../src/deps.ts";
import { poolStub } from "../../src/pools/service.ts";
import { BASE, request, requestJson } from "./helpers/api.ts";
import { snapshotD1 } from "./helpers/d1-snapshot.ts";
import { seedOrg, type TestOrg } from "./helpers/fixtures.ts";
import { addTrust, TestIssuer } from "./helpers/oidc.ts";
import { queueRun, runnableWorkspace, TestAgent } from "./helpers/runs.ts";
import { md5Base64, seedWorkspace, stateJson } from "./helpers/state-fixtures.ts";
import { tarGz } from "./helpers/tarball.ts";
import { csrfOf, setCookieValue, signIn, uiFetch } from "./helpers/ui.ts";

/** mulberry32: small and seedable. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Route = { method: string; path: string };

/** Every distinct route the app serves, middleware-only entries excluded. */
function appRoutes(): Route[] {
  const seen = new Map<string, Route>();
  for (const r of newApp(systemClock).routes) {
    if (r.path === "/*" || r.path.endsWith("/*") || r.path === "*") {
      continue;
    }
    seen.set(`${r.method} ${r.path}`, { method: r.method, path: r.path });
  }
  return [...seen.values()];
}

type Fixtures = {
  org: TestOrg;
  other: TestOrg;
  ids: Record<string, string[]>;
  tokens: (string | null)[];
  agentToken: string;
  agentId: string;
  job: JobAssignment;
  hookSecret: string;
  poolIds: string[];
  stateBody: string;
  /** JWTs of the trusted loopback issuer that every trust refuses (sub, aud, exp). */
  oidcTokens: string[];
  /** A signed-in dashboard session (an admin's) and the sign-in form's CSRF cookie. */
  ui: { cookie: string; csrf: string; loginCsrf: string };
};

let fx: Fixtures;

beforeAll(async () => {
  const org = await seedOrg();
  const other = await seedOrg();
  const runnable = await runnableWorkspace(org);
  // The fuzzing runs for minutes: the agent must not turn unknown by the pool's own alarm in
  // the middle of a request, which would look like that request changing the pool.
  const slow = await requestJson(`/api/v1/pools/${runnable.poolId}`, {
    method: "PATCH",
    token: org.tokens.owner,
    body: { unknownAfterSeconds: 3600 },
  });
  expect(slow.status, JSON.stringify(slow.body)).toBe(200);
  const agent = await TestAgent.register(runnable.agentToken);
  const queued = await queueRun(org, runnable.workspace.id);
  expect(queued.status).toBe(201);
  const job = await agent.lease();
  await agent.start(job);
  // A second queued run stays in the pool's queue, so a wrongly mutating request would show.
  const waiting = await runnableWorkspace(org);
  expect((await queueRun(org, waiting.workspace.id)).status).toBe(201);
  const localWs = await seedWorkspace(org);
  const stateBody = stateJson({ serial: 1, lineage: "fuzz-lineage" });
  const put = await request(`/state/v1/${localWs}`, {
    method: "POST",
    token: org.tokens.admin,
    body: stateBody,
    headers: {
      "content-type": "application/json",
      "content-md5": await md5Base64(new TextEncoder().encode(stateBody)),
    },
  });
  expect(put.status).toBe(200);
  const hook = await requestJson<{ id: string; secret: string }>("/api/v1/vcs-hooks", {
    method: "POST",
    token: org.tokens.admin,
    body: { provider: "github", repoUrl: null },
  });
  expect(hook.status, JSON.stringify(hook.body)).toBe(201);
  const tokens = await requestJson<{ tokens: { id: string }[] }>("/api/v1/tokens", {
    token: org.tokens.owner,
  });
  const runs = await requestJson<{ runs: { id: string }[] }>(
    `/api/v1/workspaces/${runnable.workspace.id}/runs`,
    { token: org.tokens.reader },
  );
  const foreign = await runnableWorkspace(other);
  // A pool that trusts a loopback issuer, so exchanges reach its discovery and JWKS.
  const issuer = await TestIssuer.create("fuzz");
  const trust = await addTrust(org, runnable.poolId, {
    issuer: issuer.url,
    audience: "fuzz",
    claims: { sub: "fuzz:*" },
  });
  const oidcTokens = [
    await issuer.sign({ aud: "fuzz", sub: "other" }),
    await issuer.sign({ aud: "nope", sub: "fuzz:1" }),
    await issuer.sign({ aud: "fuzz", sub: "fuzz:1", exp: 1 }),
  ];
  const session = await signIn(org.tokens.admin);
  const loginPage = await uiFetch("/ui/login");
  fx = {
    ui: {
      cookie: `${session.cookie}; outpost_login_csrf=${setCookieValue(loginPage, "outpost_login_csrf")}`,
      csrf: session.csrf,
      loginCsrf: csrfOf(await loginPage.text()),
    },
    org,
    other,
    agentToken: runnable.agentToken,
    agentId: agent.agentId,
    job,
    hookSecret: hook.body.secret,
    poolIds: [runnable.poolId, waiting.poolId],
    stateBody,
    oidcTokens,
    tokens: [
      org.tokens.owner,
      org.tokens.admin,
      org.tokens.member,
      org.tokens.reader,
      org.revokedToken,
      other.tokens.owner,
      runnable.agentToken,
      foreign.agentToken,
      job.runToken ?? null,
      "op_org_0000000000000000000000000000000000000000",
      "op_run_not-a-token",
      "",
      null,
    ],
    ids: {
      workspace: [runnable.workspace.id, waiting.workspace.id, localWs, foreign.workspace.id],
      pool: [runnable.poolId, waiting.poolId, foreign.poolId],
      run: [job.runId, ...(runs.body.runs ?? []).map((r) => r.id)],
      job: [job.jobId, `${job.runId}:apply`],
      lease: [job.leaseId],
      token: (tokens.body.tokens ?? []).map((t) => t.id),
      hook: [hook.body.id],
      trust: [trust.id],
      configurationVersion: [runnable.configurationVersionId],
      key: ["FUZZ_VAR", "a", "AWS_SECRET"],
      name: ["plan.tfplan", "terraform.lock.hcl", "plan.json"],
    },
  };
});

const JUNK_IDS = [
  "x",
  "run_aaaaaaaaaaaaaaaaaaaaaaaaaa",
  "ws_",
  "%2e%2e%2f%2e%2e",
  "..",
  "a".repeat(600),
  "ünïcødé",
  "run_aaaaaaaaaaaaaaaaaaaaaaaaaa%3Aplan",
  "0",
  "-1",
  "null",
  "%00",
];

function pick<T>(rand: () => number, items: readonly T[]): T {
  return items[Math.floor(rand() * items.length)] as T;
}

/** Which fixture ids fit a path parameter, from its name and the path around it. */
function idsFor(param: string, path: string): string[] {
  const name = param.toLowerCase();
  const table: [string, string][] = [
    ["workspace", "workspace"],
    ["pool", "pool"],
    ["runid", "run"],
    ["jobid", "job"],
    ["lease", "lease"],
    ["tokenid", "token"],
    ["hook", "hook"],
    ["trust", "trust"],
    ["key", "key"],
    ["name", "name"],
    ["configuration", "configurationVersion"],
  ];
  for (const [needle, kind] of table) {
    if (name.includes(needle)) {
      return fx.ids[kind] ?? [];
    }
  }
  if (name === "id") {
    for (const kind of ["workspace", "pool", "token", "hook", "run"]) {
      if (path.includes(kind)) {
        return fx.ids[kind] ?? [];
      }
    }
  }
  return Object.values(fx.ids).flat();
}

function fillPath(rand: () => number, path: string): string {
  return path.replace(/:(\w+)(\{[^}]*\})?/g, (_, param: string) => {
    const value = rand() < 0.75 ? pick(rand, idsFor(param, path)) : pick(rand, JUNK_IDS);
    return value.includes("%") ? value : safeEncode(value ?? "x");
  });
}

const FIELDS = [
  "name",
  "description",
  "role",
  "executionMode",
  "poolId",
  "engine",
  "engineVersion",
  "autoApply",
  "operation",
  "isSpeculative",
  "value",
  "category",
  "sensitive",
  "running",
  "outcome",
  "exitCode",
  "planSummary",
  "capacity",
  "acceptedPhases",
  "version",
  "os",
  "arch",
  "provider",
  "repoUrl",
  "unknownAfterSeconds",
  "reason",
  "graceSeconds",
  "workingDirectory",
  "vcs",
  "issuer",
  "audience",
  "claims",
  "oidcToken",
  "tokenExpirationSeconds",
  "workloadIdentity",
  "workloadIdentityAudience",
  "maxTokenExpirationSeconds",
  "__proto__",
];

function randomValue(rand: () => number, depth = 0): unknown {
  const kind = Math.floor(rand() * 12);
  switch (kind) {
    case 0:
      return null;
    case 1:
      return rand() < 0.5;
    case 2:
      return Math.floor(rand() * 200) - 50;
    case 3:
      return pick(rand, [1e308, -0, 2 ** 53 + 1, 0.5, Number.MAX_SAFE_INTEGER]);
    case 4:
      return "x".repeat(Math.floor(rand() * 3000));
    case 5:
      return pick(rand, ["plan", "apply", "agent", "local", "terraform", "tofu", "env", "owner"]);
    case 6:
      return pick(rand, [...Object.values(fx.ids).flat(), ...JUNK_IDS]);
    case 7:
      return depth > 2 ? [] : [randomValue(rand, depth + 1), randomValue(rand, depth + 1)];
    case 8:
      return depth > 2 ? {} : randomObject(rand, depth + 1);
    case 9:
      return rand() < 0.5
        ? { jobId: fx.job.jobId, leaseId: fx.job.leaseId }
        : pick(rand, [...fx.oidcTokens, "http://127.0.0.1:1/x", { sub: "fuzz:*" }]);
    case 10:
      return "\u0000\ud800<script>";
    default:
      return "";
  }
}

function randomObject(rand: () => number, depth = 0): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const n = Math.floor(rand() * 6);
  for (let i = 0; i < n; i++) {
    out[pick(rand, FIELDS)] = randomValue(rand, depth);
  }
  return out;
}

async function githubSignature(body: Uint8Array): Promise<string> {
  const key = await crypto.subtle.importKey(
    "raw",
    new TextEncoder().encode(fx.hookSecret),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, body));
  return `sha256=${[...mac].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
}

/** A random value as text (an object built with a `__proto__` key has no toString). */
function asText(value: unknown): string {
  return typeof value === "string" ? value : (JSON.stringify(value) ?? "");
}

/** Percent-encodes; a lone surrogate becomes a malformed escape, itself a fine input. */
function safeEncode(value: string): string {
  try {
    return encodeURIComponent(value);
  } catch {
    return "%E0%A4%A";
  }
}

type Built = { method: string; path: string; headers: Record<string, string>; body?: Uint8Array };

const METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "LOCK", "UNLOCK"];
const encoder = new TextEncoder();

async function buildRequest(rand: () => number, route: Route): Promise<Built> {
  const method =
    route.method === "ALL" || rand() < 0.15 ? pick(rand, METHODS) : route.method.toUpperCase();
  let path = fillPath(rand, route.path);
  const headers: Record<string, string> = {};
  const token = pick(rand, fx.tokens);
  if (token !== null) {
    headers.authorization =
      rand() < 0.2 ? `Basic ${btoa(`terraform:${token}`)}` : `Bearer ${token}`;
  }
  if (rand() < 0.1) {
    headers.authorization = pick(rand, [
      "Bearer",
      "Basic !!!",
      "Token x",
      `Bearer ${"a".repeat(5000)}`,
    ]);
  }
  if (path.startsWith("/agent/") && rand() < 0.8) {
    headers["outpost-agent-id"] =
      rand() < 0.7
        ? fx.agentId
        : pick(
            rand,
            JUNK_IDS.filter((id) => /^[\x20-\x7e]*$/.test(id)),
          );
  }
  // A long-poll is never allowed to hold the fuzzer: wait is 0 or invalid.
  if (path.endsWith("/jobs/next")) {
    path += `?wait=${pick(rand, ["0", "-1", "abc", "", "1e9x"])}`;
  } else if (rand() < 0.4) {
    const q = pick(rand, ["offset", "phase", "limit", "ID", "cursor", "pageSize", "wait"]);
    path += `?${q}=${safeEncode(asText(randomValue(rand)))}`;
  }
  if (path.startsWith("/ui/")) {
    const ui = uiRequest(rand, path);
    return method === "GET" || method === "HEAD"
      ? { method, path, headers: ui.headers }
      : { method, path, ...ui };
  }
  let body: Uint8Array | undefined;
  const kind = Math.floor(rand() * 8);
  if (path.endsWith("/oidc/exchange") && rand() < 0.6) {
    // Well-formed exchanges with tokens every trust refuses: past validation, into verification.
    const exchange = {
      poolId: pick(rand, fx.ids.pool ?? []),
      oidcToken: pick(rand, [...fx.oidcTokens, "a.b.c", "x".repeat(100)]),
      tokenExpirationSeconds: pick(rand, [10, 3600, 86_400]),
    };
    body = encoder.encode(JSON.stringify(exchange));
    headers["content-type"] = "application/json";
  } else if (kind === 0) {
    body = encoder.encode(JSON.stringify(randomObject(rand)));
    headers["content-type"] = "application/json";
  } else if (kind === 1) {
    body = encoder.encode(pick(rand, ['{"a":', "[]", "null", '"x"', "1e999", "{}", "\u0000"]));
    headers["content-type"] = pick(rand, ["application/json", "text/plain"]);
  } else if (kind === 2) {
    const good = await tarGz([{ name: "main.tf", body: 'resource "null_resource" "x" {}\n' }]);
    body = rand() < 0.5 ? good : good.slice(0, Math.floor(rand() * good.length));
    headers["content-type"] = "application/gzip";
  } else if (kind === 3) {
    const text =
      rand() < 0.5
        ? stateJson({ serial: Math.floor(rand() * 4), lineage: pick(rand, ["fuzz-lineage", "x"]) })
        : fx.stateBody.slice(0, Math.floor(rand() * fx.stateBody.length));
    body = encoder.encode(text);
    headers["content-type"] = "application/json";
    if (rand() < 0.6) {
      headers["content-md5"] = rand() < 0.5 ? await md5Base64(body) : "AAAAAAAAAAAAAAAAAAAAAA==";
    }
  } else if (kind === 4) {
    const payload = {
      ref: pick(rand, ["refs/heads/main", "refs/tags/v1", 5, null]),
      after: pick(rand, ["0".repeat(40), "zz", null]),
      repository: randomObject(rand),
      pull_request: rand() < 0.3 ? randomObject(rand) : undefined,
    };
    body = encoder.encode(JSON.stringify(payload));
    headers["content-type"] = "application/json";
    headers["x-github-event"] = pick(rand, ["push", "pull_request", "ping", "issues", ""]);
    headers["x-github-delivery"] = crypto.randomUUID();
    headers["x-hub-signature-256"] =
      rand() < 0.5 ? await githubSignature(body) : `sha256=${"0".repeat(64)}`;
    headers["x-gitlab-token"] = rand() < 0.5 ? fx.hookSecret : "nope";
  } else if (kind === 5) {
    body = new Uint8Array(Math.floor(rand() * 4096)).map(() => Math.floor(rand() * 256));
    headers["content-type"] = pick(rand, ["application/octet-stream", "text/plain", "x/y"]);
  } else if (kind === 6 && path.includes("/logs")) {
    body = encoder.encode("log line\n".repeat(Math.floor(rand() * 50)));
    headers["content-type"] = "application/octet-stream";
  }
  if (method === "GET" || method === "HEAD") {
    body = undefined;
  }
  return { method, path, headers, ...(body ? { body } : {}) };
}

const BOUNDARY = "fuzz-boundary-7f3a";

/** Random form fields, sometimes with the right CSRF token for the form. */
function formFields(rand: () => number, path: string): [string, string][] {
  const fields: [string, string][] = [];
  if (rand() < 0.7) {
    fields.push(["_csrf", path === "/ui/login" ? fx.ui.loginCsrf : fx.ui.csrf]);
  }
  const n = Math.floor(rand() * 4);
  for (let i = 0; i < n; i++) {
    const text = asText(randomValue(rand));
    fields.push([pick(rand, [...FIELDS, "token", "confirm", "key", "message"]), text]);
  }
  return fields;
}

function multipart(fields: [string, string][], fileField: string | null): string {
  const parts = fields.map(
    ([name, value]) =>
      `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`,
  );
  if (fileField) {
    parts.push(
      `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${fileField}"; filename="x.bin"\r\nContent-Type: application/octet-stream\r\n\r\n\u0000\u0001\r\n`,
    );
  }
  return `${parts.join("")}--${BOUNDARY}--\r\n`;
}

/** A dashboard request: the session cookie most of the time, and a form body of some kind. */
function uiRequest(rand: () => number, path: string): Omit<Built, "method" | "path"> {
  const headers: Record<string, string> = {};
  if (rand() < 0.85) {
    headers.cookie = fx.ui.cookie;
  }
  const fields = formFields(rand, path);
  const kind = Math.floor(rand() * 7);
  let text: string;
  if (kind <= 1) {
    headers["content-type"] = "application/x-www-form-urlencoded";
    text = new URLSearchParams(fields).toString();
  } else if (kind === 2) {
    headers["content-type"] = `multipart/form-data; boundary=${BOUNDARY}`;
    text = multipart(fields, rand() < 0.5 ? pick(rand, ["name", "token", "_csrf"]) : null);
  } else if (kind === 3) {
    // Malformed multipart: cut short, no boundary, or not multipart at all.
    headers["content-type"] = pick(rand, [
      `multipart/form-data; boundary=${BOUNDARY}`,
      "multipart/form-data",
      "multipart/form-data; boundary=",
    ]);
    const whole = multipart(fields, null);
    text = whole.slice(0, Math.floor(rand() * whole.length));
  } else if (kind === 4) {
    headers["content-type"] = pick(rand, ["application/json", "text/plain", "x/y"]);
    text = JSON.stringify(Object.fromEntries(fields));
  } else if (kind === 5) {
    headers["content-type"] = "application/x-www-form-urlencoded";
    text = `_csrf=${fx.ui.csrf}&description=${"x".repeat(70 * 1024)}`;
  } else {
    return { headers };
  }
  return { headers, body: encoder.encode(text) };
}

/** The pools' queue, agents and outbox, minus the times a contact legitimately moves. */
async function snapshotPools(): Promise<unknown> {
  const out: unknown[] = [];
  for (const poolId of fx.poolIds) {
    out.push(
      await runInDurableObject(poolStub(env, poolId), (_instance, state) => {
        const tables = state.storage.sql
          .exec<{ name: string }>(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '_cf_%' AND name NOT LIKE 'sqlite_%' ORDER BY name",
          )
          .toArray();
        return tables.map(({ name }) => [
          name,
          state.storage.sql
            .exec(`SELECT * FROM "${name}"`)
            .toArray()
            .map((row) => {
              const copy = { ...row };
              for (const column of ["last_contact_at", "poll_held_until", "due_at"]) {
                delete copy[column];
              }
              return JSON.stringify(copy);
            })
            .sort(),
        ]);
      }),
    );
  }
  return out;
}

type Finding = { status: number; method: string; path: string; detail: string };

type Coverage = {
  routes: Set<string>;
  byClass: Record<string, number>;
  /** Dashboard form posts refused for their body (400) or size (413) once signed in. */
  uiFormRefusals: number;
};

async function fuzz(seed: number, count: number, coverage: Coverage): Promise<Finding[]> {
  const rand = prng(seed);
  const routes = appRoutes();
  const findings: Finding[] = [];
  let before = JSON.stringify([await snapshotD1(), await snapshotPools()]);
  for (let i = 0; i < count; i++) {
    const route = pick(rand, routes);
    const built = await buildRequest(rand, route);
    const res = await exports_fetch(built);
    coverage.routes.add(`${route.method} ${route.path}`);
    const statusClass = `${Math.floor(res.status / 100)}xx`;
    coverage.byClass[statusClass] = (coverage.byClass[statusClass] ?? 0) + 1;
    if (
      built.method === "POST" &&
      built.path.startsWith("/ui/") &&
      [400, 413].includes(res.status)
    ) {
      coverage.uiFormRefusals += 1;
    }
    const text = await res.text();
    const after = JSON.stringify([await snapshotD1(), await snapshotPools()]);
    if (res.status >= 500) {
      findings.push({
        status: res.status,
        method: built.method,
        path: built.path,
        detail: `${text.slice(0, 200)} headers=${JSON.stringify({ ...built.headers, authorization: built.headers.authorization?.slice(0, 14) })} body=${built.body ? new TextDecoder().decode(built.body.slice(0, 120)) : ""}`,
      });
    } else if (res.status >= 400 && after !== before) {
      findings.push({
        status: res.status,
        method: built.method,
        path: built.path,
        detail: `a refused request changed D1 or a pool: ${text.slice(0, 200)}`,
      });
    }
    before = after;
  }
  return findings;
}

function exports_fetch(built: Built): Promise<Response> {
  return request(built.path, {
    method: built.method,
    headers: built.headers,
    ...(built.body ? { body: built.body } : {}),
  }).catch((error: unknown) => {
    // A request the runtime itself cannot build (e.g. a forbidden header) is not an app answer.
    return new Response(`request not sent: ${String(error)} ${BASE}`, { status: 499 });
  });
}

describe("fuzzing every route", () => {
  it("enumerates the app's routes", () => {
    const routes = appRoutes();
    expect(routes.length).toBeGreaterThan(40);
    expect(routes.some((r) => r.path.startsWith("/state/v1"))).toBe(true);
    expect(routes.some((r) => r.path.startsWith("/webhooks"))).toBe(true);
  });

  const coverage: Coverage = { routes: new Set(), byClass: {}, uiFormRefusals: 0 };
  for (const seed of [1, 2, 3]) {
    it(`500 requests from seed ${seed}: no 5xx, and no refused request changes anything`, {
      timeout: 300_000,
    }, async () => {
      const findings = await fuzz(seed, 500, coverage);
      expect(findings, JSON.stringify(findings.slice(0, 10), null, 2)).toEqual([]);
    });
  }

  it("reached nearly every route, and got past validation sometimes", () => {
    const all = appRoutes().length;
    expect(coverage.routes.size).toBeGreaterThan(all * 0.9);
    expect(coverage.byClass["2xx"] ?? 0).toBeGreaterThan(20);
    expect(coverage.byClass["4xx"] ?? 0).toBeGreaterThan(1000);
    expect(coverage.byClass["5xx"] ?? 0).toBe(0);
    expect(coverage.uiFormRefusals).toBeGreaterThan(20);
  });
});
