/**
 * Team access to a project (`read`, `plan`, `write`, `admin`): set, listed and removed by the
 * project's admins, each change audited as the workspace's team access is. It counts on every
 * workspace of the project; the decision itself is `authz/`'s.
 */

import { ok } from "@outpost/common";
import { auditQuery } from "../audit/service.ts";
import type { AccessLevel } from "../authz/model.ts";
import type { Database } from "../db/client.ts";
import { type Outcome, refuse } from "../lib/reason.ts";
import { getTeam } from "../teams/queries.ts";
import { presentProjectTeamAccess } from "./model.ts";
import {
  deleteProjectAccessQuery,
  getProjectAccess,
  listProjectAccess,
  putProjectAccessQuery,
} from "./queries.ts";
import type { ProjectCtx } from "./service.ts";

type Project = { id: string; name: string };
type Access = ReturnType<typeof presentProjectTeamAccess>;

/** Every team's access to the project, by team name. */
export async function listProjectTeamAccess(db: Database, projectId: string): Promise<Access[]> {
  return (await listProjectAccess(db, projectId)).map((r) =>
    presentProjectTeamAccess(r.access, r.teamName),
  );
}

/** Gives the team `access` to the project (replacing what it had). */
export async function putProjectTeamAccess(
  db: Database,
  ctx: ProjectCtx,
  input: { project: Project; teamId: string; access: AccessLevel },
): Promise<Outcome<Access, "not_found">> {
  const team = await getTeam(db, ctx.orgId, input.teamId);
  if (!team) {
    return refuse("not_found", `team ${input.teamId} not found`);
  }
  const before = await getProjectAccess(db, input.project.id, team.id);
  await db.batch([
    putProjectAccessQuery(db, {
      projectId: input.project.id,
      teamId: team.id,
      orgId: ctx.orgId,
      access: input.access,
      now: ctx.now,
    }),
    auditQuery(db, {
      orgId: ctx.orgId,
      actor: ctx.actor,
      action: "project.team_access.put",
      targetType: "project",
      targetId: input.project.id,
      data: {
        teamId: team.id,
        team: team.name,
        access: input.access,
        before: before?.access ?? null,
      },
      now: ctx.now,
    }),
  ]);
  const after = await getProjectAccess(db, input.project.id, team.id);
  if (!after) {
    // The project or the team was deleted in between.
    return refuse("not_found", `project ${input.project.name} not found`);
  }
  return ok(presentProjectTeamAccess(after, team.name));
}

/** Takes the team's access to the project away; not found when it had none. */
export async function deleteProjectTeamAccess(
  db: Database,
  ctx: ProjectCtx,
  input: { project: Project; teamId: string },
): Promise<Outcome<Access, "not_found">> {
  const [team, access] = await Promise.all([
    getTeam(db, ctx.orgId, input.teamId),
    getProjectAccess(db, input.project.id, input.teamId),
  ]);
  if (!team || !access) {
    return refuse(
      "not_found",
      `team ${input.teamId} has no access to project ${input.project.name}`,
    );
  }
  await db.batch([
    deleteProjectAccessQuery(db, input.project.id, team.id),
    auditQuery(db, {
      orgId: ctx.orgId,
      actor: ctx.actor,
      action: "project.team_access.delete",
      targetType: "project",
      targetId: input.project.id,
      data: { teamId: team.id, team: team.name, before: access.access },
      now: ctx.now,
    }),
  ]);
  return ok(presentProjectTeamAccess(access, team.name));
}
