/**
 * `terraform login` through login.v1, as `internal/command/login.go` drives it: discovery
 * advertises the OAuth client once an organization signs people in through SSO; the CLI opens
 * the authorization URL (client_id, a loopback redirect on port 10000–10010, state, an S256
 * challenge); a signed-in person consents; the CLI's listener receives the code and exchanges
 * it, form-encoded with the verifier (`oauth2.AuthStyleInParams`), for a personal token the TFE
 * API accepts. Then every refusal: none creates a token.
 */
import { env } from "cloudflare:workers";
import { count } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { ssoConfigs, terraformLoginCodes, userTokens } from "../../src/db/schema.ts";
import { codeChallenge } from "../../src/sso/model.ts";
import { LOGIN_CODE_TTL_MS } from "../../src/tfe/login.ts";
import { BASE, request } from "./helpers/api.ts";
import { useTestClock } from "./helpers/clock.ts";
import { db, seedOrg, type TestOrg } from "./helpers/fixtures.ts";
import { seedUser, sessionCookieOf } from "./helpers/people.ts";
import { type Document, orgName, tfe } from "./helpers/tfe.ts";
import { csrfOf, signIn, uiFetch } from "./helpers/ui.ts";

const clock = useTestClock();

type LoginService = {
  client: string;
  grant_types: string[];
  authz: string;
  token: string;
  ports: number[];
};

async function discovery(): Promise<Record<string, unknown>> {
  const res = await request("/.well-known/terraform.json");
  expect(res.status).toBe(200);
  return (await res.json()) as Record<string, unknown>;
}

async function enableSso(org: TestOrg) {
  await db.insert(ssoConfigs).values({
    orgId: org.orgId,
    issuer: "https://idp.example",
    clientId: "outpost",
    clientSecretCiphertext: "sealed",
    groupsClaim: "groups",
    emailClaim: "email",
    updatedAt: Date.now(),
  });
}

/** The CLI's proof key: a UUID and nine digits, as `proofKey()` makes it. */
function proofKey(): string {
  return `${crypto.randomUUID()}.${String(Math.floor(Math.random() * 1e9)).padStart(9, "0")}`;
}

type Login = {
  verifier: string;
  redirectUri: string;
  state: string;
  query: Record<string, string>;
};

async function newLogin(overrides: Record<string, string | null> = {}): Promise<Login> {
  const verifier = proofKey();
  const redirectUri = "http://localhost:10003/login";
  const state = crypto.randomUUID();
  const query: Record<string, string> = {
    client_id: "terraform-cli",
    code_challenge: await codeChallenge(verifier),
    code_challenge_method: "S256",
    redirect_uri: redirectUri,
    response_type: "code",
    state,
  };
  for (const [name, value] of Object.entries(overrides)) {
    if (value === null) {
      delete query[name];
    } else {
      query[name] = value;
    }
  }
  return { verifier, redirectUri: query.redirect_uri ?? redirectUri, state, query };
}

const authzPath = (login: Login) => `/ui/terraform-login?${new URLSearchParams(login.query)}`;

/** The person consents on the page: the code the CLI's listener receives. */
async function consent(cookie: string, login: Login): Promise<string> {
  const page = await uiFetch(authzPath(login), { cookie });
  expect(page.status).toBe(200);
  const answer = await uiFetch("/ui/terraform-login", {
    cookie,
    form: { _csrf: csrfOf(await page.text()), decision: "allow", ...login.query },
  });
  expect(answer.status).toBe(303);
  const location = new URL(answer.headers.get("location") ?? "");
  expect(`${location.origin}${location.pathname}`).toBe(login.redirectUri);
  expect(location.searchParams.get("state")).toBe(login.state);
  return location.searchParams.get("code") ?? "";
}

function exchange(fields: Record<string, string>) {
  return request("/auth/terraform/token", {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(fields).toString(),
  });
}

function tokenForm(login: Login, code: string): Record<string, string> {
  return {
    client_id: "terraform-cli",
    code,
    code_verifier: login.verifier,
    grant_type: "authorization_code",
    redirect_uri: login.redirectUri,
  };
}

async function tokenCount(): Promise<number> {
  const [row] = await db.select({ n: count() }).from(userTokens);
  return row?.n ?? 0;
}

async function codeCount(): Promise<number> {
  const [row] = await db.select({ n: count() }).from(terraformLoginCodes);
  return row?.n ?? 0;
}

async function expectOAuthError(res: Response, status: number, error: string) {
  expect(res.status).toBe(status);
  expect(res.headers.get("content-type")).toContain("application/json");
  const body = (await res.json()) as { error: string; error_description: string };
  expect(body.error).toBe(error);
  expect(body.error_description).toEqual(expect.any(String));
}

async function signedInPerson() {
  const org = await seedOrg();
  const user = await seedUser(org);
  return { org, user, cookie: await sessionCookieOf(org, user) };
}

describe("login.v1 discovery", () => {
  it("advertises login.v1 only once an organization signs people in through SSO", async () => {
    const before = await discovery();
    expect(before["tfe.v2"]).toBe("/api/v2/");
    expect(before["login.v1"]).toBeUndefined();

    await enableSso(await seedOrg());
    const after = await discovery();
    expect(after["login.v1"]).toEqual({
      client: "terraform-cli",
      grant_types: ["authz_code"],
      authz: "/ui/terraform-login",
      token: "/auth/terraform/token",
      ports: [10000, 10010],
    } satisfies LoginService);
  });
});

describe("login.v1 authorization code with PKCE", () => {
  it("signs the person in first, then consents, and the code buys a token the TFE API accepts", async () => {
    const { org, user, cookie } = await signedInPerson();
    const login = await newLogin();

    const anonymous = await uiFetch(authzPath(login));
    expect(anonymous.status).toBe(303);
    const next = new URL(anonymous.headers.get("location") ?? "", BASE).searchParams.get("next");
    expect(next).toBe(authzPath(login));

    const code = await consent(cookie, login);
    expect(code).toMatch(/^[A-Za-z0-9_-]{40,}$/);
    const res = await exchange(tokenForm(login, code));
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toBe("no-store");
    const body = (await res.json()) as { access_token: string; token_type: string };
    expect(body.token_type).toBe("bearer");
    expect(body.access_token).toMatch(/^op_user_/);

    const read = await tfe<Document>(`/organizations/${await orgName(org)}/entitlement-set`, {
      token: body.access_token,
    });
    expect(read.status).toBe(200);
    const [row] = await db
      .select()
      .from(userTokens)
      .all()
      .then((rows) =>
        rows.filter((r) => r.userId === user.userId && r.description === "terraform login"),
      );
    expect(row?.expiresAt).toBeNull();
  });

  it("accepts 127.0.0.1 and every advertised port, and hands back an access_denied refusal", async () => {
    const { cookie } = await signedInPerson();
    for (const redirect of ["http://127.0.0.1:10000/login", "http://localhost:10010/login"]) {
      const login = await newLogin({ redirect_uri: redirect });
      const res = await exchange(tokenForm(login, await consent(cookie, login)));
      expect(res.status).toBe(200);
    }
    const login = await newLogin();
    const page = await uiFetch(authzPath(login), { cookie });
    const tokens = await tokenCount();
    const denied = await uiFetch("/ui/terraform-login", {
      cookie,
      form: { _csrf: csrfOf(await page.text()), decision: "deny", ...login.query },
    });
    expect(denied.status).toBe(303);
    const location = new URL(denied.headers.get("location") ?? "");
    expect(location.searchParams.get("error")).toBe("access_denied");
    expect(location.searchParams.get("code")).toBeNull();
    expect(await tokenCount()).toBe(tokens);
  });
});

describe("login.v1 refusals", () => {
  it("refuses a wrong verifier, and the code is spent by the attempt", async () => {
    const { cookie } = await signedInPerson();
    const login = await newLogin();
    const code = await consent(cookie, login);
    const tokens = await tokenCount();
    await expectOAuthError(
      await exchange({ ...tokenForm(login, code), code_verifier: proofKey() }),
      400,
      "invalid_grant",
    );
    await expectOAuthError(await exchange(tokenForm(login, code)), 400, "invalid_grant");
    expect(await tokenCount()).toBe(tokens);
  });

  it("refuses a reused code", async () => {
    const { cookie } = await signedInPerson();
    const login = await newLogin();
    const code = await consent(cookie, login);
    expect((await exchange(tokenForm(login, code))).status).toBe(200);
    const tokens = await tokenCount();
    await expectOAuthError(await exchange(tokenForm(login, code)), 400, "invalid_grant");
    expect(await tokenCount()).toBe(tokens);
  });

  it("refuses an expired code", async () => {
    const { cookie } = await signedInPerson();
    const login = await newLogin();
    const code = await consent(cookie, login);
    clock.advance(LOGIN_CODE_TTL_MS + 1);
    const tokens = await tokenCount();
    await expectOAuthError(await exchange(tokenForm(login, code)), 400, "invalid_grant");
    expect(await tokenCount()).toBe(tokens);
  });

  it("refuses a redirect_uri other than the one the code was made for", async () => {
    const { cookie } = await signedInPerson();
    const login = await newLogin();
    const code = await consent(cookie, login);
    const tokens = await tokenCount();
    const other = { ...tokenForm(login, code), redirect_uri: "http://localhost:10004/login" };
    await expectOAuthError(await exchange(other), 400, "invalid_grant");
    expect(await tokenCount()).toBe(tokens);
  });

  it("refuses authorization requests with a bad redirect, client or PKCE, and never redirects", async () => {
    const { cookie } = await signedInPerson();
    const refused: [Record<string, string | null>, string][] = [
      [{ redirect_uri: "https://attacker.example/login" }, "invalid_request"],
      [{ redirect_uri: "http://attacker.example:10001/login" }, "invalid_request"],
      [{ redirect_uri: "http://localhost.attacker.example:10001/login" }, "invalid_request"],
      [{ redirect_uri: "http://localhost:9999/login" }, "invalid_request"],
      [{ redirect_uri: "http://localhost:10011/login" }, "invalid_request"],
      [{ redirect_uri: "http://localhost:10001/callback" }, "invalid_request"],
      [{ redirect_uri: "http://user@localhost:10001/login" }, "invalid_request"],
      [{ redirect_uri: "http://localhost:10001/login?next=x" }, "invalid_request"],
      [{ redirect_uri: null }, "invalid_request"],
      [{ client_id: "other-client" }, "unauthorized_client"],
      [{ code_challenge: null }, "invalid_request"],
      [{ code_challenge_method: "plain" }, "invalid_request"],
      [{ code_challenge_method: null }, "invalid_request"],
      [{ response_type: "token" }, "unsupported_response_type"],
    ];
    const page = await uiFetch(authzPath(await newLogin()), { cookie });
    const csrf = csrfOf(await page.text());
    const tokens = await tokenCount();
    const codes = await codeCount();
    for (const [overrides, error] of refused) {
      const login = await newLogin(overrides);
      await expectOAuthError(await uiFetch(authzPath(login), { cookie }), 400, error);
      const posted = await uiFetch("/ui/terraform-login", {
        cookie,
        form: { _csrf: csrf, decision: "allow", ...login.query },
      });
      await expectOAuthError(posted, 400, error);
    }
    expect(await codeCount()).toBe(codes);
    expect(await tokenCount()).toBe(tokens);
  });

  it("refuses token requests without PKCE, with another client or grant, or not form-encoded", async () => {
    const { cookie } = await signedInPerson();
    const login = await newLogin();
    const code = await consent(cookie, login);
    const form = tokenForm(login, code);
    const tokens = await tokenCount();
    const { code_verifier: _, ...withoutVerifier } = form;
    await expectOAuthError(await exchange(withoutVerifier), 400, "invalid_request");
    await expectOAuthError(
      await exchange({ ...form, code_verifier: "short" }),
      400,
      "invalid_request",
    );
    await expectOAuthError(await exchange({ ...form, client_id: "other" }), 401, "invalid_client");
    await expectOAuthError(
      await exchange({ ...form, grant_type: "password" }),
      400,
      "unsupported_grant_type",
    );
    const json = await request("/auth/terraform/token", { method: "POST", body: form });
    await expectOAuthError(json, 400, "invalid_request");
    // None of these spent the code: the CLI's own request still succeeds.
    expect(await tokenCount()).toBe(tokens);
    expect((await exchange(form)).status).toBe(200);
  });

  it("refuses a forged consent and an org-token session, making no code", async () => {
    const { cookie } = await signedInPerson();
    const login = await newLogin();
    const codes = await codeCount();
    const forged = await uiFetch("/ui/terraform-login", {
      cookie,
      form: { _csrf: "forged", decision: "allow", ...login.query },
    });
    expect(forged.status).toBe(403);
    expect(forged.headers.get("location")).toBeNull();
    const owner = await signIn((await seedOrg()).ownerToken);
    expect((await owner.get(authzPath(login))).status).toBe(403);
    expect(await codeCount()).toBe(codes);
  });

  it("refuses a code of a person disabled since consenting", async () => {
    const { cookie, user } = await signedInPerson();
    const login = await newLogin();
    const code = await consent(cookie, login);
    await env.DB.prepare("UPDATE users SET disabled_at = ? WHERE id = ?")
      .bind(Date.now(), user.userId)
      .run();
    const tokens = await tokenCount();
    await expectOAuthError(await exchange(tokenForm(login, code)), 400, "invalid_grant");
    expect(await tokenCount()).toBe(tokens);
  });
});
