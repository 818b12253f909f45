/**
 * Cloudflare Access: assertions verified against a loopback certificate set (the team's certs
 * URL replaced, as the deployment allows only for loopback), the user they name signed in with
 * their groups, and every refusal: another audience, another issuer, expired, a key the team does
 * not publish, no email, a disabled user. Through the service with real D1; the HTTP path, in chromium against the real coordinator,
 * is in test/browser/people.test.ts.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { accessSettings } from "../../src/access/model.ts";
import { accessPrincipal } from "../../src/access/service.ts";
import { createOrganization } from "../../src/orgs/service.ts";
import { setUserDisabled } from "../../src/users/service.ts";
import { db, deps, tokenActor } from "./helpers/fixtures.ts";
import { TestIssuer } from "./helpers/oidc.ts";
import { seedTeam } from "./helpers/people.ts";

const TEAM = "outpost-test.cloudflareaccess.com";
const AUD = "a".repeat(64);

let certs: TestIssuer;
let orgName: string;
let orgId: string;
beforeAll(async () => {
  certs = await TestIssuer.create("access");
  orgName = `access-${Date.now().toString(36)}`;
  const created = await createOrganization(deps, {
    name: orgName,
    actor: tokenActor("test"),
    onlyIfNone: false,
  });
  if (!created.ok) {
    throw new Error(created.reason.message);
  }
  orgId = created.value.organization.id;
});

function settings() {
  const value = accessSettings({
    ACCESS_TEAM_DOMAIN: TEAM,
    ACCESS_AUD: AUD,
    ACCESS_CERTS_URL: `${certs.url}/jwks`,
    ACCESS_ORGANIZATION: orgName,
    OIDC_ALLOW_LOOPBACK_ISSUERS: "true",
  });
  if (!value) {
    throw new Error("Access settings refused");
  }
  return value;
}

function assertion(claims: Record<string, unknown>, options: { issuer?: string } = {}) {
  return certs.sign(
    { aud: AUD, sub: "access-sub", ...claims },
    { issuer: options.issuer ?? `https://${TEAM}` },
  );
}

describe("Access settings", () => {
  it("are off unless both the team domain and the AUD tag are set", () => {
    expect(accessSettings({ ACCESS_TEAM_DOMAIN: TEAM, ACCESS_AUD: "" })).toBeNull();
    expect(accessSettings({ ACCESS_TEAM_DOMAIN: "", ACCESS_AUD: AUD })).toBeNull();
  });

  it("take a replacement certificate URL only on loopback where loopback issuers are allowed", () => {
    const base = { ACCESS_TEAM_DOMAIN: TEAM, ACCESS_AUD: AUD };
    expect(
      accessSettings({ ...base, ACCESS_CERTS_URL: "https://evil.example/certs" })?.certsUrl,
    ).toBe(`https://${TEAM}/cdn-cgi/access/certs`);
    expect(
      accessSettings({
        ...base,
        ACCESS_CERTS_URL: "http://127.0.0.1:9/certs",
        OIDC_ALLOW_LOOPBACK_ISSUERS: "false",
      })?.certsUrl,
    ).toBe(`https://${TEAM}/cdn-cgi/access/certs`);
    expect(settings().certsUrl).toBe(`${certs.url}/jwks`);
  });
});

describe("an Access request", () => {
  it("is the user its email names, with the teams of its groups, kept in step at every request", async () => {
    const team = await seedTeam(
      { orgId, ownerTokenId: "tok_test" },
      { groups: ["infra"], role: "member" },
    );
    const first = await accessPrincipal(
      db,
      settings(),
      await assertion({ email: "Lin@Example.com", groups: ["infra"] }),
      Date.now(),
    );
    expect(first.ok && first.value).toMatchObject({
      kind: "user",
      email: "lin@example.com",
      role: "member",
      via: "access",
    });
    // Removed from the group: the next request has lost the team.
    const second = await accessPrincipal(
      db,
      settings(),
      await assertion({ email: "lin@example.com", groups: [] }),
      Date.now(),
    );
    expect(second.ok && second.value.role).toBeNull();
    expect(team.teamId).toMatch(/^team_/);
  });

  it.each([
    ["another audience", { email: "x@example.com", aud: "b".repeat(64) }, {}, /aud/],
    [
      "another issuer",
      { email: "x@example.com" },
      { issuer: "https://other.cloudflareaccess.com" },
      /iss/,
    ],
    [
      "an expired assertion",
      { email: "x@example.com", exp: Math.floor(Date.now() / 1000) - 120 },
      {},
      /expired/,
    ],
    ["no email", {}, {}, /no email/],
  ])("refuses %s", async (_name, claims, options, pattern) => {
    const result = await accessPrincipal(
      db,
      settings(),
      await assertion(claims, options),
      Date.now(),
    );
    expect(result.ok).toBe(false);
    expect(!result.ok && result.reason.message).toMatch(pattern);
  });

  it("refuses an assertion signed by a key the team does not publish", async () => {
    const stranger = await TestIssuer.create("not-access");
    const token = await stranger.sign(
      { aud: AUD, email: "y@example.com" },
      { issuer: `https://${TEAM}` },
    );
    const result = await accessPrincipal(db, settings(), token, Date.now());
    expect(!result.ok && result.reason.details?.check).toBe("unknown_key");
  });

  it("refuses a disabled user", async () => {
    const first = await accessPrincipal(
      db,
      settings(),
      await assertion({ email: "z@example.com" }),
      Date.now(),
    );
    if (!first.ok) {
      throw new Error(first.reason.message);
    }
    await setUserDisabled(db, {
      orgId,
      userId: first.value.userId,
      disabled: true,
      actor: tokenActor("t"),
      now: Date.now(),
    });
    const again = await accessPrincipal(
      db,
      settings(),
      await assertion({ email: "z@example.com" }),
      Date.now(),
    );
    expect(!again.ok && again.reason.message).toMatch(/disabled/);
  });
});
