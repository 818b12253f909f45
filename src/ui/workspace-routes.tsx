/**
 * Dashboard pages for workspaces: settings (execution mode, pool), lock, variables and queueing
 * runs. Same services and the same roles as `/api/v1/workspaces…`, checked again here.
 */
import { z } from "@hono/zod-openapi";
import { RUN_OPERATIONS } from "@outpost/protocol";
import { type Context, Hono } from "hono";
import { ApiError, valueOrThrow } from "../errors.ts";
import { listPools } from "../pools/service.ts";
import { presentRun } from "../runs/present.ts";
import { listRunsPage } from "../runs/queries.ts";
import { createRun } from "../runs/service.ts";
import { whyWaiting } from "../runs/why.ts";
import { roleAtLeast } from "../tokens/model.ts";
import { CATEGORIES } from "../variables/model.ts";
import { deleteVariable, listVariables, putVariable } from "../variables/service.ts";
import { lockWorkspace, unlockWorkspace } from "../workspaces/lock.ts";
import { lockHolderKind } from "../workspaces/model.ts";
import type { WorkspaceRow } from "../workspaces/queries.ts";
import {
  listWorkspaces,
  presentWorkspace,
  resolveWorkspace,
  updateWorkspace,
} from "../workspaces/service.ts";
import { Checkbox, idOf, noticeText, readForm, redirectWithNotice, viewerOf } from "./forms.ts";
import { WorkspacePage, WorkspacesPage } from "./pages/workspaces.tsx";
import { requireUiRole, type UiEnv } from "./session.ts";

const NOTICES = {
  saved: "Settings saved.",
  locked: "Workspace locked.",
  unlocked: "Workspace unlocked.",
  "variable-saved": "Variable saved.",
  "variable-deleted": "Variable deleted.",
};

async function workspaceOf(c: Context<UiEnv>): Promise<WorkspaceRow> {
  const id = idOf(c, "workspaceId", "ws");
  const row = await resolveWorkspace(c.var.db, c.var.session.orgId, id);
  if (!row) {
    throw new ApiError("NOT_FOUND", `workspace ${id} not found`);
  }
  return row;
}

export const workspacePages = new Hono<UiEnv>()
  .get("/", async (c) => {
    const { orgId } = c.var.session;
    const [rows, pools] = await Promise.all([
      listWorkspaces(c.var.db, orgId, { limit: 200 }),
      listPools(c.var.db, orgId),
    ]);
    return c.html(
      <WorkspacesPage
        viewer={viewerOf(c)}
        workspaces={rows.map((r) => r.workspace)}
        pools={pools}
      />,
    );
  })
  .get("/:workspaceId", async (c) => {
    const row = await workspaceOf(c);
    const { orgId } = c.var.session;
    const { deps } = c.var;
    const [pools, runRows, variables] = await Promise.all([
      listPools(c.var.db, orgId),
      listRunsPage(c.var.db, { orgId, workspaceId: row.id }, { limit: 20 }),
      listVariables(c.var.db, row.id),
    ]);
    const runs = await Promise.all(
      runRows.slice(0, 20).map(async (r) => presentRun(r, await whyWaiting(deps, r))),
    );
    return c.html(
      <WorkspacePage
        viewer={viewerOf(c)}
        workspace={presentWorkspace(row)}
        pools={pools}
        runs={runs}
        variables={variables}
        notice={noticeText(c, NOTICES)}
      />,
    );
  })
  .post("/:workspaceId/settings", requireUiRole("admin"), async (c) => {
    const row = await workspaceOf(c);
    const form = await readForm(
      c,
      z.strictObject({
        executionMode: z.enum(["agent", "local"]),
        poolId: z.union([z.literal(""), z.string().regex(/^pool_[a-z2-7]{26}$/)]),
      }),
    );
    const result = await updateWorkspace(c.var.deps, {
      orgId: c.var.session.orgId,
      ref: row.id,
      actor: c.var.session.tokenId,
      patch: { executionMode: form.executionMode, poolId: form.poolId === "" ? null : form.poolId },
    });
    valueOrThrow(result);
    return redirectWithNotice(c, `/ui/workspaces/${row.id}`, "saved");
  })
  .post("/:workspaceId/workload-identity", requireUiRole("admin"), async (c) => {
    const row = await workspaceOf(c);
    const form = await readForm(
      c,
      z.strictObject({ enabled: Checkbox, audience: z.string().trim().max(500).default("") }),
    );
    const result = await updateWorkspace(c.var.deps, {
      orgId: c.var.session.orgId,
      ref: row.id,
      actor: c.var.session.tokenId,
      patch: {
        workloadIdentity: form.enabled,
        workloadIdentityAudience: form.audience === "" ? null : form.audience,
      },
    });
    valueOrThrow(result);
    return redirectWithNotice(c, `/ui/workspaces/${row.id}`, "saved");
  })
  .post("/:workspaceId/lock", requireUiRole("member"), async (c) => {
    const row = await workspaceOf(c);
    await readForm(c, z.strictObject({}));
    const result = await lockWorkspace(c.var.deps, {
      orgId: c.var.session.orgId,
      ref: row.id,
      tokenId: c.var.session.tokenId,
      reason: "locked from the dashboard",
    });
    valueOrThrow(result);
    return redirectWithNotice(c, `/ui/workspaces/${row.id}`, "locked");
  })
  .post("/:workspaceId/unlock", requireUiRole("member"), async (c) => {
    const row = await workspaceOf(c);
    await readForm(c, z.strictObject({}));
    const isAdmin = roleAtLeast(c.var.session.role, "admin");
    const result = await unlockWorkspace(c.var.deps, {
      orgId: c.var.session.orgId,
      ref: row.id,
      tokenId: c.var.session.tokenId,
      isAdmin,
      // Admins may release a user's lock from here; a run's lock is released by the run.
      force: isAdmin && row.lockedBy !== null && lockHolderKind(row.lockedBy) === "user",
    });
    valueOrThrow(result);
    return redirectWithNotice(c, `/ui/workspaces/${row.id}`, "unlocked");
  })
  .post("/:workspaceId/vars", requireUiRole("admin"), async (c) => {
    const row = await workspaceOf(c);
    const form = await readForm(
      c,
      z.strictObject({
        key: z.string().min(1).max(128),
        value: z
          .string()
          .max(256 * 1024)
          .default(""),
        category: z.enum(CATEGORIES),
        description: z.string().max(500).default(""),
        sensitive: Checkbox,
        hcl: Checkbox,
      }),
    );
    const result = await putVariable(c.var.deps, {
      orgId: c.var.session.orgId,
      workspaceId: row.id,
      key: form.key,
      write: {
        category: form.category,
        value: form.value,
        hcl: form.hcl,
        sensitive: form.sensitive,
        description: form.description,
      },
      actor: c.var.session.tokenId,
      encryptionKey: c.env.ENCRYPTION_KEY,
    });
    valueOrThrow(result);
    return redirectWithNotice(c, `/ui/workspaces/${row.id}`, "variable-saved");
  })
  .post("/:workspaceId/vars/:category/:key/delete", requireUiRole("admin"), async (c) => {
    const row = await workspaceOf(c);
    await readForm(c, z.strictObject({}));
    const category = z.enum(CATEGORIES).safeParse(c.req.param("category"));
    if (!category.success) {
      throw new ApiError("NOT_FOUND", "variable not found");
    }
    const result = await deleteVariable(c.var.deps, {
      orgId: c.var.session.orgId,
      workspaceId: row.id,
      key: c.req.param("key"),
      category: category.data,
      actor: c.var.session.tokenId,
    });
    valueOrThrow(result);
    return redirectWithNotice(c, `/ui/workspaces/${row.id}`, "variable-deleted");
  })
  .post("/:workspaceId/runs", requireUiRole("member"), async (c) => {
    const row = await workspaceOf(c);
    const form = await readForm(
      c,
      z.strictObject({
        operation: z.enum(RUN_OPERATIONS),
        message: z.string().max(2000).default(""),
      }),
    );
    const result = await createRun(c.var.deps, row, {
      operation: form.operation,
      message: form.message,
      source: "ui",
      actor: c.var.session.tokenId,
    });
    const { run } = valueOrThrow(result);
    return c.redirect(`/ui/runs/${run.id}`, 303);
  });
