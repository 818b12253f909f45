/**
 * `/ui/cli-login/{code}`: where `outpost login --sso` sends the person. Signed in (through SSO or
 * Access: the page needs a person, not an org token), they see the code their terminal shows and
 * approve it; the CLI's next poll then receives a personal token of theirs.
 */
import { z } from "@hono/zod-openapi";
import { type Context, Hono } from "hono";
import { ApiError, valueOrThrow } from "../errors.ts";
import { approveCliLogin, pendingCliLogin } from "../sso/cli-login.ts";
import { readForm, viewerOf } from "./forms.ts";
import { Csrf, Layout, Notice } from "./layout.tsx";
import type { UiEnv } from "./session.ts";

const CODE = /^[A-Z2-9]{4}-[A-Z2-9]{4}$/;

function codeOf(c: Context<UiEnv>): string {
  const code = c.req.param("code") ?? "";
  if (!CODE.test(code)) {
    throw new ApiError("NOT_FOUND", "that CLI login code is not valid");
  }
  return code;
}

function userOf(c: Context<UiEnv>) {
  const { principal } = c.var.session;
  if (principal.kind !== "user") {
    throw new ApiError(
      "FORBIDDEN",
      "a CLI login makes a personal token: sign in as yourself (SSO), not with an org token",
    );
  }
  return principal;
}

export const cliLoginPages = new Hono<UiEnv>()
  .get("/:code", async (c) => {
    const code = codeOf(c);
    userOf(c);
    const login = await pendingCliLogin(c.var.db, code, c.var.deps.now());
    if (!login) {
      throw new ApiError("NOT_FOUND", "this CLI login is unknown, expired or already approved");
    }
    const viewer = viewerOf(c);
    return c.html(
      <Layout title="Approve a CLI login" section="account" viewer={viewer}>
        <p>
          The Outpost CLI on <strong>{login.clientName}</strong> asks to sign in as you. Approve
          only if your terminal shows this code:
        </p>
        <p class="mono" id="cli-code">
          {code}
        </p>
        <form method="post" action={`/ui/cli-login/${code}`}>
          <Csrf token={viewer.csrf} />
          <button type="submit">Approve</button>
        </form>
      </Layout>,
    );
  })
  .post("/:code", async (c) => {
    await readForm(c, z.strictObject({}));
    const code = codeOf(c);
    const me = userOf(c);
    const approved = await approveCliLogin(c.var.db, {
      code,
      orgId: me.orgId,
      userId: me.userId,
      now: c.var.deps.now(),
    });
    valueOrThrow(approved);
    return c.html(
      <Layout title="CLI login approved" section="account" viewer={viewerOf(c)}>
        <Notice kind="ok">Approved. Return to your terminal: the CLI is signed in as you.</Notice>
      </Layout>,
    );
  });
