/**
 * Single sign-on through an organization's OpenID provider: the settings routes, then the sign-in
 * itself against a loopback provider whose token endpoint redeems codes the test made (once, with
 * the client's credentials and the PKCE verifier), signing ID tokens with jose. Every refusal the
 * issue names: wrong state, replayed callback and code, wrong nonce, wrong audience, expired token,
 * unknown issuer, a disabled user; none starts a session.
 */
import { exports } from "cloudflare:workers";
import { and, eq } from "drizzle-orm";
import type { JWTPayload } from "jose";
import { beforeAll, describe, expect, it } from "vitest";
import { auditEvents } from "../../src/db/schema.ts";
import { BASE, type ErrorBody, requestJson } from "./helpers/api.ts";
import { describeAuth } from "./helpers/auth-matrix.ts";
import { snapshotD1 } from "./helpers/d1-snapshot.ts";
import { db, seedOrg, type TestOrg } from "./helpers/fixtures.ts";
import { TestIssuer } from "./helpers/oidc.ts";
import { seedTeam } from "./helpers/people.ts";
import { setCookieValue } from "./helpers/ui.ts";

const CLIENT = { clientId: "outpost-client", clientSecret: "s3cret-value" };
const REDIRECT_URI = `${BASE}/auth/sso/callback`;

function orgName(org: TestOrg): Promise<string> {
  return requestJson<{ name: string }>("/api/v1/organization", { token: org.ownerToken }).then(
    (r) => r.body.name,
  );
}

async function configure(org: TestOrg, issuer: TestIssuer) {
  const res = await requestJson("/api/v1/organization/sso", {
    method: "PUT",
    token: org.ownerToken,
    body: { issuer: issuer.url, ...CLIENT },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
}

function browser(path: string, cookie?: string): Promise<Response> {
  return exports.default.fetch(
    new Request(`${BASE}${path}`, { redirect: "manual", headers: cookie ? { cookie } : {} }),
  );
}

type Started = { state: string; nonce: string; challenge: string; cookie: string };

/** The browser asks to sign in: the provider URL it is sent to, and the state cookie. */
async function start(org: TestOrg, next = "/ui/workspaces"): Promise<Started> {
  const res = await browser(
    `/auth/sso/start?org=${await orgName(org)}&next=${encodeURIComponent(next)}`,
  );
  expect(res.status).toBe(302);
  const url = new URL(res.headers.get("location") ?? "");
  expect(url.searchParams.get("code_challenge_method")).toBe("S256");
  expect(url.searchParams.get("redirect_uri")).toBe(REDIRECT_URI);
  expect(url.searchParams.get("client_id")).toBe(CLIENT.clientId);
  const state = url.searchParams.get("state") ?? "";
  return {
    state,
    nonce: url.searchParams.get("nonce") ?? "",
    challenge: url.searchParams.get("code_challenge") ?? "",
    cookie: `outpost_sso_state=${setCookieValue(res, "outpost_sso_state")}`,
  };
}

let codes = 0;

/** The provider signs the person in: a code for an ID token with `claims`, redeemable once. */
async function authorize(
  issuer: TestIssuer,
  started: Started,
  claims: JWTPayload,
  signer = issuer,
) {
  const idToken = await signer.sign({
    aud: CLIENT.clientId,
    sub: "sub-1",
    nonce: started.nonce,
    ...claims,
  });
  const code = `code-${codes++}`;
  const res = await fetch(`${issuer.url}/codes/${code}`, {
    method: "PUT",
    body: JSON.stringify({
      idToken,
      codeChallenge: started.challenge,
      redirectUri: REDIRECT_URI,
      ...CLIENT,
    }),
  });
  expect(res.status).toBe(204);
  return code;
}

function callback(started: Started, code: string, state = started.state, cookie = started.cookie) {
  return browser(`/auth/sso/callback?state=${encodeURIComponent(state)}&code=${code}`, cookie);
}

async function expectRefused(res: Response, pattern: RegExp) {
  expect([400, 401]).toContain(res.status);
  expect(setCookieValue(res, "outpost_session")).toBeNull();
  expect(await res.text()).toMatch(pattern);
}

let issuer: TestIssuer;
let org: TestOrg;
beforeAll(async () => {
  [issuer, org] = await Promise.all([TestIssuer.create("sso"), seedOrg()]);
  await configure(org, issuer);
});

describe("SSO settings", () => {
  it("shows the settings without the secret, which is stored sealed", async () => {
    const res = await requestJson<Record<string, unknown>>("/api/v1/organization/sso", {
      token: org.ownerToken,
    });
    expect(res.body).toMatchObject({
      issuer: issuer.url,
      clientId: CLIENT.clientId,
      groupsClaim: "groups",
    });
    expect(JSON.stringify(res.body)).not.toContain(CLIENT.clientSecret);
    const rows = await db.query.ssoConfigs.findMany();
    expect(JSON.stringify(rows)).not.toContain(CLIENT.clientSecret);
  });

  it("refuses an issuer that is not https or has no usable discovery, changing nothing", async () => {
    const other = await seedOrg();
    const before = await snapshotD1();
    for (const bad of ["http://login.example.com", "https://", `${issuer.url}-missing`]) {
      const res = await requestJson<ErrorBody>("/api/v1/organization/sso", {
        method: "PUT",
        token: other.ownerToken,
        body: { issuer: bad, ...CLIENT },
      });
      expect(res.status, bad).toBe(400);
      expect(res.body.error.issues?.[0]?.path).toBe("json.issuer");
    }
    expect(await snapshotD1()).toEqual(before);
  });

  it("DELETE turns sign-in through the provider off", async () => {
    const other = await seedOrg();
    await configure(other, issuer);
    expect(
      (await requestJson("/api/v1/organization/sso", { method: "DELETE", token: other.ownerToken }))
        .status,
    ).toBe(204);
    expect(
      (await requestJson("/api/v1/organization/sso", { token: other.ownerToken })).status,
    ).toBe(404);
    const res = await browser(`/auth/sso/start?org=${await orgName(other)}`);
    expect(res.status).toBe(404);
  });
});

describeAuth("PUT /api/v1/organization/sso", {
  role: "owner",
  target: () => ({
    method: "PUT",
    path: "/api/v1/organization/sso",
    body: { issuer: "https://x.example", ...CLIENT },
  }),
  hasOrgIds: false,
});
describeAuth("GET /api/v1/organization/sso", {
  role: "owner",
  target: () => ({ method: "GET", path: "/api/v1/organization/sso" }),
  hasOrgIds: false,
});

describe("signing in", () => {
  it("signs the person in: a user with the provider's groups' teams, a session, an audit event", async () => {
    const team = await seedTeam(org, { groups: ["platform"], role: "member" });
    const started = await start(org);
    const code = await authorize(issuer, started, {
      email: "Grace@Example.com",
      name: "Grace",
      groups: ["platform", "x"],
    });
    const res = await callback(started, code);
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe("/ui/workspaces");
    const secret = setCookieValue(res, "outpost_session");
    expect(secret).toBeTruthy();
    const me = await requestJson<{
      email: string;
      organizationRole: string;
      teams: { id: string }[];
    }>("/api/v1/user", {
      headers: { cookie: `outpost_session=${secret}`, "sec-fetch-site": "same-origin" },
    });
    expect(me.body).toMatchObject({ email: "grace@example.com", organizationRole: "member" });
    expect(me.body.teams.map((t) => t.id)).toEqual([team.teamId]);
    const signIns = await db
      .select()
      .from(auditEvents)
      .where(and(eq(auditEvents.orgId, org.orgId), eq(auditEvents.action, "user.sign_in")));
    expect(signIns.at(-1)).toMatchObject({
      actorType: "user",
      actorName: "Grace",
      actorVia: "sso",
    });
  });

  it("refuses a callback whose state is not the one this browser started (and audits it)", async () => {
    const started = await start(org);
    const code = await authorize(issuer, started, { email: "a@example.com" });
    await expectRefused(
      await callback(started, code, started.state, "outpost_sso_state=other"),
      /state/,
    );
    await expectRefused(await callback(started, code, "forged-state", started.cookie), /state/);
    const refused = await db
      .select()
      .from(auditEvents)
      .where(and(eq(auditEvents.orgId, org.orgId), eq(auditEvents.action, "user.sign_in_refused")));
    expect(refused.some((e) => (e.data as { reason?: string }).reason === "state_mismatch")).toBe(
      true,
    );
  });

  it("refuses a replayed callback, and a replayed code at the provider", async () => {
    const started = await start(org);
    const code = await authorize(issuer, started, { email: "b@example.com" });
    expect((await callback(started, code)).status).toBe(303);
    await expectRefused(await callback(started, code), /already used/);
    // The same code with a fresh sign-in: the provider has redeemed it already.
    const again = await start(org);
    await expectRefused(await callback(again, code), /refused the authorization code/);
  });

  it("refuses an ID token with another sign-in's nonce", async () => {
    const started = await start(org);
    const code = await authorize(issuer, started, {
      email: "c@example.com",
      nonce: "another-nonce",
    });
    await expectRefused(await callback(started, code), /nonce/);
  });

  it("refuses an ID token for another client (aud)", async () => {
    const started = await start(org);
    const code = await authorize(issuer, started, {
      email: "d@example.com",
      aud: "another-client",
    });
    await expectRefused(await callback(started, code), /not for this client/);
  });

  it("refuses an expired ID token", async () => {
    const started = await start(org);
    const past = Math.floor(Date.now() / 1000) - 3600;
    const code = await authorize(issuer, started, {
      email: "e@example.com",
      iat: past - 60,
      exp: past,
    });
    await expectRefused(await callback(started, code), /expired/);
  });

  it("refuses an ID token from an unknown issuer, even signed with the right key", async () => {
    const started = await start(org);
    const stranger = await TestIssuer.create("stranger");
    const code = await authorize(issuer, started, { email: "f@example.com", iss: stranger.url });
    await expectRefused(await callback(started, code), /another issuer/);
  });

  it("refuses an ID token signed by a key the issuer does not publish", async () => {
    const started = await start(org);
    const impostor = await TestIssuer.create("impostor");
    const idToken = await impostor.sign(
      { aud: CLIENT.clientId, sub: "s", nonce: started.nonce, email: "g@example.com" },
      { issuer: issuer.url, kid: issuer.key.kid },
    );
    const code = `code-${codes++}`;
    await fetch(`${issuer.url}/codes/${code}`, {
      method: "PUT",
      body: JSON.stringify({
        idToken,
        codeChallenge: started.challenge,
        redirectUri: REDIRECT_URI,
        ...CLIENT,
      }),
    });
    await expectRefused(await callback(started, code), /signature/);
  });

  it("refuses a disabled user", async () => {
    const started = await start(org);
    const code = await authorize(issuer, started, { email: "h@example.com" });
    expect((await callback(started, code)).status).toBe(303);
    const users = await requestJson<{ users: { id: string; email: string }[] }>("/api/v1/users", {
      token: org.ownerToken,
    });
    const user = users.body.users.find((u) => u.email === "h@example.com");
    await requestJson(`/api/v1/users/${user?.id}`, {
      method: "PATCH",
      token: org.ownerToken,
      body: { disabled: true },
    });
    const again = await start(org);
    await expectRefused(
      await callback(again, await authorize(issuer, again, { email: "h@example.com" })),
      /disabled/,
    );
  });

  it("answers an unknown organization like one without SSO (404), revealing nothing", async () => {
    const res = await browser("/auth/sso/start?org=no-such-org");
    expect(res.status).toBe(404);
  });
});
