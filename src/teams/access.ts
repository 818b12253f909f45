/**
 * Team access to a workspace (`read`, `plan`, `write`, `admin`): set, listed and removed by the
 * workspace's admins, each change audited. The decision itself is `authz/`'s.
 */

import { ok } from "@outpost/common";
import { auditQuery } from "../audit/service.ts";
import type { AuditActor } from "../authz/actor.ts";
import type { AccessLevel } from "../authz/model.ts";
import type { Database } from "../db/client.ts";
import { type Outcome, refuse } from "../lib/reason.ts";
import { presentTeamAccess, teamNotFound } from "./model.ts";
import {
  deleteWorkspaceAccessQuery,
  getTeam,
  getWorkspaceAccess,
  listWorkspaceAccess,
  putWorkspaceAccessQuery,
} from "./queries.ts";

type Ctx = { orgId: string; actor: AuditActor; now: number };
type Workspace = { id: string; name: string };

/** Every team's access to the workspace, by team name. */
export async function listTeamAccess(db: Database, workspaceId: string) {
  return (await listWorkspaceAccess(db, workspaceId)).map((r) =>
    presentTeamAccess(r.access, r.teamName),
  );
}

/** Gives the team `access` to the workspace (replacing what it had). */
export async function putTeamAccess(
  db: Database,
  ctx: Ctx,
  input: { workspace: Workspace; teamId: string; access: AccessLevel },
): Promise<Outcome<ReturnType<typeof presentTeamAccess>, "not_found">> {
  const team = await getTeam(db, ctx.orgId, input.teamId);
  if (!team) {
    return teamNotFound(input.teamId);
  }
  const before = await getWorkspaceAccess(db, input.workspace.id, team.id);
  await db.batch([
    putWorkspaceAccessQuery(db, {
      workspaceId: input.workspace.id,
      teamId: team.id,
      orgId: ctx.orgId,
      access: input.access,
      now: ctx.now,
    }),
    auditQuery(db, {
      orgId: ctx.orgId,
      actor: ctx.actor,
      action: "workspace.team_access.put",
      targetType: "workspace",
      targetId: input.workspace.id,
      data: {
        teamId: team.id,
        team: team.name,
        access: input.access,
        before: before?.access ?? null,
      },
      now: ctx.now,
    }),
  ]);
  const after = await getWorkspaceAccess(db, input.workspace.id, team.id);
  if (!after) {
    throw new Error(`team access of ${team.id} on ${input.workspace.id} not found after put`);
  }
  return ok(presentTeamAccess(after, team.name));
}

/** Takes the team's access to the workspace away; not found when it had none. */
export async function deleteTeamAccess(
  db: Database,
  ctx: Ctx,
  input: { workspace: Workspace; teamId: string },
): Promise<Outcome<ReturnType<typeof presentTeamAccess>, "not_found">> {
  const [team, access] = await Promise.all([
    getTeam(db, ctx.orgId, input.teamId),
    getWorkspaceAccess(db, input.workspace.id, input.teamId),
  ]);
  if (!team || !access) {
    return refuse(
      "not_found",
      `team ${input.teamId} has no access to workspace ${input.workspace.name}`,
    );
  }
  await db.batch([
    deleteWorkspaceAccessQuery(db, input.workspace.id, team.id),
    auditQuery(db, {
      orgId: ctx.orgId,
      actor: ctx.actor,
      action: "workspace.team_access.delete",
      targetType: "workspace",
      targetId: input.workspace.id,
      data: { teamId: team.id, team: team.name, before: access.access },
      now: ctx.now,
    }),
  ]);
  return ok(presentTeamAccess(access, team.name));
}
