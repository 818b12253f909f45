/** Teams, pure: what a team may be named and mapped to, and their public shapes. */
import { z } from "@hono/zod-openapi";
import { ACCESS_LEVELS } from "../authz/model.ts";
import { refuse } from "../lib/reason.ts";
import { ROLES } from "../tokens/model.ts";
import type { TeamAccessRow, TeamRow, TeamTokenRow } from "./queries.ts";

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

export const MAX_IDP_GROUPS = 50;

const TeamName = z
  .string()
  .trim()
  .min(1)
  .max(100)
  .regex(/^[A-Za-z0-9][A-Za-z0-9 ._-]*$/, "may hold letters, digits, spaces and . _ - only");

const IdpGroup = z.string().trim().min(1).max(256);

const IdpGroups = z
  .array(IdpGroup)
  .max(MAX_IDP_GROUPS, `at most ${MAX_IDP_GROUPS} groups`)
  .transform((groups) => [...new Set(groups)])
  .openapi({ description: "Provider groups whose members belong to the team (exact names)" });

const OrganizationRole = z.enum(ROLES).nullable().openapi({
  description: "The organization role every member and team token holds; null: none",
});

export const CreateTeam = z
  .strictObject({
    name: TeamName,
    idpGroups: IdpGroups.default([]),
    organizationRole: OrganizationRole.default(null),
  })
  .openapi("CreateTeam");

export const UpdateTeam = z
  .strictObject({
    name: TeamName.optional(),
    idpGroups: IdpGroups.optional(),
    organizationRole: OrganizationRole.optional(),
  })
  .openapi("UpdateTeam");

export const TeamAccessLevel = z.enum(ACCESS_LEVELS);

/** The public shape of a team. */
export function presentTeam(row: TeamRow, memberCount: number) {
  return {
    id: row.id,
    name: row.name,
    idpGroups: row.idpGroups,
    organizationRole: row.organizationRole,
    memberCount,
    createdAt: new Date(row.createdAt).toISOString(),
    updatedAt: new Date(row.updatedAt).toISOString(),
  };
}

/** The public shape of a team token; never the secret or its hash. */
export function presentTeamToken(row: TeamTokenRow) {
  return {
    id: row.id,
    teamId: row.teamId,
    description: row.description,
    createdAt: new Date(row.createdAt).toISOString(),
    lastUsedAt: iso(row.lastUsedAt),
    expiresAt: iso(row.expiresAt),
  };
}

/** The public shape of a team's access to a workspace. */
export function presentTeamAccess(row: TeamAccessRow, teamName: string) {
  return {
    workspaceId: row.workspaceId,
    teamId: row.teamId,
    teamName,
    access: row.access,
    updatedAt: new Date(row.updatedAt).toISOString(),
  };
}

/** The refusal for a team id that is not one of the caller's organization. */
export function teamNotFound(teamId: string) {
  return refuse("not_found", `team ${teamId} not found`);
}
