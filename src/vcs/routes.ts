/**
 * `/api/v1/vcs-hooks`: webhook endpoints for GitHub and GitLab. Admins manage them; the secret
 * appears only in the create and rotate responses.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { actorOf } from "../authz/principal.ts";
import { valueOrThrow } from "../errors.ts";
import { personOf, requirePermission } from "../middleware/auth.ts";
import { errorResponses, idParam, jsonBody, jsonResponse, newRouter } from "../router.ts";
import { FEEDBACK_MODES } from "../vcs-feedback/model.ts";
import { RepoUrl } from "../workspaces/model.ts";
import { listDeliveries } from "./deliveries.ts";
import {
  createHook,
  DEFAULT_ROTATION_GRACE_SECONDS,
  deleteHook,
  getHook,
  listHooks,
  MAX_ROTATION_GRACE_SECONDS,
  presentHook,
  rotateHookSecret,
  updateHook,
} from "./hooks.ts";

const VcsHook = z
  .object({
    id: z.string(),
    provider: z.enum(["github", "gitlab"]),
    repoUrl: z.string().nullable().openapi({
      description: "The one repository this hook serves; null serves every repository of the org",
    }),
    description: z.string(),
    feedback: z.enum(FEEDBACK_MODES).openapi({
      description:
        "Who posts commit statuses and plan comments: the coordinator, the agent, or nobody",
    }),
    apiUrl: z.string().nullable().openapi({
      description: "The VCS API base URL; null derives it from the workspace's repository URL",
    }),
    hasToken: z.boolean().openapi({ description: "Whether a coordinator VCS token is stored" }),
    appId: z.int().nullable().openapi({
      description: "The GitHub App the coordinator posts as (its private key is never shown)",
    }),
    url: z.string().openapi({ description: "Paste this into the VCS webhook settings" }),
    previousSecretExpiresAt: z.string().nullable().openapi({
      description: "Until when the secret replaced by the last rotation is still accepted",
    }),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi("VcsHook");

const VcsHookWithSecret = VcsHook.extend({
  secret: z.string().openapi({ description: "The webhook secret. Shown once; store it now." }),
}).openapi("VcsHookWithSecret");

const GithubApp = z
  .strictObject({
    appId: z
      .int()
      .positive()
      .openapi({ description: "The GitHub App's id (App settings → About)" }),
    privateKey: z.string().min(100).max(10_000).openapi({
      description:
        "The app's private key, PEM: PKCS#1 (`RSA PRIVATE KEY`, as GitHub issues it) or PKCS#8",
    }),
  })
  .openapi("VcsHookGithubApp", {
    description: "A GitHub App the coordinator posts as; stored sealed, the key never shown",
  });

const CreateVcsHook = z
  .strictObject({
    provider: z.enum(["github", "gitlab"]),
    repoUrl: RepoUrl.nullable().default(null),
    description: z.string().trim().max(200).default(""),
    feedback: z.enum(FEEDBACK_MODES).default("off"),
    apiUrl: z.url().max(500).nullable().default(null).openapi({
      description: "The VCS API base URL (https; loopback http only with VCS_ALLOW_LOOPBACK)",
    }),
    token: z.string().min(1).max(1000).optional().openapi({
      description: "A VCS token the coordinator posts feedback with; stored sealed, never shown",
    }),
    app: GithubApp.optional(),
  })
  .openapi("CreateVcsHook");

const UpdateVcsHook = z
  .strictObject({
    repoUrl: RepoUrl.nullable().optional(),
    description: z.string().trim().max(200).optional(),
    feedback: z.enum(FEEDBACK_MODES).optional(),
    apiUrl: z.url().max(500).nullable().optional().openapi({
      description: "The VCS API base URL (https; loopback http only with VCS_ALLOW_LOOPBACK)",
    }),
    token: z.string().min(1).max(1000).nullable().optional().openapi({
      description: "A VCS token the coordinator posts feedback with; stored sealed, never shown",
    }),
    app: GithubApp.nullable().optional(),
  })
  .openapi("UpdateVcsHook");

const RotateVcsHookSecret = z
  .strictObject({
    graceSeconds: z
      .number()
      .int()
      .min(0)
      .max(MAX_ROTATION_GRACE_SECONDS)
      .default(DEFAULT_ROTATION_GRACE_SECONDS)
      .openapi({ description: "How long the old secret stays valid; 0 revokes it at once" }),
  })
  .openapi("RotateVcsHookSecret");

const DeliveryFeedback = z
  .object({
    runId: z.string(),
    kind: z.enum(["status", "comment"]),
    runStatus: z.string().openapi({ description: "The run status the post reported" }),
    state: z.string(),
    description: z.string(),
    posted: z.boolean(),
    error: z.string().nullable().openapi({
      description: "Why it was not posted, e.g. `status not posted: 401 Bad credentials from …`",
    }),
    attempts: z.int(),
    updatedAt: z.string(),
  })
  .openapi("VcsDeliveryFeedback");

const Delivery = z
  .object({
    id: z.string(),
    deliveryId: z.string(),
    event: z.string(),
    receivedAt: z.string(),
    outcome: z.record(z.string(), z.unknown()).nullable().openapi({
      description: "Runs queued, plans canceled and workspaces skipped with the reason",
    }),
    feedback: z.array(DeliveryFeedback).openapi({
      description: "For each run the delivery queued: what VCS feedback last posted, or why not",
    }),
  })
  .openapi("VcsDelivery");

const HookParams = z.strictObject({ hookId: idParam("hook", "hookId") });
const origin = (url: string) => new URL(url).origin;

export const vcsHookRoutes = newRouter()
  .openapi(
    createRoute({
      method: "post",
      operationId: "createVcsHook",
      path: "/",
      tags: ["vcs"],
      summary: "Create a GitHub or GitLab webhook endpoint",
      security: [{ bearer: [] }],
      middleware: [requirePermission("vcs_hooks.manage")] as const,
      request: { body: jsonBody(CreateVcsHook) },
      responses: {
        201: jsonResponse(VcsHookWithSecret, "The hook, with its secret shown this once"),
        ...errorResponses(400, 401, 403, 413, 415),
      },
    }),
    async (c) => {
      const principal = personOf(c);
      const body = c.req.valid("json");
      const created = await createHook(c.var.deps, {
        orgId: principal.orgId,
        provider: body.provider,
        repoUrl: body.repoUrl,
        description: body.description,
        feedback: body.feedback,
        apiUrl: body.apiUrl,
        token: body.token,
        app: body.app,
        actor: actorOf(principal),
      });
      const { row, secret } = valueOrThrow(created);
      return c.json({ ...presentHook(row, origin(c.req.url), c.var.deps.now()), secret }, 201);
    },
  )
  .openapi(
    createRoute({
      method: "get",
      operationId: "listVcsHooks",
      path: "/",
      tags: ["vcs"],
      summary: "List the org's VCS hooks (never their secrets)",
      security: [{ bearer: [] }],
      middleware: [requirePermission("vcs_hooks.manage")] as const,
      responses: {
        200: jsonResponse(z.object({ hooks: z.array(VcsHook) }), "The hooks"),
        ...errorResponses(401, 403),
      },
    }),
    async (c) => {
      const rows = await listHooks(c.var.db, personOf(c).orgId);
      return c.json(
        { hooks: rows.map((r) => presentHook(r, origin(c.req.url), c.var.deps.now())) },
        200,
      );
    },
  )
  .openapi(
    createRoute({
      method: "get",
      operationId: "getVcsHook",
      path: "/{hookId}",
      tags: ["vcs"],
      summary: "Show a VCS hook",
      security: [{ bearer: [] }],
      middleware: [requirePermission("vcs_hooks.manage")] as const,
      request: { params: HookParams },
      responses: {
        200: jsonResponse(VcsHook, "The hook"),
        ...errorResponses(400, 401, 403, 404),
      },
    }),
    async (c) => {
      const hook = valueOrThrow(
        await getHook(c.var.db, personOf(c).orgId, c.req.valid("param").hookId),
      );
      return c.json(presentHook(hook, origin(c.req.url), c.var.deps.now()), 200);
    },
  )
  .openapi(
    createRoute({
      method: "patch",
      operationId: "updateVcsHook",
      path: "/{hookId}",
      tags: ["vcs"],
      summary: "Change a hook's description or the repository it serves",
      security: [{ bearer: [] }],
      middleware: [requirePermission("vcs_hooks.manage")] as const,
      request: { params: HookParams, body: jsonBody(UpdateVcsHook) },
      responses: {
        200: jsonResponse(VcsHook, "The updated hook"),
        ...errorResponses(400, 401, 403, 404, 413, 415),
      },
    }),
    async (c) => {
      const principal = personOf(c);
      const hook = valueOrThrow(
        await getHook(c.var.db, principal.orgId, c.req.valid("param").hookId),
      );
      const updated = valueOrThrow(
        await updateHook(c.var.deps, hook, c.req.valid("json"), actorOf(principal)),
      );
      return c.json(presentHook(updated, origin(c.req.url), c.var.deps.now()), 200);
    },
  )
  .openapi(
    createRoute({
      method: "delete",
      operationId: "deleteVcsHook",
      path: "/{hookId}",
      tags: ["vcs"],
      summary: "Delete a hook; its URL answers 404 from then on",
      security: [{ bearer: [] }],
      middleware: [requirePermission("vcs_hooks.manage")] as const,
      request: { params: HookParams },
      responses: {
        200: jsonResponse(VcsHook, "The deleted hook"),
        ...errorResponses(400, 401, 403, 404),
      },
    }),
    async (c) => {
      const principal = personOf(c);
      const hook = valueOrThrow(
        await getHook(c.var.db, principal.orgId, c.req.valid("param").hookId),
      );
      await deleteHook(c.var.deps, hook, actorOf(principal));
      return c.json(presentHook(hook, origin(c.req.url), c.var.deps.now()), 200);
    },
  )
  .openapi(
    createRoute({
      method: "post",
      operationId: "rotateVcsHookSecret",
      path: "/{hookId}/rotate-secret",
      tags: ["vcs"],
      summary: "Replace the secret; the old one stays valid for graceSeconds",
      security: [{ bearer: [] }],
      middleware: [requirePermission("vcs_hooks.manage")] as const,
      request: { params: HookParams, body: jsonBody(RotateVcsHookSecret) },
      responses: {
        200: jsonResponse(VcsHookWithSecret, "The hook, with its new secret shown this once"),
        ...errorResponses(400, 401, 403, 404, 413, 415),
      },
    }),
    async (c) => {
      const principal = personOf(c);
      const hook = valueOrThrow(
        await getHook(c.var.db, principal.orgId, c.req.valid("param").hookId),
      );
      const { graceSeconds } = c.req.valid("json");
      const { row, secret } = valueOrThrow(
        await rotateHookSecret(c.var.deps, hook, graceSeconds, actorOf(principal)),
      );
      return c.json({ ...presentHook(row, origin(c.req.url), c.var.deps.now()), secret }, 200);
    },
  )
  .openapi(
    createRoute({
      method: "get",
      operationId: "listVcsHookDeliveries",
      path: "/{hookId}/deliveries",
      tags: ["vcs"],
      summary: "The hook's 50 most recent deliveries, what each one did and its runs' VCS feedback",
      security: [{ bearer: [] }],
      middleware: [requirePermission("vcs_hooks.manage")] as const,
      request: { params: HookParams },
      responses: {
        200: jsonResponse(z.object({ deliveries: z.array(Delivery) }), "Recent deliveries"),
        ...errorResponses(400, 401, 403, 404),
      },
    }),
    async (c) => {
      const hook = valueOrThrow(
        await getHook(c.var.db, personOf(c).orgId, c.req.valid("param").hookId),
      );
      return c.json({ deliveries: await listDeliveries(c.var.db, hook.id, 50) }, 200);
    },
  );
