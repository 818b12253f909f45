/**
 * Teams: created and changed by owners, with members from the provider's groups (at each
 * sign-in) or set by hand. Every change to a team, its members or its role is audited: they are
 * changes of permissions.
 */

import { newId, ok } from "@outpost/common";
import { eq } from "drizzle-orm";
import { auditQuery } from "../audit/service.ts";
import type { AuditActor } from "../authz/actor.ts";
import type { TeamPrincipal } from "../authz/principal.ts";
import type { Database } from "../db/client.ts";
import { teams } from "../db/schema.ts";
import { type Outcome, refuse } from "../lib/reason.ts";
import type { Role } from "../tokens/model.ts";
import { getUser } from "../users/queries.ts";
import { presentTeam, teamNotFound } from "./model.ts";
import {
  deleteMemberQuery,
  deleteTeamQuery,
  findTeamByName,
  getTeam,
  insertTeamQuery,
  listMembers,
  listTeamRows,
  listTeamWorkspaces,
  putMemberQuery,
  type TeamRow,
  updateTeamQuery,
} from "./queries.ts";

type Team = ReturnType<typeof presentTeam>;
type Ctx = { orgId: string; actor: AuditActor; now: number };

function audit(db: Database, ctx: Ctx, action: string, teamId: string, data: object) {
  return auditQuery(db, {
    orgId: ctx.orgId,
    actor: ctx.actor,
    action,
    targetType: "team",
    targetId: teamId,
    data: { ...data },
    now: ctx.now,
  });
}

export type TeamSettings = { name: string; idpGroups: string[]; organizationRole: Role | null };

/** Creates a team; a name the org already uses is refused. */
export async function createTeam(
  db: Database,
  ctx: Ctx,
  settings: TeamSettings,
): Promise<Outcome<Team, "conflict">> {
  const id = newId("team");
  const [[created]] = await db.batch([
    insertTeamQuery(db, {
      id,
      orgId: ctx.orgId,
      ...settings,
      createdAt: ctx.now,
      updatedAt: ctx.now,
    }),
  ]);
  if (!created) {
    return refuse("conflict", `a team named ${settings.name} exists`);
  }
  await audit(db, ctx, "team.create", id, settings);
  return ok(presentTeam(created, 0));
}

export async function listTeams(db: Database, orgId: string): Promise<Team[]> {
  return (await listTeamRows(db, orgId)).map((r) => presentTeam(r.team, r.members));
}

/** A team with its members and the workspaces it has access to, or undefined. */
export async function showTeam(db: Database, orgId: string, teamId: string) {
  const team = await getTeam(db, orgId, teamId);
  if (!team) {
    return undefined;
  }
  const [members, workspaces] = await Promise.all([
    listMembers(db, team.id),
    listTeamWorkspaces(db, team.id),
  ]);
  return {
    ...presentTeam(team, members.length),
    members: members.map((m) => ({ ...m, isDisabled: Boolean(m.isDisabled) })),
    workspaces,
  };
}

/** Changes the given settings of a team; a name another team has is refused. */
export async function updateTeam(
  db: Database,
  ctx: Ctx,
  teamId: string,
  patch: Partial<TeamSettings>,
): Promise<Outcome<TeamRow, "not_found" | "conflict">> {
  const team = await getTeam(db, ctx.orgId, teamId);
  if (!team) {
    return teamNotFound(teamId);
  }
  if (patch.name !== undefined && patch.name !== team.name) {
    if (await findTeamByName(db, ctx.orgId, patch.name)) {
      return refuse("conflict", "another team has that name");
    }
  }
  const [[updated]] = await db.batch([
    updateTeamQuery(db, ctx.orgId, teamId, { ...patch, updatedAt: ctx.now }),
    audit(db, ctx, "team.update", teamId, {
      before: {
        name: team.name,
        idpGroups: team.idpGroups,
        organizationRole: team.organizationRole,
      },
      after: patch,
    }),
  ]);
  return updated ? ok(updated) : teamNotFound(teamId);
}

/** Deletes a team with its memberships, tokens and workspace access. */
export async function deleteTeam(
  db: Database,
  ctx: Ctx,
  teamId: string,
): Promise<Outcome<TeamRow, "not_found">> {
  const team = await getTeam(db, ctx.orgId, teamId);
  if (!team) {
    return teamNotFound(teamId);
  }
  await db.batch([
    deleteTeamQuery(db, ctx.orgId, teamId),
    audit(db, ctx, "team.delete", teamId, { name: team.name }),
  ]);
  return ok(team);
}

/**
 * Makes the user a member by hand (a membership from the provider's groups becomes a manual one,
 * which the next sign-in keeps).
 */
export async function putMember(
  db: Database,
  ctx: Ctx,
  input: { teamId: string; userId: string },
): Promise<Outcome<null, "not_found">> {
  const [team, user] = await Promise.all([
    getTeam(db, ctx.orgId, input.teamId),
    getUser(db, ctx.orgId, input.userId),
  ]);
  if (!team) {
    return teamNotFound(input.teamId);
  }
  if (!user) {
    return refuse("not_found", `user ${input.userId} not found`);
  }
  await db.batch([
    putMemberQuery(db, { ...input, orgId: ctx.orgId, now: ctx.now }),
    audit(db, ctx, "team.member.add", team.id, {
      userId: user.id,
      email: user.email,
      source: "manual",
    }),
  ]);
  return ok(null);
}

/**
 * Removes the user from the team, however they got there. A member through the provider's groups
 * comes back at their next sign-in unless the team's groups or theirs change.
 */
export async function deleteMember(
  db: Database,
  ctx: Ctx,
  input: { teamId: string; userId: string },
): Promise<Outcome<null, "not_found">> {
  const team = await getTeam(db, ctx.orgId, input.teamId);
  if (!team) {
    return teamNotFound(input.teamId);
  }
  const removed = await deleteMemberQuery(db, team.id, input.userId);
  if (removed.length === 0) {
    return refuse("not_found", `user ${input.userId} is not a member of team ${input.teamId}`);
  }
  await audit(db, ctx, "team.member.remove", team.id, { userId: input.userId, source: "manual" });
  return ok(null);
}

/** The principal of a team token: the team's name and organization role of the moment. */
export async function loadTeamPrincipal(
  db: Database,
  teamId: string,
  tokenId: string,
): Promise<TeamPrincipal | null> {
  const team = await db.query.teams.findFirst({ where: eq(teams.id, teamId) });
  return team
    ? {
        kind: "team",
        orgId: team.orgId,
        teamId: team.id,
        tokenId,
        name: team.name,
        role: team.organizationRole,
      }
    : null;
}
