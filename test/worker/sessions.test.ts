/**
 * Sessions: idle and absolute expiry (with the clock injected into the service), sign-out that
 * ends the session server-side, disabling that ends it, and the API taking a session cookie only
 * from this site's own pages.
 */
import { describe, expect, it } from "vitest";
import {
  DEFAULT_IDLE_TIMEOUT_SECONDS,
  isSessionLive,
  sessionSettings,
} from "../../src/sessions/model.ts";
import { findSession, startSession, touchSession } from "../../src/sessions/service.ts";
import { type ErrorBody, requestJson } from "./helpers/api.ts";
import { db, seedOrg } from "./helpers/fixtures.ts";
import { seedUser, sessionCookieOf } from "./helpers/people.ts";

const settings = sessionSettings({
  SESSION_IDLE_TIMEOUT_SECONDS: "600",
  SESSION_MAX_AGE_SECONDS: "3600",
});

describe("session settings and expiry, pure", () => {
  it("takes the deployment's settings and defaults for missing or malformed ones", () => {
    expect(settings).toEqual({ idleTimeoutMs: 600_000, maxAgeMs: 3_600_000 });
    expect(sessionSettings({ SESSION_IDLE_TIMEOUT_SECONDS: "-5" }).idleTimeoutMs).toBe(
      DEFAULT_IDLE_TIMEOUT_SECONDS * 1000,
    );
  });

  it.each([
    { at: 0, lastSeen: null, live: true },
    { at: 599_999, lastSeen: null, live: true },
    { at: 600_000, lastSeen: null, live: false },
    { at: 900_000, lastSeen: 500_000, live: true },
    { at: 3_599_999, lastSeen: 3_500_000, live: true },
    { at: 3_600_000, lastSeen: 3_599_000, live: false },
  ])("at $at ms (last seen $lastSeen): live $live", ({ at, lastSeen, live }) => {
    expect(
      isSessionLive({ createdAt: 0, lastSeenAt: lastSeen, expiresAt: 3_600_000 }, at, settings),
    ).toBe(live);
  });
});

describe("session expiry against D1", () => {
  it("ends after the idle timeout unless used, and at its absolute lifetime whatever happens", async () => {
    const org = await seedOrg();
    const user = await seedUser(org);
    const t0 = Date.now();
    const owner = {
      kind: "user" as const,
      orgId: org.orgId,
      userId: user.userId,
      method: "sso" as const,
    };
    const idle = await startSession(db, owner, settings, t0);
    expect(await findSession(db, idle.secret, settings, t0 + 599_000)).not.toBeNull();
    expect(await findSession(db, idle.secret, settings, t0 + 601_000)).toBeNull();
    const used = await startSession(db, owner, settings, t0);
    for (let t = t0 + 500_000; t < t0 + 3_600_000; t += 500_000) {
      expect(await findSession(db, used.secret, settings, t)).not.toBeNull();
      await touchSession(db, used.id, t);
    }
    expect(await findSession(db, used.secret, settings, t0 + 3_600_000)).toBeNull();
  });
});

describe("sign-out", () => {
  it("POST /auth/logout ends the session server-side: a copy of the cookie no longer works", async () => {
    const org = await seedOrg();
    const user = await seedUser(org);
    const cookie = await sessionCookieOf(org, user);
    const headers = { cookie, "sec-fetch-site": "same-origin" };
    expect((await requestJson("/api/v1/user", { headers })).status).toBe(200);
    const out = await requestJson("/auth/logout", { method: "POST", headers });
    expect(out.status).toBe(204);
    expect(out.headers.get("set-cookie")).toMatch(/outpost_session=;/);
    expect((await requestJson("/api/v1/user", { headers })).status).toBe(401);
  });

  it("refuses a cross-site sign-out", async () => {
    const org = await seedOrg();
    const cookie = await sessionCookieOf(org, await seedUser(org));
    const res = await requestJson("/auth/logout", {
      method: "POST",
      headers: { cookie, "sec-fetch-site": "cross-site" },
    });
    expect(res.status).toBe(401);
    expect(
      (await requestJson("/api/v1/user", { headers: { cookie, "sec-fetch-site": "same-origin" } }))
        .status,
    ).toBe(200);
  });
});

describe("the API with a session cookie", () => {
  it("answers same-origin requests (Sec-Fetch-Site, or Origin) and refuses anything cross-site", async () => {
    const org = await seedOrg();
    const cookie = await sessionCookieOf(org, await seedUser(org));
    const ok: Record<string, string>[] = [
      { "sec-fetch-site": "same-origin" },
      { origin: "http://outpost.test" },
      { "sec-fetch-site": "none" },
    ];
    for (const headers of ok) {
      expect((await requestJson("/api/v1/user", { headers: { cookie, ...headers } })).status).toBe(
        200,
      );
    }
    const refused: Record<string, string>[] = [
      { "sec-fetch-site": "cross-site" },
      { "sec-fetch-site": "same-site" },
      { origin: "https://evil.example" },
      {},
    ];
    for (const headers of refused) {
      const res = await requestJson<ErrorBody>("/api/v1/user", { headers: { cookie, ...headers } });
      expect(res.status, JSON.stringify(headers)).toBe(401);
    }
    // A typed address may read, never write.
    const write = await requestJson("/api/v1/user/tokens", {
      method: "POST",
      headers: { cookie, "sec-fetch-site": "none" },
      body: { description: "x" },
    });
    expect(write.status).toBe(401);
    const sameOrigin = await requestJson("/api/v1/user/tokens", {
      method: "POST",
      headers: { cookie, "sec-fetch-site": "same-origin" },
      body: { description: "x" },
    });
    expect(sameOrigin.status).toBe(201);
  });

  it("a bearer token wins over a cookie", async () => {
    const org = await seedOrg();
    const user = await seedUser(org);
    const cookie = await sessionCookieOf(org, user);
    const res = await requestJson<{ role: string }>("/api/v1/organization", {
      token: org.tokens.reader,
      headers: { cookie, "sec-fetch-site": "cross-site" },
    });
    expect(res.status).toBe(200);
    expect(res.body.role).toBe("reader");
  });
});
