/**
 * The TFE API's team access to workspaces (go-tfe `TeamAccess`, the `tfe_team_access`
 * resource): `/team-workspaces`, over Outpost's workspace team access. The levels are Terraform
 * Cloud's read, plan, write and admin; `custom` (per-permission access) has no Outpost
 * counterpart and is refused. A grant's id is its workspace and team ids (`ws_….team_…`).
 * Reading needs read access to the workspace; giving and taking, `team_access.manage` there.
 */
import { createRoute, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { ACCESS_LEVELS } from "../authz/model.ts";
import { actorOf } from "../authz/principal.ts";
import type { AppEnv } from "../env.ts";
import { reasonError, valueOrThrow } from "../errors.ts";
import { invalidInput, refuse } from "../lib/reason.ts";
import { requirePerson } from "../middleware/auth.ts";
import { newRouter } from "../router.ts";
import { deleteTeamAccess, listTeamAccess, putTeamAccess } from "../teams/access.ts";
import { workspaceOf } from "../workspaces/http.ts";
import {
  documentBody,
  documentResponse,
  errorDocuments,
  type Resource,
  related,
  sendDocument,
  sendEmpty,
} from "./jsonapi.ts";

const tags = ["terraform cli"];
const security = [{ bearer: [] }];
const WS = /^ws_[a-z2-7]{26}$/;
const GRANT_ID = /^(ws_[a-z2-7]{26})\.(team_[a-z2-7]{26})$/;

const Access = z.enum([...ACCESS_LEVELS, "custom"]).refine((level) => level !== "custom", {
  message: "custom access is not supported: use read, plan, write or admin",
});

const GrantParams = z.strictObject({
  grantId: z
    .string()
    .regex(GRANT_ID, "must be a team access id (ws_….team_…)")
    .openapi({ param: { name: "grantId", in: "path" } }),
});

const CreateDocument = z
  .object({
    data: z.object({
      type: z.literal("team-workspaces"),
      attributes: z.object({ access: Access }),
      relationships: z.object({
        team: z.object({
          data: z.object({ type: z.literal("teams"), id: z.string().regex(/^team_[a-z2-7]{26}$/) }),
        }),
        workspace: z.object({
          data: z.object({ type: z.literal("workspaces"), id: z.string().regex(WS) }),
        }),
      }),
    }),
  })
  .openapi("TfeTeamAccessCreateDocument");
const UpdateDocument = z
  .object({
    data: z.object({
      type: z.literal("team-workspaces"),
      attributes: z.object({ access: Access }),
    }),
  })
  .openapi("TfeTeamAccessUpdateDocument");

type Grant = { workspaceId: string; teamId: string; access: string };

function grantResource(grant: Grant): Resource {
  return {
    id: `${grant.workspaceId}.${grant.teamId}`,
    type: "team-workspaces",
    attributes: { access: grant.access },
    relationships: {
      team: related("teams", grant.teamId),
      workspace: related("workspaces", grant.workspaceId),
    },
    links: { self: `/api/v2/team-workspaces/${grant.workspaceId}.${grant.teamId}` },
  };
}

function idsOf(grantId: string): { workspaceId: string; teamId: string } {
  const [, workspaceId = "", teamId = ""] = GRANT_ID.exec(grantId) ?? [];
  return { workspaceId, teamId };
}

/** The grant a path names, once the caller may read the workspace (else 404). */
async function grantOf(c: Context<AppEnv>, grantId: string) {
  const { workspaceId, teamId } = idsOf(grantId);
  const { workspace } = await workspaceOf(c, workspaceId, "workspace.read");
  const grant = (await listTeamAccess(c.var.db, workspace.id)).find((g) => g.teamId === teamId);
  if (!grant) {
    throw reasonError(refuse("not_found", `team access ${grantId} not found`).reason);
  }
  return grant;
}

async function put(c: Context<AppEnv>, workspaceId: string, teamId: string, access: string) {
  const { principal, workspace } = await workspaceOf(c, workspaceId, "team_access.manage");
  const ctx = { orgId: principal.orgId, actor: actorOf(principal), now: c.var.deps.now() };
  const level = ACCESS_LEVELS.find((l) => l === access);
  if (!level) {
    throw reasonError(invalidInput("json.data.attributes.access", "unknown access").reason);
  }
  return valueOrThrow(await putTeamAccess(c.var.db, ctx, { workspace, teamId, access: level }));
}

export const teamAccessRoutes = newRouter()
  .openapi(
    createRoute({
      method: "get",
      operationId: "tfeListTeamAccess",
      path: "/team-workspaces",
      tags,
      summary: "The teams' access to one workspace: filter[workspace][id] (TFE API)",
      security,
      middleware: [requirePerson()] as const,
      request: {
        query: z.object({
          "filter[workspace][id]": z.string().regex(WS, "must be a ws_ id"),
        }),
      },
      responses: {
        200: documentResponse("The grants"),
        ...errorDocuments(400, 401, 404),
      },
    }),
    async (c) => {
      const id = c.req.valid("query")["filter[workspace][id]"];
      const { workspace } = await workspaceOf(c, id, "workspace.read");
      const grants = await listTeamAccess(c.var.db, workspace.id);
      return sendDocument(c, { data: grants.map(grantResource) });
    },
  )
  .openapi(
    createRoute({
      method: "post",
      operationId: "tfeAddTeamAccess",
      path: "/team-workspaces",
      tags,
      summary: "Give a team access to a workspace (TFE API)",
      security,
      middleware: [requirePerson()] as const,
      request: { body: documentBody(CreateDocument) },
      responses: {
        201: documentResponse("The grant"),
        ...errorDocuments(400, 401, 403, 404, 415),
      },
    }),
    async (c) => {
      const { attributes, relationships } = c.req.valid("json").data;
      const grant = await put(
        c,
        relationships.workspace.data.id,
        relationships.team.data.id,
        attributes.access,
      );
      return sendDocument(c, { data: grantResource(grant) }, 201);
    },
  )
  .openapi(
    createRoute({
      method: "get",
      operationId: "tfeReadTeamAccess",
      path: "/team-workspaces/{grantId}",
      tags,
      summary: "A team's access to a workspace (TFE API)",
      security,
      middleware: [requirePerson()] as const,
      request: { params: GrantParams },
      responses: { 200: documentResponse("The grant"), ...errorDocuments(400, 401, 404) },
    }),
    async (c) => {
      const grant = await grantOf(c, c.req.valid("param").grantId);
      return sendDocument(c, { data: grantResource(grant) });
    },
  )
  .openapi(
    createRoute({
      method: "patch",
      operationId: "tfeUpdateTeamAccess",
      path: "/team-workspaces/{grantId}",
      tags,
      summary: "Change a team's access level to a workspace (TFE API)",
      security,
      middleware: [requirePerson()] as const,
      request: { params: GrantParams, body: documentBody(UpdateDocument) },
      responses: {
        200: documentResponse("The grant"),
        ...errorDocuments(400, 401, 403, 404, 415),
      },
    }),
    async (c) => {
      const { grantId } = c.req.valid("param");
      const { workspaceId, teamId } = idsOf(grantId);
      await grantOf(c, grantId);
      const grant = await put(c, workspaceId, teamId, c.req.valid("json").data.attributes.access);
      return sendDocument(c, { data: grantResource(grant) });
    },
  )
  .openapi(
    createRoute({
      method: "delete",
      operationId: "tfeRemoveTeamAccess",
      path: "/team-workspaces/{grantId}",
      tags,
      summary: "Take a team's access to a workspace away (TFE API)",
      security,
      middleware: [requirePerson()] as const,
      request: { params: GrantParams },
      responses: { 204: { description: "Removed" }, ...errorDocuments(400, 401, 403, 404) },
    }),
    async (c) => {
      const { workspaceId, teamId } = idsOf(c.req.valid("param").grantId);
      const { principal, workspace } = await workspaceOf(c, workspaceId, "team_access.manage");
      const ctx = { orgId: principal.orgId, actor: actorOf(principal), now: c.var.deps.now() };
      valueOrThrow(await deleteTeamAccess(c.var.db, ctx, { workspace, teamId }));
      return sendEmpty(c);
    },
  );
