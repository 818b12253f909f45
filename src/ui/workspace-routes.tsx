/**
 * Dashboard pages for workspaces: settings (execution mode, pool), lock, variables and queueing
 * runs. Same services and the same roles as `/api/v1/workspaces…`, checked again here.
 */
import { z } from "@hono/zod-openapi";
import { RUN_OPERATIONS } from "@outpost/protocol";
import { type Context, Hono } from "hono";
import { authorizeWorkspace } from "../authz/http.ts";
import { decideWorkspace, type Grants, type WorkspaceAction } from "../authz/model.ts";
import { actorOf, principalId } from "../authz/principal.ts";
import { ApiError } from "../errors.ts";
import { listPools } from "../pools/service.ts";
import { presentRun } from "../runs/present.ts";
import { listRunsPage } from "../runs/queries.ts";
import { createRun } from "../runs/service.ts";
import { whyWaiting } from "../runs/why.ts";
import { listTeamAccess } from "../teams/access.ts";
import { listTeams } from "../teams/service.ts";
import { CATEGORIES } from "../variables/model.ts";
import {
  deleteVariable,
  listVariables,
  putVariable,
  type VariableFailure,
} from "../variables/service.ts";
import { lockWorkspace, unlockWorkspace } from "../workspaces/lock.ts";
import { lockHolderKind } from "../workspaces/model.ts";
import type { WorkspaceRow } from "../workspaces/queries.ts";
import {
  listWorkspaces,
  presentWorkspace,
  resolveWorkspace,
  updateWorkspace,
  type WorkspaceFailure,
} from "../workspaces/service.ts";
import { Checkbox, idOf, noticeText, readForm, redirectWithNotice, viewerOf } from "./forms.ts";
import { WorkspacePage, WorkspacesPage } from "./pages/workspaces.tsx";
import type { UiEnv } from "./session.ts";

const NOTICES = {
  saved: "Settings saved.",
  locked: "Workspace locked.",
  unlocked: "Workspace unlocked.",
  "variable-saved": "Variable saved.",
  "variable-deleted": "Variable deleted.",
  "team-access-saved": "Team access saved.",
  "team-access-removed": "Team access removed.",
};

/**
 * The workspace of the page once `may` allowed `action` on it (404 when the viewer cannot see it,
 * 403 when it may not act), with what the viewer holds there.
 */
export async function workspaceOf(
  c: Context<UiEnv>,
  action: WorkspaceAction,
): Promise<{ row: WorkspaceRow; grants: Grants }> {
  const id = idOf(c, "workspaceId", "ws");
  const row = await resolveWorkspace(c.var.db, c.var.session.orgId, id);
  if (!row) {
    throw new ApiError("NOT_FOUND", `workspace ${id} not found`);
  }
  const grants = await authorizeWorkspace(c.var.db, c.var.session.principal, action, row);
  return { row, grants };
}

const actor = (c: Context<UiEnv>) => actorOf(c.var.session.principal);

function workspaceProblem(failure: WorkspaceFailure): ApiError {
  switch (failure.reason) {
    case "not_found":
      return new ApiError("NOT_FOUND", "workspace not found");
    case "invalid":
      return new ApiError("BAD_REQUEST", failure.message);
    case "locked":
    case "needs_force":
      return new ApiError("CONFLICT", `the workspace is locked by ${failure.lockedBy}`);
    case "not_lock_holder":
      return new ApiError("FORBIDDEN", `only ${failure.lockedBy} or an admin may unlock it`);
    case "name_taken":
      return new ApiError("CONFLICT", `a workspace named ${failure.name} exists`);
    case "active_runs":
      return new ApiError("CONFLICT", "the workspace has active runs");
    case "state_locked":
      return new ApiError("CONFLICT", "the workspace's state is locked");
    case "has_state":
      return new ApiError("CONFLICT", `the engine cannot change: ${failure.message}`);
  }
}

function variableProblem(failure: VariableFailure): ApiError {
  switch (failure.reason) {
    case "not_found":
      return new ApiError("NOT_FOUND", "variable not found");
    case "ambiguous":
      return new ApiError("BAD_REQUEST", "the key exists in both categories");
    case "invalid":
      return new ApiError("BAD_REQUEST", failure.message);
    case "too_many":
      return new ApiError("CONFLICT", "this workspace has the maximum number of variables");
    case "conflict":
      return new ApiError("CONFLICT", "the variable was changed concurrently; retry");
    case "no_encryption_key":
      return new ApiError("UNAVAILABLE", `sensitive variables are unavailable: ${failure.message}`);
  }
}

export const workspacePages = new Hono<UiEnv>()
  .get("/", async (c) => {
    const { orgId, principal } = c.var.session;
    const [rows, pools] = await Promise.all([
      listWorkspaces(c.var.db, principal, { limit: 200 }),
      principal.role === null ? [] : listPools(c.var.db, orgId),
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
    const { row, grants } = await workspaceOf(c, "workspace.read");
    const { orgId, principal } = c.var.session;
    const deps = { db: c.var.db, env: c.env };
    const [pools, runRows, variables, teamAccess, teams] = await Promise.all([
      principal.role === null ? [] : listPools(c.var.db, orgId),
      listRunsPage(c.var.db, { orgId, workspaceId: row.id }, { limit: 20 }),
      listVariables(c.var.db, row.id),
      listTeamAccess(c.var.db, row.id),
      listTeams(c.var.db, orgId),
    ]);
    const runs = await Promise.all(
      runRows.slice(0, 20).map(async (r) => presentRun(r, await whyWaiting(deps, r))),
    );
    return c.html(
      <WorkspacePage
        viewer={viewerOf(c, grants)}
        workspace={presentWorkspace(row)}
        pools={pools}
        runs={runs}
        variables={variables}
        teamAccess={teamAccess}
        teams={teams}
        notice={noticeText(c, NOTICES)}
      />,
    );
  })
  .post("/:workspaceId/settings", async (c) => {
    const { row } = await workspaceOf(c, "workspace.update");
    const form = await readForm(
      c,
      z.strictObject({
        executionMode: z.enum(["agent", "local"]),
        poolId: z.union([z.literal(""), z.string().regex(/^pool_[a-z2-7]{26}$/)]),
      }),
    );
    const result = await updateWorkspace(c.var.db, {
      orgId: c.var.session.orgId,
      ref: row.id,
      actor: actor(c),
      patch: { executionMode: form.executionMode, poolId: form.poolId === "" ? null : form.poolId },
    });
    if (!result.ok) {
      throw workspaceProblem(result);
    }
    return redirectWithNotice(c, `/ui/workspaces/${row.id}`, "saved");
  })
  .post("/:workspaceId/workload-identity", async (c) => {
    const { row } = await workspaceOf(c, "workspace.update");
    const form = await readForm(
      c,
      z.strictObject({ enabled: Checkbox, audience: z.string().trim().max(500).default("") }),
    );
    const result = await updateWorkspace(c.var.db, {
      orgId: c.var.session.orgId,
      ref: row.id,
      actor: actor(c),
      patch: {
        workloadIdentity: form.enabled,
        workloadIdentityAudience: form.audience === "" ? null : form.audience,
      },
    });
    if (!result.ok) {
      throw workspaceProblem(result);
    }
    return redirectWithNotice(c, `/ui/workspaces/${row.id}`, "saved");
  })
  .post("/:workspaceId/lock", async (c) => {
    const { row } = await workspaceOf(c, "workspace.lock");
    await readForm(c, z.strictObject({}));
    const result = await lockWorkspace(c.var.db, {
      orgId: c.var.session.orgId,
      ref: row.id,
      holderId: principalId(c.var.session.principal),
      actor: actor(c),
      reason: "locked from the dashboard",
    });
    if (!result.ok) {
      throw workspaceProblem(result);
    }
    return redirectWithNotice(c, `/ui/workspaces/${row.id}`, "locked");
  })
  .post("/:workspaceId/unlock", async (c) => {
    const { row, grants } = await workspaceOf(c, "workspace.lock");
    await readForm(c, z.strictObject({}));
    const isAdmin = decideWorkspace(grants, "workspace.force_unlock") === "allow";
    const result = await unlockWorkspace(c.var.db, {
      orgId: c.var.session.orgId,
      ref: row.id,
      holderId: principalId(c.var.session.principal),
      actor: actor(c),
      isAdmin,
      // Admins may release a user's lock from here; a run's lock is released by the run.
      force: isAdmin && row.lockedBy !== null && lockHolderKind(row.lockedBy) === "user",
    });
    if (!result.ok) {
      throw workspaceProblem(result);
    }
    return redirectWithNotice(c, `/ui/workspaces/${row.id}`, "unlocked");
  })
  .post("/:workspaceId/vars", async (c) => {
    const { row } = await workspaceOf(c, "variables.write");
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
    const result = await putVariable(c.var.db, {
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
      actor: actor(c),
      encryptionKey: c.env.ENCRYPTION_KEY,
    });
    if (!result.ok) {
      throw variableProblem(result);
    }
    return redirectWithNotice(c, `/ui/workspaces/${row.id}`, "variable-saved");
  })
  .post("/:workspaceId/vars/:category/:key/delete", async (c) => {
    const { row } = await workspaceOf(c, "variables.write");
    await readForm(c, z.strictObject({}));
    const category = z.enum(CATEGORIES).safeParse(c.req.param("category"));
    if (!category.success) {
      throw new ApiError("NOT_FOUND", "variable not found");
    }
    const result = await deleteVariable(c.var.db, {
      orgId: c.var.session.orgId,
      workspaceId: row.id,
      key: c.req.param("key"),
      category: category.data,
      actor: actor(c),
    });
    if (!result.ok) {
      throw variableProblem(result);
    }
    return redirectWithNotice(c, `/ui/workspaces/${row.id}`, "variable-deleted");
  })
  .post("/:workspaceId/runs", async (c) => {
    const { row } = await workspaceOf(c, "run.queue");
    const form = await readForm(
      c,
      z.strictObject({
        operation: z.enum(RUN_OPERATIONS),
        message: z.string().max(2000).default(""),
      }),
    );
    if (row.autoApply && form.operation !== "plan") {
      await authorizeWorkspace(c.var.db, c.var.session.principal, "run.queue_auto_apply", row);
    }
    const result = await createRun({ db: c.var.db, env: c.env }, row, {
      operation: form.operation,
      message: form.message,
      source: "ui",
      actor: actor(c),
    });
    if (!result.ok) {
      const messages = {
        local_workspace: "This workspace uses local execution; runs happen on your machine.",
        no_pool: "This workspace has no agent pool.",
        no_configuration: "This workspace has no configuration version; upload one first.",
        configuration_not_found: "The configuration version was not found.",
        pull_request_configuration:
          "That configuration is a pull request's commit: only a speculative plan may run on it.",
        over_queue_limit: "Too many queued runs in this organization; retry later.",
      } as const;
      throw new ApiError(
        result.reason === "over_queue_limit" ? "RATE_LIMITED" : "CONFLICT",
        messages[result.reason],
      );
    }
    return c.redirect(`/ui/runs/${result.value.run.id}`, 303);
  });
