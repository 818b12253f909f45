/**
 * People: `GET /api/v1/user` (the caller), `GET /api/v1/users` (admins), `PATCH
 * /api/v1/users/{userId}` (owners: disable or enable), and the caller's personal tokens under
 * `/api/v1/user/tokens`.
 */
import { createRoute, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { actorOf, type UserPrincipal } from "../authz/principal.ts";
import type { AppEnv } from "../env.ts";
import { ApiError, valueOrThrow } from "../errors.ts";
import { personOf, requirePermission, requirePerson } from "../middleware/auth.ts";
import { errorResponses, idParam, jsonBody, jsonResponse, newRouter } from "../router.ts";
import { ROLES } from "../tokens/model.ts";
import { listUsers, setUserDisabled, showUser } from "./service.ts";
import {
  createUserToken,
  listUserTokens,
  MAX_USER_TOKEN_SECONDS,
  revokeUserToken,
} from "./tokens.ts";

export const User = z
  .object({
    id: z.string(),
    email: z.string(),
    name: z.string(),
    organizationRole: z.enum(ROLES).nullable().openapi({
      description: "The highest organization role of the user's teams; null: none",
    }),
    teams: z.array(
      z.object({ id: z.string(), name: z.string(), source: z.enum(["idp", "manual"]) }),
    ),
    isDisabled: z.boolean(),
    lastSignInAt: z.string().nullable(),
    lastSignInMethod: z.enum(["sso", "access"]).nullable(),
    createdAt: z.string(),
  })
  .openapi("User");

const UserToken = z
  .object({
    id: z.string(),
    description: z.string(),
    createdAt: z.string(),
    lastUsedAt: z.string().nullable(),
    expiresAt: z.string().nullable(),
  })
  .openapi("UserToken");

const CreatedUserToken = UserToken.extend({
  token: z.string().openapi({ description: "The secret (op_user_…). Shown once; store it now." }),
}).openapi("CreatedUserToken");

const CreateUserToken = z
  .strictObject({
    description: z.string().trim().min(1).max(200),
    expiresInSeconds: z
      .number()
      .int()
      .min(60)
      .max(MAX_USER_TOKEN_SECONDS)
      .nullable()
      .default(null)
      .openapi({ description: "Omitted or null: the token works until revoked" }),
  })
  .openapi("CreateUserToken");

const UserParams = z.strictObject({ userId: idParam("usr", "userId") });
const TokenParams = z.strictObject({ tokenId: idParam("utok", "tokenId") });

const tags = ["users"];
const security = [{ bearer: [] }];

/** The caller as a person; org and team tokens are not one. */
function userOf(c: Context<AppEnv>): UserPrincipal {
  const principal = personOf(c);
  if (principal.kind !== "user") {
    throw new ApiError(
      "FORBIDDEN",
      `this is a ${principal.kind} token, not a person: sign in, or use a personal token`,
    );
  }
  return principal;
}

export const userRoutes = newRouter()
  .openapi(
    createRoute({
      method: "get",
      operationId: "getCurrentUser",
      path: "/user",
      tags,
      summary: "The signed-in person: email, name, organization role and teams",
      security,
      middleware: [requirePerson()] as const,
      responses: { 200: jsonResponse(User, "The caller"), ...errorResponses(401, 403) },
    }),
    async (c) => {
      const me = userOf(c);
      const user = await showUser(c.var.db, me.orgId, me.userId);
      if (!user) {
        throw new ApiError("NOT_FOUND", "user not found");
      }
      return c.json(user, 200);
    },
  )
  .openapi(
    createRoute({
      method: "get",
      operationId: "listUsers",
      path: "/users",
      tags,
      summary: "Every person of the organization, with teams, last sign-in and whether disabled",
      security,
      middleware: [requirePermission("users.read")] as const,
      responses: {
        200: jsonResponse(z.object({ users: z.array(User) }), "The users"),
        ...errorResponses(401, 403),
      },
    }),
    async (c) => c.json({ users: await listUsers(c.var.db, personOf(c).orgId) }, 200),
  )
  .openapi(
    createRoute({
      method: "patch",
      operationId: "updateUser",
      path: "/users/{userId}",
      tags,
      summary: "Disable a user (ends every session and token of theirs at once) or enable them",
      security,
      middleware: [requirePermission("users.manage")] as const,
      request: {
        params: UserParams,
        body: jsonBody(z.strictObject({ disabled: z.boolean() }).openapi("UpdateUser")),
      },
      responses: {
        200: jsonResponse(User, "The user"),
        ...errorResponses(400, 401, 403, 404, 409, 413, 415),
      },
    }),
    async (c) => {
      const principal = personOf(c);
      const { userId } = c.req.valid("param");
      const result = await setUserDisabled(c.var.db, {
        orgId: principal.orgId,
        userId,
        disabled: c.req.valid("json").disabled,
        actor: actorOf(principal),
        now: c.var.deps.now(),
      });
      return c.json(valueOrThrow(result), 200);
    },
  )
  .openapi(
    createRoute({
      method: "post",
      operationId: "createUserToken",
      path: "/user/tokens",
      tags,
      summary: "Create a personal token: it acts with your permissions as they are at each request",
      security,
      middleware: [requirePerson()] as const,
      request: { body: jsonBody(CreateUserToken) },
      responses: {
        201: jsonResponse(CreatedUserToken, "The token, with its secret shown this once"),
        ...errorResponses(400, 401, 403, 413, 415),
      },
    }),
    async (c) => {
      const me = userOf(c);
      const body = c.req.valid("json");
      const created = await createUserToken(c.var.db, {
        orgId: me.orgId,
        userId: me.userId,
        description: body.description,
        expiresInSeconds: body.expiresInSeconds,
        actor: actorOf(me),
        now: c.var.deps.now(),
      });
      return c.json(created, 201);
    },
  )
  .openapi(
    createRoute({
      method: "get",
      operationId: "listUserTokens",
      path: "/user/tokens",
      tags,
      summary: "Your personal tokens that still work (never their secrets)",
      security,
      middleware: [requirePerson()] as const,
      responses: {
        200: jsonResponse(z.object({ tokens: z.array(UserToken) }), "The tokens"),
        ...errorResponses(401, 403),
      },
    }),
    async (c) => {
      const me = userOf(c);
      return c.json({ tokens: await listUserTokens(c.var.db, me.userId, c.var.deps.now()) }, 200);
    },
  )
  .openapi(
    createRoute({
      method: "delete",
      operationId: "revokeUserToken",
      path: "/user/tokens/{tokenId}",
      tags,
      summary: "Revoke one of your personal tokens; its next request gets 401",
      security,
      middleware: [requirePerson()] as const,
      request: { params: TokenParams },
      responses: {
        200: jsonResponse(UserToken, "The revoked token"),
        ...errorResponses(400, 401, 403, 404),
      },
    }),
    async (c) => {
      const me = userOf(c);
      const { tokenId } = c.req.valid("param");
      const result = await revokeUserToken(c.var.db, {
        orgId: me.orgId,
        userId: me.userId,
        tokenId,
        actor: actorOf(me),
        now: c.var.deps.now(),
      });
      return c.json(valueOrThrow(result), 200);
    },
  );
