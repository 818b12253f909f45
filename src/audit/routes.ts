/**
 * `GET /api/v1/audit-events`: what is already recorded beside every change (who did what to
 * which object), for owners and admins, newest first, paged and filterable by target.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { ACTOR_TYPES, SIGN_IN_METHODS } from "../authz/actor.ts";
import { valueOrThrow } from "../errors.ts";
import { decodeCursor, PageQuery, takePage } from "../lib/paging.ts";
import { personOf, requirePermission } from "../middleware/auth.ts";
import { errorResponses, jsonResponse, newRouter } from "../router.ts";
import { listAuditEvents, presentAuditEvent } from "./service.ts";

const AuditEvent = z
  .object({
    id: z.string(),
    actor: z.string().openapi({
      description:
        "Who, by id: a person (usr_…), a team (team_…), a token (tok_…, atok_…), a run, an agent, or system",
    }),
    actorType: z.enum(ACTOR_TYPES).nullable().openapi({ description: "The actor's kind" }),
    actorName: z.string().nullable().openapi({
      description:
        "The actor's name when it acted: a person's name or email, a token's description",
    }),
    actorVia: z.enum(SIGN_IN_METHODS).nullable().openapi({
      description:
        "How a person or token signed in: sso, access, user-token, team-token, org-token, token-session",
    }),
    action: z.string().openapi({ example: "workspace.update" }),
    targetType: z.string().openapi({ example: "workspace" }),
    targetId: z.string(),
    data: z.record(z.string(), z.unknown()).nullable(),
    createdAt: z.string(),
  })
  .openapi("AuditEvent");

const Word = z
  .string()
  .min(1)
  .max(100)
  .regex(/^[A-Za-z0-9_.:-]+$/, "may hold letters, digits and _ . : - only");

const AuditQuery = PageQuery.extend({
  targetType: Word.optional().openapi({
    param: { name: "targetType", in: "query" },
    description: "workspace, run, job, pool, agent_token, org_token, variable, vcs_hook, …",
  }),
  targetId: Word.optional().openapi({
    param: { name: "targetId", in: "query" },
    description: "Only events about this object (a ws_, run_, pool_, … id)",
  }),
  action: Word.optional().openapi({
    param: { name: "action", in: "query" },
    description: "Only this action, e.g. state.rollback",
  }),
  actor: Word.optional().openapi({ param: { name: "actor", in: "query" } }),
});

export const auditRoutes = newRouter().openapi(
  createRoute({
    method: "get",
    operationId: "listAuditEvents",
    path: "/",
    tags: ["audit"],
    summary: "The organization's audit log, newest first (owners and admins)",
    security: [{ bearer: [] }],
    middleware: [requirePermission("audit.read")] as const,
    request: { query: AuditQuery },
    responses: {
      200: jsonResponse(
        z.object({ auditEvents: z.array(AuditEvent), nextCursor: z.string().nullable() }),
        "A page of events",
      ),
      ...errorResponses(400, 401, 403),
    },
  }),
  async (c) => {
    const { limit, cursor, ...filter } = c.req.valid("query");
    const after =
      cursor === undefined ? undefined : valueOrThrow(decodeCursor(cursor, ["number", "string"]));
    const rows = await listAuditEvents(c.var.db, personOf(c).orgId, filter, { limit, after });
    const { items, nextCursor } = takePage(rows, limit, (row) => [row.createdAt, row.id]);
    return c.json({ auditEvents: items.map(presentAuditEvent), nextCursor }, 200);
  },
);
