/**
 * Dashboard pages for agent pools and agent tokens. Each handler calls the same service function
 * as the JSON API and checks the same role again, whatever buttons the page showed.
 */
import { z } from "@hono/zod-openapi";
import { type Context, Hono } from "hono";
import { ApiError } from "../errors.ts";
import { PoolName } from "../pools/model.ts";
import {
  createAgentToken,
  createPool,
  getPoolDetail,
  listAgentTokens,
  listPools,
  listPoolsWithSummary,
  revokeAgentToken,
} from "../pools/service.ts";
import { roleAtLeast } from "../tokens/model.ts";
import { idOf, noticeText, readForm, redirectWithNotice, viewerOf } from "./forms.ts";
import { AgentRows, type CreatedToken, PoolPage, PoolsPage } from "./pages/pools.tsx";
import { requireUiRole, type UiEnv } from "./session.ts";

const NOTICES = {
  "token-revoked": "The agent token was revoked; its agents are told to exit.",
};

async function renderPool(
  c: Context<UiEnv>,
  poolId: string,
  extra: { created?: CreatedToken; error?: string; status?: 200 | 400 | 409 | 201 } = {},
) {
  const { orgId, role } = c.var.session;
  const detail = await getPoolDetail(c.var.db, c.env, orgId, poolId);
  if (!detail.ok) {
    throw new ApiError("NOT_FOUND", `pool ${poolId} not found`);
  }
  // Agent-token metadata is the owners' business, as in the API: nobody else's page loads it.
  const tokens = roleAtLeast(role, "owner")
    ? await listAgentTokens(c.var.db, c.env, orgId, poolId)
    : null;
  if (tokens && !tokens.ok) {
    throw new ApiError("NOT_FOUND", `pool ${poolId} not found`);
  }
  const { agents, workspaces, ...pool } = detail.value;
  return c.html(
    <PoolPage
      viewer={viewerOf(c)}
      pool={pool}
      agents={agents}
      workspaces={workspaces}
      tokens={tokens?.value ?? null}
      address={new URL(c.req.url).origin}
      created={extra.created}
      notice={noticeText(c, NOTICES)}
      error={extra.error}
    />,
    extra.status ?? 200,
  );
}

export const poolPages = new Hono<UiEnv>()
  .get("/", async (c) => {
    const pools = await listPoolsWithSummary(c.var.db, c.env, c.var.session.orgId);
    return c.html(<PoolsPage viewer={viewerOf(c)} pools={pools} />);
  })
  .post("/", requireUiRole("owner"), async (c) => {
    const form = await readForm(
      c,
      z.strictObject({ name: PoolName, description: z.string().max(500).default("") }),
    );
    const { session } = c.var;
    const result = await createPool(c.var.db, c.env, {
      orgId: session.orgId,
      actor: session.tokenId,
      name: form.name,
      description: form.description,
    });
    if (!result.ok) {
      const pools = await listPools(c.var.db, session.orgId);
      return c.html(
        <PoolsPage
          viewer={viewerOf(c)}
          pools={pools}
          error={`A pool named ${form.name} already exists.`}
        />,
        409,
      );
    }
    return c.redirect(`/ui/pools/${result.value.id}`, 303);
  })
  .get("/:poolId", (c) => renderPool(c, idOf(c, "poolId", "pool")))
  .get("/:poolId/live.json", async (c) => {
    const poolId = idOf(c, "poolId", "pool");
    const detail = await getPoolDetail(c.var.db, c.env, c.var.session.orgId, poolId);
    if (!detail.ok) {
      throw new ApiError("NOT_FOUND", `pool ${poolId} not found`);
    }
    const agents = await (<AgentRows agents={detail.value.agents} />).toString();
    c.header("Cache-Control", "no-store");
    return c.json({ fragments: { agents } });
  })
  .post("/:poolId/tokens", requireUiRole("owner"), async (c) => {
    const poolId = idOf(c, "poolId", "pool");
    const form = await readForm(
      c,
      z.strictObject({ description: z.string().trim().min(1).max(200) }),
    );
    const { session } = c.var;
    const result = await createAgentToken(c.var.db, {
      orgId: session.orgId,
      poolId,
      description: form.description,
      actor: session.tokenId,
    });
    if (!result.ok) {
      throw new ApiError("NOT_FOUND", `pool ${poolId} not found`);
    }
    // Rendered in the POST answer (not redirected), so the secret never lands in a URL or history.
    return renderPool(c, poolId, {
      created: { description: result.value.description, token: result.value.token },
      status: 201,
    });
  })
  .post("/:poolId/tokens/:tokenId/revoke", requireUiRole("owner"), async (c) => {
    const poolId = idOf(c, "poolId", "pool");
    const tokenId = idOf(c, "tokenId", "atok");
    const form = await readForm(c, z.strictObject({ confirm: z.string().max(200) }));
    const { session } = c.var;
    const tokens = await listAgentTokens(c.var.db, c.env, session.orgId, poolId);
    const token = tokens.ok ? tokens.value.find((t) => t.id === tokenId) : undefined;
    if (!token) {
      throw new ApiError("NOT_FOUND", `agent token ${tokenId} not found`);
    }
    if (form.confirm !== token.description) {
      return renderPool(c, poolId, {
        error: "The description you typed does not match; the token was not revoked.",
        status: 400,
      });
    }
    const result = await revokeAgentToken(c.var.db, c.env, {
      orgId: session.orgId,
      poolId,
      id: tokenId,
      actor: session.tokenId,
    });
    if (!result.ok) {
      throw new ApiError("NOT_FOUND", `agent token ${tokenId} not found`);
    }
    return redirectWithNotice(c, `/ui/pools/${poolId}`, "token-revoked");
  });
