/** `/api/v1/teams/{teamId}/tokens`: team tokens (`op_team_…`), for CI. Owners manage them. */
import { createRoute, z } from "@hono/zod-openapi";
import { valueOrThrow } from "../errors.ts";
import { personOf, requirePermission } from "../middleware/auth.ts";
import { errorResponses, idParam, jsonBody, jsonResponse, newRouter } from "../router.ts";
import { MAX_USER_TOKEN_SECONDS } from "../users/tokens.ts";
import { ctxOf, TeamParams } from "./routes.ts";
import { createTeamToken, listTeamTokens, revokeTeamToken } from "./tokens.ts";

const TeamToken = z
  .object({
    id: z.string(),
    teamId: z.string(),
    description: z.string(),
    createdAt: z.string(),
    lastUsedAt: z.string().nullable(),
    expiresAt: z.string().nullable(),
  })
  .openapi("TeamToken");

const CreateTeamToken = z
  .strictObject({
    description: z.string().trim().min(1).max(200),
    expiresInSeconds: z.number().int().min(60).max(MAX_USER_TOKEN_SECONDS).nullable().default(null),
  })
  .openapi("CreateTeamToken");

const TokenParams = TeamParams.extend({ tokenId: idParam("ttok", "tokenId") });

const tags = ["teams"];
const security = [{ bearer: [] }];
const owners = requirePermission("teams.manage");

export const teamTokenRoutes = newRouter()
  .openapi(
    createRoute({
      method: "post",
      operationId: "createTeamToken",
      path: "/{teamId}/tokens",
      tags,
      summary: "Create a team token (op_team_…), for CI: it acts as the team",
      security,
      middleware: [owners] as const,
      request: { params: TeamParams, body: jsonBody(CreateTeamToken) },
      responses: {
        201: jsonResponse(
          TeamToken.extend({ token: z.string().openapi({ description: "Shown once" }) }).openapi(
            "CreatedTeamToken",
          ),
          "The token, with its secret shown this once",
        ),
        ...errorResponses(400, 401, 403, 404, 413, 415),
      },
    }),
    async (c) => {
      const { teamId } = c.req.valid("param");
      return c.json(
        valueOrThrow(await createTeamToken(c.var.db, ctxOf(c), { teamId, ...c.req.valid("json") })),
        201,
      );
    },
  )
  .openapi(
    createRoute({
      method: "get",
      operationId: "listTeamTokens",
      path: "/{teamId}/tokens",
      tags,
      summary: "The team's tokens that still work (never their secrets)",
      security,
      middleware: [owners] as const,
      request: { params: TeamParams },
      responses: {
        200: jsonResponse(z.object({ tokens: z.array(TeamToken) }), "The tokens"),
        ...errorResponses(400, 401, 403, 404),
      },
    }),
    async (c) => {
      const { teamId } = c.req.valid("param");
      return c.json(
        {
          tokens: valueOrThrow(
            await listTeamTokens(c.var.db, personOf(c).orgId, teamId, c.var.deps.now()),
          ),
        },
        200,
      );
    },
  )
  .openapi(
    createRoute({
      method: "delete",
      operationId: "revokeTeamToken",
      path: "/{teamId}/tokens/{tokenId}",
      tags,
      summary: "Revoke a team token; its next request gets 401",
      security,
      middleware: [owners] as const,
      request: { params: TokenParams },
      responses: {
        200: jsonResponse(TeamToken, "The revoked token"),
        ...errorResponses(400, 401, 403, 404),
      },
    }),
    async (c) => {
      const { teamId, tokenId } = c.req.valid("param");
      const result = await revokeTeamToken(c.var.db, ctxOf(c), { teamId, tokenId });
      return c.json(valueOrThrow(result), 200);
    },
  );
