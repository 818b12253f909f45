/**
 * Dashboard pages for workspaces: settings (execution mode, pool), lock, variables, what a run
 * gets (with each value's source) and queueing runs. Same services and the same roles as `/api/v1/workspaces…`, checked again here.
 */
import { z } from "@hono/zod-openapi";
import { RUN_OPERATIONS } from "@outpost/protocol";
import { type Context, Hono } from "hono";
import { authorizeWorkspace } from "../authz/http.ts";
import {
  decideOrganization,
  decideWorkspace,
  type Grants,
  type WorkspaceAction,
} from "../authz/model.ts";
import { actorOf, principalId } from "../authz/principal.ts";
import { listConfigurationVersionRows } from "../configuration-versions/queries.ts";
import { presentConfigurationVersion } from "../configuration-versions/service.ts";
import { ApiError, valueOrThrow } from "../errors.ts";
import { publicOrigin } from "../lib/public-url.ts";
import { resolvedOrThrow } from "../names/http.ts";
import { offeredEngineVersions } from "../pools/engine-versions.ts";
import { poolScopeRefusal } from "../pools/model.ts";
import { listPools } from "../pools/service.ts";
import { listProjects, resolveProject } from "../projects/service.ts";
import { presentRun } from "../runs/present.ts";
import { listRunsPage } from "../runs/queries.ts";
import { createRun } from "../runs/service.ts";
import { whyWaiting } from "../runs/why.ts";
import { listTeamAccess } from "../teams/access.ts";
import { listTeams } from "../teams/service.ts";
import { showEffectiveVariables } from "../variables/effective.ts";
import { CATEGORIES } from "../variables/model.ts";
import { deleteVariable, listVariables, putVariable } from "../variables/service.ts";
import { lockWorkspace, unlockWorkspace } from "../workspaces/lock.ts";
import { lockHolderKind } from "../workspaces/model.ts";
import { findPoolScope, type WorkspaceRow } from "../workspaces/queries.ts";
import { listWorkspaces, presentWorkspace, updateWorkspace } from "../workspaces/service.ts";
import {
  Checkbox,
  noticeText,
  readForm,
  redirectWithNotice,
  VariableFormFields,
  viewerOf,
} from "./forms.ts";
import { WorkspacePage, WorkspacesPage } from "./pages/workspaces.tsx";
import type { UiEnv } from "./session.ts";

const NOTICES = {
  saved: "Settings saved.",
  created: "Workspace created.",
  uploaded: "Configuration uploaded: new runs use it.",
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
  // By id or by name, through the one resolver, as in the API.
  const ref = c.req.param("workspaceId") ?? "";
  const row = await resolvedOrThrow(c.var.db, "workspace", { orgId: c.var.session.orgId }, ref);
  const grants = await authorizeWorkspace(c.var.db, c.var.session.principal, action, row);
  return { row, grants };
}

const actor = (c: Context<UiEnv>) => actorOf(c.var.session.principal);

/**
 * The address the backend block names: the deployment's public one (never the request's Host);
 * without PUBLIC_URL, a placeholder to replace rather than a guess.
 */
function backendOrigin(c: Context<UiEnv>): string {
  const origin = publicOrigin(c.env, c.req.url);
  return origin.ok ? origin.value : "https://REPLACE_WITH_THE_OUTPOST_ADDRESS";
}

export const workspacePages = new Hono<UiEnv>()
  .get("/", async (c) => {
    const { orgId, principal } = c.var.session;
    const mayCreate = decideOrganization(principal.role, "workspace.create") === "allow";
    const [rows, pools, projects, engineVersions] = await Promise.all([
      listWorkspaces(c.var.db, principal, { limit: 200 }),
      principal.role === null ? [] : listPools(c.var.db, orgId),
      mayCreate ? listProjects(c.var.db, principal, { limit: 200 }) : null,
      mayCreate ? offeredEngineVersions(c.var.db, c.env, orgId) : [],
    ]);
    return c.html(
      <WorkspacesPage
        viewer={viewerOf(c)}
        workspaces={rows.map((r) => r.workspace)}
        pools={pools}
        projects={projects?.map((p) => ({ id: p.project.id, name: p.project.name })) ?? null}
        engineVersions={engineVersions}
        notice={noticeText(c, { deleted: "Workspace deleted." })}
      />,
    );
  })
  .get("/:workspaceId", async (c) => {
    const { row, grants } = await workspaceOf(c, "workspace.read");
    const { orgId, principal } = c.var.session;
    const { deps } = c.var;
    const [
      pools,
      runRows,
      variables,
      effective,
      project,
      pool,
      teamAccess,
      teams,
      projects,
      configurations,
      engineVersions,
    ] = await Promise.all([
      principal.role === null ? [] : listPools(c.var.db, orgId),
      listRunsPage(c.var.db, { orgId, workspaceId: row.id }, { limit: 20 }),
      listVariables(c.var.db, row.id),
      showEffectiveVariables(c.var.db, { id: row.id, orgId }),
      row.projectId ? resolveProject(c.var.db, orgId, row.projectId) : undefined,
      row.poolId ? findPoolScope(c.var.db, orgId, row.poolId) : undefined,
      listTeamAccess(c.var.db, row.id),
      listTeams(c.var.db, orgId),
      listProjects(c.var.db, principal, { limit: 200 }),
      listConfigurationVersionRows(c.var.db, row.id, { limit: 10 }),
      decideWorkspace(grants, "workspace.update") === "allow"
        ? offeredEngineVersions(c.var.db, c.env, orgId)
        : [],
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
        effectiveVariables={effective.variables}
        project={project ?? null}
        poolRefusal={pool ? poolScopeRefusal(pool, row) : null}
        teamAccess={teamAccess}
        teams={teams}
        projects={projects.map((p) => ({ id: p.project.id, name: p.project.name }))}
        engineVersions={engineVersions}
        configurations={configurations.slice(0, 10).map(presentConfigurationVersion)}
        origin={backendOrigin(c)}
        notice={noticeText(c, NOTICES)}
      />,
    );
  })
  .post("/:workspaceId/workload-identity", async (c) => {
    const { row } = await workspaceOf(c, "workspace.update");
    const form = await readForm(
      c,
      z.strictObject({ enabled: Checkbox, audience: z.string().trim().max(500).default("") }),
    );
    const result = await updateWorkspace(c.var.deps, {
      orgId: c.var.session.orgId,
      ref: row.id,
      actor: actor(c),
      patch: {
        workloadIdentity: form.enabled,
        workloadIdentityAudience: form.audience === "" ? null : form.audience,
      },
    });
    valueOrThrow(result);
    return redirectWithNotice(c, `/ui/workspaces/${row.id}`, "saved");
  })
  .post("/:workspaceId/lock", async (c) => {
    const { row } = await workspaceOf(c, "workspace.lock");
    await readForm(c, z.strictObject({}));
    const result = await lockWorkspace(c.var.deps, {
      orgId: c.var.session.orgId,
      ref: row.id,
      holderId: principalId(c.var.session.principal),
      actor: actor(c),
      reason: "locked from the dashboard",
    });
    valueOrThrow(result);
    return redirectWithNotice(c, `/ui/workspaces/${row.id}`, "locked");
  })
  .post("/:workspaceId/unlock", async (c) => {
    const { row, grants } = await workspaceOf(c, "workspace.lock");
    await readForm(c, z.strictObject({}));
    const isAdmin = decideWorkspace(grants, "workspace.force_unlock") === "allow";
    const result = await unlockWorkspace(c.var.deps, {
      orgId: c.var.session.orgId,
      ref: row.id,
      holderId: principalId(c.var.session.principal),
      actor: actor(c),
      isAdmin,
      // Admins may release a user's lock from here; a run's lock is released by the run.
      force: isAdmin && row.lockedBy !== null && lockHolderKind(row.lockedBy) === "user",
    });
    valueOrThrow(result);
    return redirectWithNotice(c, `/ui/workspaces/${row.id}`, "unlocked");
  })
  .post("/:workspaceId/vars", async (c) => {
    const { row } = await workspaceOf(c, "variables.write");
    const form = await readForm(c, VariableFormFields);
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
      actor: actor(c),
      encryptionKey: c.env.ENCRYPTION_KEY,
    });
    valueOrThrow(result);
    return redirectWithNotice(c, `/ui/workspaces/${row.id}`, "variable-saved");
  })
  .post("/:workspaceId/vars/:category/:key/delete", async (c) => {
    const { row } = await workspaceOf(c, "variables.write");
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
      actor: actor(c),
    });
    valueOrThrow(result);
    return redirectWithNotice(c, `/ui/workspaces/${row.id}`, "variable-deleted");
  })
  .post("/:workspaceId/runs", async (c) => {
    const { row } = await workspaceOf(c, "run.queue");
    const form = await readForm(
      c,
      z.strictObject({
        operation: z.enum(RUN_OPERATIONS),
        message: z.string().max(2000).default(""),
        configurationVersionId: z.string().max(100).optional(),
      }),
    );
    if (row.autoApply && form.operation !== "plan") {
      await authorizeWorkspace(c.var.db, c.var.session.principal, "run.queue_auto_apply", row);
    }
    const result = await createRun(c.var.deps, row, {
      operation: form.operation,
      message: form.message,
      configurationVersionId: form.configurationVersionId,
      source: "ui",
      actor: actor(c),
    });
    const { run } = valueOrThrow(result);
    return c.redirect(`/ui/runs/${run.id}`, 303);
  });
