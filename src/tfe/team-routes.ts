/**
 * The TFE API's teams over Outpost's (go-tfe `Teams`, the `tfe_team` resource): list, create,
 * read, rename and delete. Anyone of the organization reads them; owners manage them
 * (`teams.read`/`teams.manage`, as on `/api/v1/teams`). Terraform Cloud's organization-access
 * booleans, visibility and SSO team id have no Outpost counterpart: they are not answered, and
 * a request granting organization access is refused (Outpost gives a team an organization role
 * on `/api/v1/teams`).
 */
import { createRoute, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { actorOf } from "../authz/principal.ts";
import type { AppEnv } from "../env.ts";
import { reasonError, valueOrThrow } from "../errors.ts";
import { invalidInput } from "../lib/reason.ts";
import { personOf, requirePermission } from "../middleware/auth.ts";
import { idParam, newRouter } from "../router.ts";
import { CreateTeam, teamNotFound } from "../teams/model.ts";
import { createTeam, deleteTeam, listTeams, showTeam, updateTeam } from "../teams/service.ts";
import {
  documentBody,
  documentResponse,
  errorDocuments,
  pageOf,
  type Resource,
  related,
  sendDocument,
  sendEmpty,
  TfePageQuery,
} from "./jsonapi.ts";
import { callerOrganizationName, organizationOf } from "./organization.ts";
import { OrgParams } from "./organization-routes.ts";

const tags = ["terraform cli"];
const security = [{ bearer: [] }];

export const TeamIdParams = z.strictObject({
  teamId: idParam("team", "teamId"),
});

const TeamDocument = z
  .object({
    data: z.object({
      type: z.literal("teams"),
      attributes: z.object({
        name: CreateTeam.shape.name.optional(),
        "organization-access": z.record(z.string(), z.unknown()).optional(),
      }),
    }),
  })
  .openapi("TfeTeamDocument");
type TeamDocument = z.infer<typeof TeamDocument>;

type TeamShape = { id: string; name: string; memberCount: number; organizationRole: unknown };

function teamResource(team: TeamShape, organizationName: string): Resource {
  return {
    id: team.id,
    type: "teams",
    attributes: { name: team.name, "users-count": team.memberCount },
    relationships: { organization: related("organizations", organizationName) },
    links: { self: `/api/v2/teams/${team.id}` },
  };
}

/** Refuses organization access the document grants: Outpost has team roles instead. */
function refuseOrganizationAccess(document: TeamDocument) {
  const access = document.data.attributes["organization-access"] ?? {};
  const granted = Object.entries(access).filter(([, value]) => value !== false && value !== null);
  if (granted.length > 0) {
    throw reasonError(
      invalidInput(
        "json.data.attributes.organization-access",
        `organization-access (${granted.map(([name]) => name).join(", ")}) is not supported: give the team an organization role with PATCH /api/v1/teams/{id}`,
      ).reason,
    );
  }
}

async function detail(c: Context<AppEnv>, teamId: string) {
  const team = await showTeam(c.var.db, personOf(c).orgId, teamId);
  if (!team) {
    throw reasonError(teamNotFound(teamId).reason);
  }
  return team;
}

function ctxOf(c: Context<AppEnv>) {
  const principal = personOf(c);
  return { orgId: principal.orgId, actor: actorOf(principal), now: c.var.deps.now() };
}

const byId = (method: "get" | "delete", operationId: string, summary: string) =>
  createRoute({
    method,
    operationId,
    path: "/teams/{teamId}",
    tags,
    summary,
    security,
    middleware: [requirePermission(method === "get" ? "teams.read" : "teams.manage")] as const,
    request: { params: TeamIdParams },
    responses: {
      ...(method === "get"
        ? { 200: documentResponse("The team") }
        : { 204: { description: "Deleted" } }),
      ...errorDocuments(400, 401, 403, 404),
    },
  });

export const teamRoutes = newRouter()
  .openapi(
    createRoute({
      method: "get",
      operationId: "tfeListTeams",
      path: "/organizations/{organization}/teams",
      tags,
      summary: "The organization's teams; q filters by name (TFE API)",
      security,
      middleware: [requirePermission("teams.read")] as const,
      request: {
        params: OrgParams,
        query: z.object({ ...TfePageQuery, q: z.string().max(100).optional() }),
      },
      responses: {
        200: documentResponse("A page of teams with meta.pagination"),
        ...errorDocuments(400, 401, 403, 404),
      },
    }),
    async (c) => {
      const { principal, organization } = await organizationOf(
        c,
        c.req.valid("param").organization,
      );
      const query = c.req.valid("query");
      const search = query.q?.toLowerCase();
      const all = (await listTeams(c.var.db, principal.orgId)).filter(
        (team) => search === undefined || team.name.toLowerCase().includes(search),
      );
      const { items, meta } = pageOf(all, query);
      return sendDocument(c, {
        data: items.map((team) => teamResource(team, organization.name)),
        meta,
      });
    },
  )
  .openapi(
    createRoute({
      method: "post",
      operationId: "tfeCreateTeam",
      path: "/organizations/{organization}/teams",
      tags,
      summary: "Create a team (TFE API); members come from SSO groups or /api/v1/teams",
      security,
      middleware: [requirePermission("teams.manage")] as const,
      request: { params: OrgParams, body: documentBody(TeamDocument) },
      responses: {
        201: documentResponse("The team"),
        ...errorDocuments(400, 401, 403, 404, 409, 415),
      },
    }),
    async (c) => {
      const { organization } = await organizationOf(c, c.req.valid("param").organization);
      const document = c.req.valid("json");
      refuseOrganizationAccess(document);
      const { name } = document.data.attributes;
      if (name === undefined) {
        throw reasonError(
          invalidInput("json.data.attributes.name", "data.attributes.name is required").reason,
        );
      }
      const settings = { name, idpGroups: [], organizationRole: null };
      const created = valueOrThrow(await createTeam(c.var.db, ctxOf(c), settings));
      return sendDocument(c, { data: teamResource(created, organization.name) }, 201);
    },
  )
  .openapi(byId("get", "tfeReadTeam", "A team (TFE API)"), async (c) => {
    const team = await detail(c, c.req.valid("param").teamId);
    return sendDocument(c, { data: teamResource(team, await callerOrganizationName(c)) });
  })
  .openapi(
    createRoute({
      method: "patch",
      operationId: "tfeUpdateTeam",
      path: "/teams/{teamId}",
      tags,
      summary: "Rename a team (TFE API)",
      security,
      middleware: [requirePermission("teams.manage")] as const,
      request: { params: TeamIdParams, body: documentBody(TeamDocument) },
      responses: {
        200: documentResponse("The team"),
        ...errorDocuments(400, 401, 403, 404, 409, 415),
      },
    }),
    async (c) => {
      const { teamId } = c.req.valid("param");
      const document = c.req.valid("json");
      refuseOrganizationAccess(document);
      const { name } = document.data.attributes;
      if (name !== undefined) {
        valueOrThrow(await updateTeam(c.var.db, ctxOf(c), teamId, { name }));
      }
      const team = await detail(c, teamId);
      return sendDocument(c, { data: teamResource(team, await callerOrganizationName(c)) });
    },
  )
  .openapi(byId("delete", "tfeDeleteTeam", "Delete a team (TFE API)"), async (c) => {
    valueOrThrow(await deleteTeam(c.var.db, ctxOf(c), c.req.valid("param").teamId));
    return sendEmpty(c);
  });
