/**
 * `GET /api/v2/account/details` (go-tfe `Users.ReadCurrent`), which `terraform login` calls to
 * check a pasted token: a personal token answers its person, an organization or team token a
 * service-account user; missing, unknown and revoked tokens are JSON:API 401s.
 */
import { describe, expect, it } from "vitest";
import { revokeUserToken } from "../../src/users/tokens.ts";
import { describeAuth } from "./helpers/auth-matrix.ts";
import { db, seedOrg } from "./helpers/fixtures.ts";
import { seedTeam, seedUser } from "./helpers/people.ts";
import { type Document, type ErrorsDocument, JSONAPI, orgName, tfe } from "./helpers/tfe.ts";

describe("GET /api/v2/account/details", () => {
  it("answers a person's token with that person", async () => {
    const org = await seedOrg();
    const user = await seedUser(org, { name: "Ada Lovelace" });
    const res = await tfe<Document>("/account/details", { token: user.token });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain(JSONAPI);
    expect(res.body.data).toEqual({
      id: user.userId,
      type: "users",
      attributes: { username: "Ada Lovelace", email: user.email, "is-service-account": false },
    });
  });

  it("names a person without a name by their email", async () => {
    const org = await seedOrg();
    const user = await seedUser(org);
    const res = await tfe<Document>("/account/details", { token: user.token });
    expect(res.body.data.attributes.username).toBe(user.email);
  });

  it("answers a team token with the team's service account", async () => {
    const org = await seedOrg();
    const team = await seedTeam(org, { name: "platform" });
    const res = await tfe<Document>("/account/details", { token: team.token });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({
      id: team.teamId,
      type: "users",
      attributes: { username: "api-team-platform", "is-service-account": true },
    });
  });

  it("answers an organization token with the organization's service account", async () => {
    const org = await seedOrg();
    const res = await tfe<Document>("/account/details", { token: org.tokens.reader });
    expect(res.status).toBe(200);
    expect(res.body.data.type).toBe("users");
    expect(res.body.data.attributes).toEqual({
      username: `api-org-${await orgName(org)}`,
      "is-service-account": true,
    });
  });

  it("refuses a revoked personal token with a JSON:API 401", async () => {
    const org = await seedOrg();
    const user = await seedUser(org);
    const revoked = await revokeUserToken(db, {
      orgId: org.orgId,
      userId: user.userId,
      tokenId: user.tokenId,
      actor: { type: "user", id: user.userId, name: user.email },
      now: Date.now(),
    });
    expect(revoked.ok).toBe(true);
    const res = await tfe<ErrorsDocument>("/account/details", { token: user.token });
    expect(res.status).toBe(401);
    expect(res.body.errors[0]?.status).toBe("401");
  });
});

describeAuth("GET /api/v2/account/details", {
  target: () => ({ method: "GET", path: "/api/v2/account/details" }),
  role: "reader",
  hasOrgIds: false,
});
