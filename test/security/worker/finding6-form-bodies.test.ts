/**
 * Finding 6: `POST /ui/login` (and every dashboard form) with a malformed multipart body
 * answered 500. Now every `/ui` POST, enumerated from the app's own routes, answers a malformed,
 * oversized or wrong-type body with 400 or 413 and changes nothing.
 */
import { exports } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { newApp } from "../../../src/app.ts";
import { systemClock } from "../../../src/deps.ts";
import { BASE, requestJson } from "../../worker/helpers/api.ts";
import { snapshotD1 } from "../../worker/helpers/d1-snapshot.ts";
import { seedOrg, type TestOrg } from "../../worker/helpers/fixtures.ts";
import { queueRun } from "../../worker/helpers/runs.ts";
import { setCookieValue, signIn, type UiSession, uiFetch } from "../../worker/helpers/ui.ts";
import { runnableWithAgent } from "./helpers.ts";

type Body = { name: string; contentType: string | null; body: BodyInit; statuses: number[] };

/** What a broken or hostile client sends instead of a form. */
function badBodies(csrf: string): Body[] {
  const boundary = "----outpost-test-boundary";
  return [
    {
      name: "multipart with a body that does not follow its boundary",
      contentType: `multipart/form-data; boundary=${boundary}`,
      body: "this is not multipart at all\r\n--nope",
      statuses: [400],
    },
    {
      name: "multipart without a boundary",
      contentType: "multipart/form-data",
      body: `--${boundary}\r\nContent-Disposition: form-data; name="_csrf"\r\n\r\n${csrf}\r\n--${boundary}--\r\n`,
      statuses: [400],
    },
    {
      name: "a truncated multipart part",
      contentType: `multipart/form-data; boundary=${boundary}`,
      body: `--${boundary}\r\nContent-Disposition: form-data; name="_csrf"\r\n\r\n${csrf}`,
      statuses: [400],
    },
    {
      name: "JSON instead of a form",
      contentType: "application/json",
      body: JSON.stringify({ _csrf: csrf, name: "x" }),
      statuses: [400],
    },
    { name: "no content type", contentType: null, body: `_csrf=${csrf}`, statuses: [400] },
    {
      name: "a form larger than the limit",
      contentType: "application/x-www-form-urlencoded",
      body: `_csrf=${csrf}&description=${"x".repeat(70 * 1024)}`,
      statuses: [413],
    },
    {
      name: "a file where a text field belongs",
      contentType: `multipart/form-data; boundary=${boundary}`,
      body: [
        `--${boundary}`,
        'Content-Disposition: form-data; name="_csrf"',
        "",
        csrf,
        `--${boundary}`,
        'Content-Disposition: form-data; name="name"; filename="evil.bin"',
        "Content-Type: application/octet-stream",
        "",
        "\u0000\u0001binary",
        `--${boundary}--`,
        "",
      ].join("\r\n"),
      // A form without that field is 400 too; one whose CSRF field is fine but whose only field
      // is unexpected is 400; the login form refuses its CSRF check first (403).
      statuses: [400, 403],
    },
  ];
}

type Fixture = { org: TestOrg; session: UiSession; ids: Record<string, string> };
let fx: Fixture;

beforeAll(async () => {
  const org = await seedOrg();
  const target = await runnableWithAgent(org);
  const run = await queueRun(org, target.workspace.id);
  await requestJson(`/api/v1/workspaces/${target.workspace.id}/vars/REGION`, {
    method: "PUT",
    token: org.tokens.admin,
    body: { value: "eu", category: "env" },
  });
  const tokens = await requestJson<{ tokens: { id: string }[] }>("/api/v1/tokens", {
    token: org.tokens.owner,
  });
  const agentTokens = await requestJson<{ tokens: { id: string }[] }>(
    `/api/v1/pools/${target.poolId}/tokens`,
    { token: org.tokens.owner },
  );
  const trust = await requestJson<{ id: string }>(`/api/v1/pools/${target.poolId}/oidc-trusts`, {
    method: "POST",
    token: org.tokens.owner,
    body: { issuer: "https://issuer.example", audience: "outpost", claims: { sub: "ci:*" } },
  });
  const notification = await requestJson<{ id: string }>(
    `/api/v1/workspaces/${target.workspace.id}/notifications`,
    {
      method: "POST",
      token: org.tokens.admin,
      body: {
        name: "ops",
        destinationType: "generic",
        url: "https://hooks.example/outpost",
        enabled: false,
        triggers: ["run:errored"],
      },
    },
  );
  const schedule = await requestJson<{ id: string }>(
    `/api/v1/workspaces/${target.workspace.id}/schedules`,
    {
      method: "POST",
      token: org.tokens.admin,
      body: { cron: "0 6 * * 1", timezone: "UTC", operation: "plan" },
    },
  );
  expect(notification.status, JSON.stringify(notification.body)).toBe(201);
  expect(schedule.status, JSON.stringify(schedule.body)).toBe(201);
  fx = {
    org,
    session: await signIn(org.tokens.owner),
    ids: {
      poolId: target.poolId,
      workspaceId: target.workspace.id,
      runId: run.body.id,
      tokenId: tokens.body.tokens.at(-1)?.id ?? "",
      category: "env",
      key: "REGION",
      action: "cancel",
      trustId: trust.body.id,
      notificationId: notification.body.id,
      scheduleId: schedule.body.id,
      toggle: "disable",
    },
  };
  expect(fx.ids.tokenId).toMatch(/^tok_/);
  // The pool route's :tokenId is an agent token.
  fx.ids.agentTokenId = agentTokens.body.tokens[0]?.id ?? "";
});

/** Every POST route of the dashboard, with its path parameters filled with real ids. */
function dashboardPosts(): string[] {
  const paths = new Set<string>();
  for (const route of newApp(systemClock).routes) {
    if (route.method === "POST" && route.path.startsWith("/ui/")) {
      paths.add(route.path);
    }
  }
  return [...paths];
}

function fill(path: string): string {
  return path.replace(/:(\w+)(\{[^}]*\})?/g, (_, name: string) => {
    if (name === "tokenId" && path.startsWith("/ui/pools")) {
      return fx.ids.agentTokenId ?? "";
    }
    return fx.ids[name] ?? "x";
  });
}

async function post(path: string, body: Body, cookie: string): Promise<Response> {
  const headers = new Headers({ cookie });
  if (body.contentType) {
    headers.set("content-type", body.contentType);
  }
  return exports.default.fetch(
    new Request(`${BASE}${path}`, { method: "POST", headers, body: body.body, redirect: "manual" }),
  );
}

describe("finding 6: no 500 from any dashboard form", () => {
  it("enumerates every dashboard form (login included)", () => {
    const posts = dashboardPosts();
    expect(posts).toContain("/ui/login");
    expect(posts.length).toBeGreaterThanOrEqual(14);
  });

  it("answers malformed, oversized and wrong-type bodies with 400/413 and changes nothing", {
    timeout: 120_000,
  }, async () => {
    const page = await uiFetch("/ui/login");
    const loginCsrf = setCookieValue(page, "outpost_login_csrf") ?? "";
    const cookie = `${fx.session.cookie}; outpost_login_csrf=${loginCsrf}`;
    const failures: string[] = [];
    for (const template of dashboardPosts()) {
      const path = fill(template);
      const csrf = template === "/ui/login" ? loginCsrf : fx.session.csrf;
      for (const body of badBodies(csrf)) {
        const before = await snapshotD1();
        const res = await post(path, body, cookie);
        const text = await res.text();
        // The upload form takes files up to the configuration limit, not the 64 KiB form limit:
        // an oversized urlencoded body there is refused as not a multipart upload (400).
        const statuses =
          template.endsWith("/configurations") && body.name === "a form larger than the limit"
            ? [400, 413]
            : body.statuses;
        if (!statuses.includes(res.status)) {
          failures.push(`${path} ${body.name}: ${res.status} ${text.slice(0, 120)}`);
        }
        if (JSON.stringify(await snapshotD1()) !== JSON.stringify(before)) {
          failures.push(`${path} ${body.name}: changed D1`);
        }
      }
    }
    expect(failures).toEqual([]);
  });
});
