/** Dashboard page for org tokens: owners only, like `/api/v1/tokens`. */
import { z } from "@hono/zod-openapi";
import { type Context, Hono } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { actorOf } from "../authz/principal.ts";
import { ApiError, reasonError, reasonStatus } from "../errors.ts";
import { ROLES } from "../tokens/model.ts";
import { createOrgToken, listTokens, revokeOrgToken } from "../tokens/service.ts";
import { idOf, noticeText, readForm, redirectWithNotice, viewerOf } from "./forms.ts";
import { TokensPage } from "./pages/tokens.tsx";
import { requireUiPermission, type UiEnv } from "./session.ts";

const NOTICES = { "token-revoked": "The org token was revoked; its sessions ended with it." };

async function render(
  c: Context<UiEnv>,
  extra: {
    created?: { description: string; token: string };
    error?: string;
    status?: ContentfulStatusCode;
  } = {},
) {
  const tokens = await listTokens(c.var.db, c.var.session.orgId);
  return c.html(
    <TokensPage
      viewer={viewerOf(c)}
      tokens={tokens}
      created={extra.created}
      notice={noticeText(c, NOTICES)}
      error={extra.error}
    />,
    extra.status ?? 200,
  );
}

export const tokenPages = new Hono<UiEnv>()
  .use("*", requireUiPermission("org_tokens.manage"))
  .get("/", (c) => render(c))
  .post("/", async (c) => {
    const form = await readForm(
      c,
      z.strictObject({ description: z.string().trim().min(1).max(200), role: z.enum(ROLES) }),
    );
    const created = await createOrgToken(c.var.deps, {
      orgId: c.var.session.orgId,
      role: form.role,
      description: form.description,
      actor: actorOf(c.var.session.principal),
    });
    return render(c, {
      created: { description: created.description, token: created.token },
      status: 201,
    });
  })
  .post("/:tokenId/revoke", async (c) => {
    const tokenId = idOf(c, "tokenId", "tok");
    const form = await readForm(c, z.strictObject({ confirm: z.string().max(200) }));
    const { session } = c.var;
    const token = (await listTokens(c.var.db, session.orgId)).find((t) => t.id === tokenId);
    if (!token) {
      throw new ApiError("NOT_FOUND", `token ${tokenId} not found`);
    }
    if (form.confirm !== token.description) {
      return render(c, {
        error: "The description you typed does not match; the token was not revoked.",
        status: 400,
      });
    }
    const result = await revokeOrgToken(c.var.deps, {
      orgId: session.orgId,
      id: tokenId,
      actor: actorOf(session.principal),
    });
    if (!result.ok) {
      if (result.reason.kind === "not_found") {
        throw reasonError(result.reason);
      }
      return render(c, { error: `${result.reason.message}.`, status: reasonStatus(result.reason) });
    }
    return redirectWithNotice(c, "/ui/tokens", "token-revoked");
  });
