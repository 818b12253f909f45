/**
 * Dashboard pages for agent pools and agent tokens. Each handler calls the same service function
 * as the JSON API and checks the same role again, whatever buttons the page showed.
 */
import { z } from "@hono/zod-openapi";
import { type Context, Hono } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { decideOrganization } from "../authz/model.ts";
import { actorOf } from "../authz/principal.ts";
import { ApiError, reasonError, reasonStatus, valueOrThrow } from "../errors.ts";
import { publicOrigin } from "../lib/public-url.ts";
import { ClaimConditions, parseClaimLines } from "../oidc/trust-model.ts";
import { createTrust, deleteTrust, listTrusts } from "../oidc/trust-service.ts";
import { getAutoscaling } from "../pools/autoscaling.ts";
import { MAX_POOL_SCOPE_ENTRIES, PoolName } from "../pools/model.ts";
import { changePool } from "../pools/scope-service.ts";
import {
  createAgentToken,
  createPool,
  getPoolDetail,
  listAgentTokens,
  listPools,
  listPoolsWithSummary,
  revokeAgentToken,
} from "../pools/service.ts";
import { listProjects, resolveProject } from "../projects/service.ts";
import { listWorkspaces, resolveWorkspace } from "../workspaces/service.ts";
import { Checkbox, idOf, noticeText, readForm, redirectWithNotice, viewerOf } from "./forms.ts";
import { AgentRows, type CreatedToken, PoolPage, PoolsPage } from "./pages/pools.tsx";
import { requireUiPermission, type UiEnv } from "./session.ts";

const NOTICES = {
  "scope-saved": "The pool's scope was saved; waiting runs it no longer allows have errored.",
  "token-revoked": "The agent token was revoked; its agents are told to exit.",
  "trust-added": "The OIDC trust was added.",
  "trust-removed":
    "The OIDC trust was removed; the agent tokens it issued are revoked and their agents told to exit.",
};

/** The add-trust form: claim conditions as `name=pattern` lines, checked as the API checks them. */
const TrustForm = z.strictObject({
  issuer: z.string().trim().min(1).max(500),
  audience: z.string().trim().min(1).max(500),
  claims: z
    .string()
    .max(20_000)
    .transform((text, ctx) => {
      const parsed = parseClaimLines(text);
      if (!parsed.ok) {
        ctx.addIssue({
          code: "custom",
          message: `${JSON.stringify(parsed.line.slice(0, 100))} is not name=pattern (or names a claim twice)`,
        });
        return z.NEVER;
      }
      return parsed.value;
    })
    .pipe(ClaimConditions),
  description: z.string().trim().max(200).default(""),
});

/** Whether the viewer manages the pool's tokens (owners). */
function isOwner(c: Context<UiEnv>): boolean {
  return decideOrganization(c.var.session.principal.role, "pools.manage") === "allow";
}

/** What only owners see on a pool's page, as in the API: its agent tokens and OIDC trusts. */
async function ownerData(c: Context<UiEnv>, poolId: string) {
  const { orgId } = c.var.session;
  if (!isOwner(c)) {
    return { tokens: null, trusts: null };
  }
  const [tokens, trusts] = await Promise.all([
    listAgentTokens(c.var.deps, orgId, poolId),
    listTrusts(c.var.db, orgId, poolId),
  ]);
  return { tokens: valueOrThrow(tokens), trusts: valueOrThrow(trusts) };
}

/** Names, one per line, as a list: blank lines dropped, at most the scope's limit. */
const NameLines = z
  .string()
  .max(20_000)
  .default("")
  .transform((text) =>
    text
      .split(/\r?\n/)
      .map((line) => line.trim())
      .filter((line) => line !== ""),
  )
  .pipe(z.array(z.string().max(90)).max(MAX_POOL_SCOPE_ENTRIES));

/** The ids of the named projects or workspaces of the org; an unknown name is a 400. */
async function idsOf(
  c: Context<UiEnv>,
  type: "project" | "workspace",
  names: string[],
): Promise<string[]> {
  const { orgId } = c.var.session;
  const found = await Promise.all(
    names.map((name) =>
      type === "project"
        ? resolveProject(c.var.db, orgId, name)
        : resolveWorkspace(c.var.db, orgId, name),
    ),
  );
  return found.map((row, i) => {
    if (!row) {
      throw new ApiError("BAD_REQUEST", `${type} ${names[i]} not found in this organization`);
    }
    return row.id;
  });
}

/** The projects and workspaces the viewer sees, to name the ids of a pool's scope. */
async function scopeNames(c: Context<UiEnv>) {
  const { principal } = c.var.session;
  const [projects, workspaces] = await Promise.all([
    listProjects(c.var.db, principal, { limit: 200 }),
    listWorkspaces(c.var.db, principal, { limit: 200 }),
  ]);
  return {
    projects: projects.map((p) => ({ id: p.row.id, name: p.row.name })),
    workspaces: workspaces.map((w) => ({ id: w.workspace.id, name: w.workspace.name })),
  };
}

async function renderPool(
  c: Context<UiEnv>,
  poolId: string,
  extra: { created?: CreatedToken; error?: string; status?: ContentfulStatusCode } = {},
) {
  const detail = valueOrThrow(
    await getPoolDetail(c.var.db, c.env, c.var.session.orgId, poolId, isOwner(c)),
  );
  const [{ tokens, trusts }, autoscaling, names] = await Promise.all([
    ownerData(c, poolId),
    getAutoscaling(c.var.deps, c.var.session.orgId, poolId),
    scopeNames(c),
  ]);
  const { agents, workspaces, ...pool } = detail;
  return c.html(
    <PoolPage
      viewer={viewerOf(c)}
      pool={pool}
      agents={agents}
      workspaces={workspaces}
      scopeNames={names}
      autoscaling={autoscaling.ok ? autoscaling.value : null}
      tokens={tokens}
      trusts={trusts}
      address={publicOrigin(c.env, c.req.url)}
      created={extra.created}
      notice={noticeText(c, NOTICES)}
      error={extra.error}
    />,
    extra.status ?? 200,
  );
}

export const poolPages = new Hono<UiEnv>()
  .use("*", requireUiPermission("pools.read"))
  .get("/", async (c) => {
    const pools = await listPoolsWithSummary(c.var.db, c.env, c.var.session.orgId);
    return c.html(<PoolsPage viewer={viewerOf(c)} pools={pools} />);
  })
  .post("/", requireUiPermission("pools.manage"), async (c) => {
    const form = await readForm(
      c,
      z.strictObject({ name: PoolName, description: z.string().max(500).default("") }),
    );
    const { session } = c.var;
    const result = await createPool(c.var.deps, {
      orgId: session.orgId,
      actor: actorOf(session.principal),
      name: form.name,
      description: form.description,
    });
    if (!result.ok) {
      const pools = await listPools(c.var.db, session.orgId);
      return c.html(
        <PoolsPage viewer={viewerOf(c)} pools={pools} error={`${result.reason.message}.`} />,
        reasonStatus(result.reason),
      );
    }
    return c.redirect(`/ui/pools/${result.value.id}`, 303);
  })
  .get("/:poolId", (c) => renderPool(c, idOf(c, "poolId", "pool")))
  .get("/:poolId/live.json", async (c) => {
    const poolId = idOf(c, "poolId", "pool");
    const detail = valueOrThrow(
      await getPoolDetail(c.var.db, c.env, c.var.session.orgId, poolId, isOwner(c)),
    );
    const now = c.var.deps.now();
    const agents = await (<AgentRows agents={detail.agents} now={now} />).toString();
    c.header("Cache-Control", "no-store");
    return c.json({ fragments: { agents } });
  })
  .post("/:poolId/scope", requireUiPermission("pools.manage"), async (c) => {
    const poolId = idOf(c, "poolId", "pool");
    const form = await readForm(
      c,
      z.strictObject({ organizationScoped: Checkbox, projects: NameLines, workspaces: NameLines }),
    );
    const [allowedProjectIds, allowedWorkspaceIds] = await Promise.all([
      idsOf(c, "project", form.projects),
      idsOf(c, "workspace", form.workspaces),
    ]);
    const { session } = c.var;
    const result = await changePool(c.var.deps, {
      orgId: session.orgId,
      id: poolId,
      actor: actorOf(session.principal),
      patch: {
        organizationScoped: form.organizationScoped,
        allowedProjectIds,
        allowedWorkspaceIds,
      },
    });
    valueOrThrow(result);
    return redirectWithNotice(c, `/ui/pools/${poolId}`, "scope-saved");
  })
  .post("/:poolId/tokens", requireUiPermission("pools.manage"), async (c) => {
    const poolId = idOf(c, "poolId", "pool");
    const form = await readForm(
      c,
      z.strictObject({ description: z.string().trim().min(1).max(200) }),
    );
    const { session } = c.var;
    const result = await createAgentToken(c.var.deps, {
      orgId: session.orgId,
      poolId,
      description: form.description,
      actor: actorOf(session.principal),
    });
    const created = valueOrThrow(result);
    // Rendered in the POST answer (not redirected), so the secret never lands in a URL or history.
    return renderPool(c, poolId, {
      created: { description: created.description, token: created.token },
      status: 201,
    });
  })
  .post("/:poolId/tokens/:tokenId/revoke", requireUiPermission("pools.manage"), async (c) => {
    const poolId = idOf(c, "poolId", "pool");
    const tokenId = idOf(c, "tokenId", "atok");
    const form = await readForm(c, z.strictObject({ confirm: z.string().max(200) }));
    const { session } = c.var;
    const tokens = await listAgentTokens(c.var.deps, session.orgId, poolId);
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
    const result = await revokeAgentToken(c.var.deps, {
      orgId: session.orgId,
      poolId,
      id: tokenId,
      actor: actorOf(session.principal),
    });
    valueOrThrow(result);
    return redirectWithNotice(c, `/ui/pools/${poolId}`, "token-revoked");
  })
  .post("/:poolId/oidc-trusts", requireUiPermission("pools.manage"), async (c) => {
    const poolId = idOf(c, "poolId", "pool");
    const form = await readForm(c, TrustForm);
    const { session } = c.var;
    const result = await createTrust(c.var.deps, {
      ...form,
      orgId: session.orgId,
      poolId,
      actor: actorOf(session.principal),
    });
    if (result.ok) {
      return redirectWithNotice(c, `/ui/pools/${poolId}`, "trust-added");
    }
    if (result.reason.kind === "not_found") {
      throw reasonError(result.reason);
    }
    return renderPool(c, poolId, {
      error: `The trust was not added: ${result.reason.message}.`,
      status: reasonStatus(result.reason),
    });
  })
  .post("/:poolId/oidc-trusts/:trustId/delete", requireUiPermission("pools.manage"), async (c) => {
    const poolId = idOf(c, "poolId", "pool");
    const trustId = idOf(c, "trustId", "otr");
    await readForm(c, z.strictObject({}));
    const { session } = c.var;
    const result = await deleteTrust(c.var.deps, {
      orgId: session.orgId,
      poolId,
      id: trustId,
      actor: actorOf(session.principal),
    });
    valueOrThrow(result);
    return redirectWithNotice(c, `/ui/pools/${poolId}`, "trust-removed");
  });
