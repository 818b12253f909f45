/**
 * `/ui/terraform-token`: the page `terraform login` opens on a host without `login.v1`
 * (`internal/command/login.go` opens `/app/settings/tokens?source=terraform-login`, which
 * redirects here). A signed-in person creates a personal token, shown once, to paste into the
 * terminal; an org-token session cannot, since the token is a person's.
 */
import { z } from "@hono/zod-openapi";
import { type Context, Hono } from "hono";
import { actorOf } from "../authz/principal.ts";
import { ApiError } from "../errors.ts";
import { createUserToken } from "../users/tokens.ts";
import { readForm, viewerOf } from "./forms.ts";
import { Csrf, Layout, Notice } from "./layout.tsx";
import type { UiEnv } from "./session.ts";

function userOf(c: Context<UiEnv>) {
  const { principal } = c.var.session;
  if (principal.kind !== "user") {
    throw new ApiError(
      "FORBIDDEN",
      "terraform login makes a personal token: sign in as yourself (SSO), not with an org token",
    );
  }
  return principal;
}

export const terraformTokenPages = new Hono<UiEnv>()
  .get("/", (c) => {
    userOf(c);
    const viewer = viewerOf(c);
    return c.html(
      <Layout title="A token for terraform login" section="account" viewer={viewer}>
        <p>
          Create a personal token for the Terraform CLI, then paste it where{" "}
          <code>terraform login</code> asks for it. It acts as you, with your teams' access.
        </p>
        <form method="post" action="/ui/terraform-token">
          <Csrf token={viewer.csrf} />
          <button type="submit">Create a token</button>
        </form>
      </Layout>,
    );
  })
  .post("/", async (c) => {
    await readForm(c, z.strictObject({}));
    const me = userOf(c);
    const created = await createUserToken(c.var.db, {
      orgId: me.orgId,
      userId: me.userId,
      description: "terraform login",
      expiresInSeconds: null,
      actor: actorOf(me),
      now: c.var.deps.now(),
    });
    c.header("Cache-Control", "no-store");
    return c.html(
      <Layout title="Your Terraform token" section="account" viewer={viewerOf(c)}>
        <Notice kind="ok">Copy this token now: it is shown only once.</Notice>
        <p class="mono" id="terraform-token">
          {created.token}
        </p>
      </Layout>,
      201,
    );
  });
