/**
 * `terraform login` against a host that advertises `tfe.v2` without `login.v1`: the CLI opens
 * `/app/settings/tokens?source=terraform-login` (`internal/command/login.go`,
 * `interactiveGetTokenByUI`) and asks for a token to paste. The page makes a personal token of
 * the signed-in person, which the TFE API then accepts with that person's access.
 */
import { describe, expect, it } from "vitest";
import { seedOrg } from "./helpers/fixtures.ts";
import { seedUser, sessionCookieOf } from "./helpers/people.ts";
import { type Document, orgName, tfe } from "./helpers/tfe.ts";
import { csrfOf, signIn, uiFetch } from "./helpers/ui.ts";

describe("terraform login's token page", () => {
  it("sends the CLI's URL to the token page, where a person creates a token the TFE API accepts", async () => {
    const opened = await uiFetch("/app/settings/tokens?source=terraform-login");
    expect(opened.status).toBe(303);
    expect(opened.headers.get("location")).toBe("/ui/terraform-token");

    const org = await seedOrg();
    const user = await seedUser(org);
    const cookie = await sessionCookieOf(org, user);
    const page = await uiFetch("/ui/terraform-token", { cookie });
    expect(page.status).toBe(200);
    const created = await uiFetch("/ui/terraform-token", {
      cookie,
      form: { _csrf: csrfOf(await page.text()) },
    });
    expect(created.status).toBe(201);
    expect(created.headers.get("cache-control")).toBe("no-store");
    const token = /id="terraform-token">\s*(op_user_[A-Za-z0-9_-]+)/.exec(
      await created.text(),
    )?.[1];
    expect(token).toMatch(/^op_user_/);
    const read = await tfe<Document>(`/organizations/${await orgName(org)}/entitlement-set`, {
      token: token ?? "",
    });
    expect(read.status).toBe(200);
  });

  it("refuses a forged form and an org-token session, creating no token", async () => {
    const org = await seedOrg();
    const user = await seedUser(org);
    const cookie = await sessionCookieOf(org, user);
    const forged = await uiFetch("/ui/terraform-token", { cookie, form: { _csrf: "forged" } });
    expect(forged.status).toBe(403);
    expect(await forged.text()).not.toContain("op_user_");
    const owner = await signIn(org.ownerToken);
    expect((await owner.get("/ui/terraform-token")).status).toBe(403);
    expect((await owner.post("/ui/terraform-token")).status).toBe(403);
  });

  it("sends a browser without a session to sign in first", async () => {
    const res = await uiFetch("/ui/terraform-token", {});
    expect([302, 303]).toContain(res.status);
    expect(res.headers.get("location")).toContain("/ui/login");
  });
});
