/** Dashboard sessions: sign-in, cookie attributes, CSRF, sign-out, expiry, token revocation. */
import { eq } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { orgTokens, sessions } from "../../src/db/schema.ts";
import { DEFAULT_MAX_AGE_SECONDS } from "../../src/sessions/model.ts";
import { createOrgToken, revokeOrgToken } from "../../src/tokens/service.ts";
import { useTestClock } from "./helpers/clock.ts";
import { snapshotD1 } from "./helpers/d1-snapshot.ts";
import { db, deps, seedOrg, type TestOrg, tokenActor } from "./helpers/fixtures.ts";
import { setCookieValue, signIn, submitLogin, uiFetch } from "./helpers/ui.ts";
import { tokenIdOf } from "./helpers/workspaces.ts";

let org: TestOrg;
beforeAll(async () => {
  org = await seedOrg();
});

describe("signing in", () => {
  it("redirects / to the dashboard and a signed-out page to the sign-in form", async () => {
    const root = await uiFetch("/");
    expect(root.status).toBe(302);
    expect(root.headers.get("location")).toBe("/ui");
    const page = await uiFetch("/ui/workspaces");
    expect(page.status).toBe(303);
    expect(page.headers.get("location")).toBe("/ui/login?next=%2Fui%2Fworkspaces");
    const login = await uiFetch("/ui/login");
    expect(login.status).toBe(200);
    expect(await login.text()).toContain('<label for="token">Org token</label>');
  });

  it("exchanges an org token for an HttpOnly, SameSite=Lax, expiring, Secure cookie on /", async () => {
    const res = await submitLogin(org.tokens.reader);
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe("/ui/pools");
    const line = res.headers.getSetCookie().find((l) => l.startsWith("outpost_session="));
    expect(line).toBeDefined();
    expect(line).toMatch(/HttpOnly/);
    // Lax, not Strict: the provider's redirect back after SSO is a cross-site navigation, and
    // the session serves the API too (path /), where same-origin checks refuse other sites.
    expect(line).toMatch(/SameSite=Lax/);
    expect(line).toMatch(/Secure/);
    expect(line).toMatch(/Path=\/;/);
    expect(line).toMatch(/Max-Age=43200/);
    // Only the hash of the cookie secret is stored.
    const secret = setCookieValue(res, "outpost_session") ?? "";
    const rows = await db.select().from(sessions);
    expect(rows.some((r) => r.secretHash === secret)).toBe(false);
  });

  it("leaves Secure off on loopback http, where the browser would drop it", async () => {
    const res = await submitLogin(org.tokens.reader, "http://127.0.0.1:8787");
    expect(res.status).toBe(303);
    const line = res.headers.getSetCookie().find((l) => l.startsWith("outpost_session="));
    expect(line).toMatch(/HttpOnly/);
    expect(line).not.toMatch(/Secure/);
  });

  it("refuses a revoked, unknown or non-org token with 401 and no session", async () => {
    for (const token of [org.revokedToken, `op_org_${"x".repeat(43)}`, "hello"]) {
      const res = await submitLogin(token);
      expect(res.status).toBe(401);
      expect(setCookieValue(res, "outpost_session")).toBeNull();
    }
  });

  it("refuses a sign-in post without its CSRF token and creates no session", async () => {
    const before = await snapshotD1();
    const res = await uiFetch("/ui/login", { form: { token: org.ownerToken } });
    expect(res.status).toBe(403);
    expect(setCookieValue(res, "outpost_session")).toBeNull();
    expect(await snapshotD1()).toEqual(before);
  });

  it("never redirects outside the dashboard after sign-in", async () => {
    const page = await uiFetch("/ui/login");
    const loginCsrf = setCookieValue(page, "outpost_login_csrf");
    const csrf = /name="_csrf" value="([^"]+)"/.exec(await page.text())?.[1] ?? "";
    const res = await uiFetch("/ui/login", {
      cookie: `outpost_login_csrf=${loginCsrf}`,
      form: { _csrf: csrf, token: org.tokens.reader, next: "//evil.example/x" },
    });
    expect(res.headers.get("location")).toBe("/ui/pools");
  });
});

describe("CSRF", () => {
  it("refuses a form post without the token, or with another session's, and changes nothing", async () => {
    const owner = await signIn(org.ownerToken);
    const other = await signIn(org.ownerToken);
    const before = await snapshotD1();
    const missing = await owner.post("/ui/pools", { name: "no-csrf" }, null);
    expect(missing.status).toBe(403);
    expect(await missing.text()).toContain("CSRF");
    const foreign = await owner.post("/ui/pools", { name: "no-csrf" }, other.csrf);
    expect(foreign.status).toBe(403);
    expect(await snapshotD1()).toEqual(before);
    const ok = await owner.post("/ui/pools", { name: "with-csrf" });
    expect(ok.status).toBe(303);
  });

  it("protects sign-out too", async () => {
    const session = await signIn(org.tokens.reader);
    expect((await session.post("/ui/logout", {}, null)).status).toBe(403);
    expect((await session.get("/ui/pools")).status).toBe(200);
  });
});

describe("using a session", () => {
  const clock = useTestClock();

  it("records the token's last use, as the API does", async () => {
    const session = await signIn(org.tokens.member);
    const tokenId = await tokenIdOf(org.tokens.member);
    // Five minutes on, past the once-a-minute resolution of last use.
    const stale = clock.now();
    clock.advance(5 * 60_000);
    expect((await session.get("/ui/workspaces")).status).toBe(200);
    const row = await db.query.orgTokens.findFirst({ where: eq(orgTokens.id, tokenId) });
    expect(row?.lastUsedAt).toBeGreaterThan(stale);
  });
});

describe("ending a session", () => {
  const clock = useTestClock();

  it("signs out: the same cookie no longer works", async () => {
    const session = await signIn(org.tokens.member);
    const res = await session.post("/ui/logout");
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe("/ui/login");
    expect(res.headers.getSetCookie().join("\n")).toMatch(/outpost_session=;/);
    const after = await session.get("/ui/pools");
    expect(after.status).toBe(303);
    expect(after.headers.get("location")).toMatch(/^\/ui\/login/);
  });

  it("ends every session of a token when the token is revoked", async () => {
    const created = await createOrgToken(deps, {
      orgId: org.orgId,
      role: "admin",
      description: "short-lived",
      actor: tokenActor(org.ownerTokenId),
    });
    const session = await signIn(created.token);
    expect((await session.get("/ui/workspaces")).status).toBe(200);
    const revoked = await revokeOrgToken(deps, {
      orgId: org.orgId,
      id: created.id,
      actor: tokenActor(org.ownerTokenId),
    });
    expect(revoked.ok).toBe(true);
    expect((await session.get("/ui/workspaces")).status).toBe(303);
    const post = await session.post("/ui/pools", { name: "after-revoke" });
    expect(post.status).toBe(401);
  });

  it("forgets a token's dead sessions when it signs in again", async () => {
    const created = await createOrgToken(deps, {
      orgId: org.orgId,
      role: "reader",
      description: "housekeeping",
      actor: tokenActor(org.ownerTokenId),
    });
    const first = await signIn(created.token);
    await first.post("/ui/logout");
    await signIn(created.token);
    const rows = await db.select().from(sessions).where(eq(sessions.tokenId, created.id));
    expect(rows).toHaveLength(1);
    expect(rows[0]?.revokedAt).toBeNull();
  });

  it("expires", async () => {
    const session = await signIn(org.tokens.reader);
    expect((await session.get("/ui/pools")).status).toBe(200);
    clock.advance(DEFAULT_MAX_AGE_SECONDS * 1000 + 1);
    expect((await session.get("/ui/pools")).status).toBe(303);
    const live = await session.get("/ui/pools/pool_aaaaaaaaaaaaaaaaaaaaaaaaaa/live.json");
    expect(live.status).toBe(401);
    expect(((await live.json()) as { error: { code: string } }).error.code).toBe("UNAUTHORIZED");
  });
});
