/**
 * `/api/v1/teams`: teams and their members (their tokens: `token-routes.ts`). Owners manage them; anyone of the
 * organization may list them (a workspace admin picks teams to give access to).
 */
import { createRoute, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { actorOf } from "../authz/principal.ts";
import type { AppEnv } from "../env.ts";
import { reasonError, valueOrThrow } from "../errors.ts";
import { personOf, requirePermission } from "../middleware/auth.ts";
import { errorResponses, idParam, jsonBody, jsonResponse, newRouter } from "../router.ts";
import { ROLES } from "../tokens/model.ts";
import { CreateTeam, teamNotFound, UpdateTeam } from "./model.ts";
import {
  createTeam,
  deleteMember,
  deleteTeam,
  listTeams,
  putMember,
  showTeam,
  updateTeam,
} from "./service.ts";

const Team = z
  .object({
    id: z.string(),
    name: z.string(),
    idpGroups: z.array(z.string()),
    organizationRole: z.enum(ROLES).nullable(),
    memberCount: z.number().int(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi("Team");

const TeamDetail = Team.extend({
  members: z.array(
    z.object({
      id: z.string(),
      email: z.string(),
      name: z.string(),
      isDisabled: z.boolean(),
      source: z.enum(["idp", "manual"]).openapi({
        description:
          "idp: from the provider's groups (follows them at each sign-in); manual: set by an owner",
      }),
    }),
  ),
  workspaces: z.array(
    z.object({
      workspaceId: z.string(),
      name: z.string(),
      access: z.enum(["read", "plan", "write", "admin"]),
    }),
  ),
}).openapi("TeamDetail");

export const TeamParams = z.strictObject({ teamId: idParam("team", "teamId") });
const MemberParams = TeamParams.extend({ userId: idParam("usr", "userId") });

const tags = ["teams"];
const security = [{ bearer: [] }];
const owners = requirePermission("teams.manage");

export function ctxOf(c: Context<AppEnv>) {
  const principal = personOf(c);
  return { orgId: principal.orgId, actor: actorOf(principal), now: c.var.deps.now() };
}

async function detail(c: Context<AppEnv>, teamId: string) {
  const team = await showTeam(c.var.db, personOf(c).orgId, teamId);
  if (!team) {
    throw reasonError(teamNotFound(teamId).reason);
  }
  return team;
}

export const teamRoutes = newRouter()
  .openapi(
    createRoute({
      method: "post",
      operationId: "createTeam",
      path: "/",
      tags,
      summary: "Create a team",
      security,
      middleware: [owners] as const,
      request: { body: jsonBody(CreateTeam) },
      responses: {
        201: jsonResponse(Team, "The team"),
        ...errorResponses(400, 401, 403, 409, 413, 415),
      },
    }),
    async (c) => {
      return c.json(valueOrThrow(await createTeam(c.var.db, ctxOf(c), c.req.valid("json"))), 201);
    },
  )
  .openapi(
    createRoute({
      method: "get",
      operationId: "listTeams",
      path: "/",
      tags,
      summary: "The organization's teams",
      security,
      middleware: [requirePermission("teams.read")] as const,
      responses: {
        200: jsonResponse(z.object({ teams: z.array(Team) }), "The teams"),
        ...errorResponses(401),
      },
    }),
    async (c) => c.json({ teams: await listTeams(c.var.db, personOf(c).orgId) }, 200),
  )
  .openapi(
    createRoute({
      method: "get",
      operationId: "getTeam",
      path: "/{teamId}",
      tags,
      summary: "A team with its members and the workspaces it has access to",
      security,
      middleware: [requirePermission("teams.read")] as const,
      request: { params: TeamParams },
      responses: { 200: jsonResponse(TeamDetail, "The team"), ...errorResponses(400, 401, 404) },
    }),
    async (c) => c.json(await detail(c, c.req.valid("param").teamId), 200),
  )
  .openapi(
    createRoute({
      method: "patch",
      operationId: "updateTeam",
      path: "/{teamId}",
      tags,
      summary: "Change a team's name, mapped groups or organization role (only the fields given)",
      security,
      middleware: [owners] as const,
      request: { params: TeamParams, body: jsonBody(UpdateTeam) },
      responses: {
        200: jsonResponse(TeamDetail, "The team"),
        ...errorResponses(400, 401, 403, 404, 409, 413, 415),
      },
    }),
    async (c) => {
      const { teamId } = c.req.valid("param");
      valueOrThrow(await updateTeam(c.var.db, ctxOf(c), teamId, c.req.valid("json")));
      return c.json(await detail(c, teamId), 200);
    },
  )
  .openapi(
    createRoute({
      method: "delete",
      operationId: "deleteTeam",
      path: "/{teamId}",
      tags,
      summary: "Delete a team with its memberships, tokens and workspace access",
      security,
      middleware: [owners] as const,
      request: { params: TeamParams },
      responses: { 204: { description: "Deleted" }, ...errorResponses(400, 401, 403, 404) },
    }),
    async (c) => {
      const { teamId } = c.req.valid("param");
      valueOrThrow(await deleteTeam(c.var.db, ctxOf(c), teamId));
      return c.body(null, 204);
    },
  )
  .openapi(
    createRoute({
      method: "put",
      operationId: "putTeamMember",
      path: "/{teamId}/members/{userId}",
      tags,
      summary: "Add a user to the team by hand (kept whatever the provider's groups say)",
      security,
      middleware: [owners] as const,
      request: { params: MemberParams },
      responses: {
        200: jsonResponse(TeamDetail, "The team"),
        ...errorResponses(400, 401, 403, 404),
      },
    }),
    async (c) => {
      const { teamId, userId } = c.req.valid("param");
      valueOrThrow(await putMember(c.var.db, ctxOf(c), { teamId, userId }));
      return c.json(await detail(c, teamId), 200);
    },
  )
  .openapi(
    createRoute({
      method: "delete",
      operationId: "deleteTeamMember",
      path: "/{teamId}/members/{userId}",
      tags,
      summary:
        "Remove a user from the team (a member through the provider's groups returns at their next sign-in)",
      security,
      middleware: [owners] as const,
      request: { params: MemberParams },
      responses: {
        200: jsonResponse(TeamDetail, "The team"),
        ...errorResponses(400, 401, 403, 404),
      },
    }),
    async (c) => {
      const { teamId, userId } = c.req.valid("param");
      valueOrThrow(await deleteMember(c.var.db, ctxOf(c), { teamId, userId }));
      return c.json(await detail(c, teamId), 200);
    },
  );
