/**
 * `/api/v1/pools`: agent pools and their agent tokens. Owners change them; every role reads
 * pools and their agents.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { idPattern } from "@outpost/common";
import { AgentIsolation, AgentStatus, JobPhase, OfferedEngineVersion } from "@outpost/protocol";
import { actorOf } from "../authz/principal.ts";
import { may } from "../authz/service.ts";
import { valueOrThrow } from "../errors.ts";
import { personOf, requirePermission } from "../middleware/auth.ts";
import { idOf } from "../names/http.ts";
import { oidcTrustRoutes } from "../oidc/trust-routes.ts";
import { errorResponses, jsonBody, jsonResponse, newRouter } from "../router.ts";
import { autoscalingRoutes } from "./autoscaling-routes.ts";
import {
  autoscalingSetting,
  livenessSetting,
  MAX_POOL_SCOPE_ENTRIES,
  PoolName,
  PoolRef,
} from "./model.ts";
import { changePool } from "./scope-service.ts";
import { createPool, deletePool, getPoolDetail, listPools } from "./service.ts";
import { poolTokenRoutes } from "./token-routes.ts";

export const AgentPoolSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    description: z.string(),
    unknownAfterSeconds: z.int().openapi({ description: "No contact this long: unknown" }),
    erroredAfterSeconds: z.int().openapi({ description: "Unknown this long: errored" }),
    retentionSeconds: z.int().openapi({ description: "Offline this long: dropped from listings" }),
    maxTokenExpirationSeconds: z.int().openapi({
      description: "Longest lifetime of an agent token issued by an OIDC exchange (default 3600)",
    }),
    organizationScoped: z.boolean().openapi({
      description:
        "true: every workspace of the organization may run on the pool; false: only those in allowedWorkspaceIds and those of the projects in allowedProjectIds",
    }),
    allowedWorkspaceIds: z.array(z.string()),
    allowedProjectIds: z.array(z.string()),
    minAgents: z.int().openapi({
      description: "Autoscaling: the fewest agents desiredAgents asks for (default 0)",
    }),
    maxAgents: z.int().openapi({
      description:
        "Autoscaling: the most agents desiredAgents asks for, unless more hold jobs (default 10)",
    }),
    jobsPerAgent: z.int().openapi({
      description: "Autoscaling: the jobs one agent runs at once, its --concurrency (default 1)",
    }),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi("AgentPool");

const AgentSchema = z
  .object({
    id: z.string(),
    name: z.string().nullable(),
    version: z.string(),
    os: z.string(),
    arch: z.string(),
    status: AgentStatus,
    statusReason: z.string().nullable(),
    capacity: z.int(),
    acceptedPhases: z.array(JobPhase),
    isolation: AgentIsolation.nullable().openapi({
      description:
        "How the agent confines its jobs: bwrap (a bubblewrap sandbox per job process) or none; null for agents that do not report it",
    }),
    engines: z.array(OfferedEngineVersion).openapi({
      description:
        "The engine versions it reported at registration: the newest its release mirror lists (mirror), those in its cache (cache) and on its PATH (path); empty for agents that do not report them",
    }),
    tokenId: z.string().nullable().openapi({
      description: "The agent token it logged in with: owners only, null for other roles",
    }),
    runningJobs: z.array(
      z.object({ jobId: z.string(), phase: JobPhase, state: z.enum(["leased", "started"]) }),
    ),
    lastContactAt: z.string(),
    registeredAt: z.string(),
  })
  .openapi("Agent");

const AgentPoolDetail = AgentPoolSchema.extend({
  agents: z.array(AgentSchema),
  workspaces: z.array(
    z.object({
      id: z.string(),
      name: z.string(),
      allowed: z.boolean().openapi({
        description: "false: the pool's scope no longer allows this workspace; its runs error",
      }),
    }),
  ),
}).openapi("AgentPoolDetail");

const liveness = {
  unknownAfterSeconds: livenessSetting("unknownAfterSeconds").optional(),
  erroredAfterSeconds: livenessSetting("erroredAfterSeconds").optional(),
  retentionSeconds: livenessSetting("retentionSeconds").optional(),
  maxTokenExpirationSeconds: livenessSetting("maxTokenExpirationSeconds").optional(),
};

const scope = {
  organizationScoped: z.boolean().optional().openapi({
    description: "Default true: any workspace of the organization may use the pool",
  }),
  allowedWorkspaceIds: z
    .array(z.string().regex(idPattern("workspace"), "must be a ws_ id"))
    .max(MAX_POOL_SCOPE_ENTRIES)
    .optional()
    .openapi({ description: "With organizationScoped false: workspaces that may use the pool" }),
  allowedProjectIds: z
    .array(z.string().regex(idPattern("project"), "must be a prj_ id"))
    .max(MAX_POOL_SCOPE_ENTRIES)
    .optional()
    .openapi({
      description: "With organizationScoped false: projects whose workspaces may use the pool",
    }),
};

const autoscaling = {
  minAgents: autoscalingSetting("minAgents").optional(),
  maxAgents: autoscalingSetting("maxAgents").optional(),
  jobsPerAgent: autoscalingSetting("jobsPerAgent").optional(),
};

const CreatePool = z
  .strictObject({
    name: PoolName,
    description: z.string().max(1000).optional(),
    ...liveness,
    ...scope,
    ...autoscaling,
  })
  .openapi("CreateAgentPool", {
    description: "minAgents must not be above maxAgents",
  });

const UpdatePool = z
  .strictObject({
    name: PoolName.optional(),
    description: z.string().max(1000).optional(),
    ...liveness,
    ...scope,
    ...autoscaling,
  })
  .refine((body) => Object.keys(body).length > 0, "name at least one field to change")
  .openapi("UpdateAgentPool", {
    description:
      "null resets a liveness setting to its default; minAgents must not end above maxAgents",
  });

export const PoolIdParams = z.strictObject({ poolId: PoolRef });

export const poolRoutes = newRouter()
  .openapi(
    createRoute({
      method: "post",
      operationId: "createPool",
      path: "/",
      tags: ["pools"],
      summary: "Create an agent pool",
      security: [{ bearer: [] }],
      middleware: [requirePermission("pools.manage")] as const,
      request: { body: jsonBody(CreatePool) },
      responses: {
        201: jsonResponse(AgentPoolSchema, "The pool"),
        ...errorResponses(400, 401, 403, 409, 413, 415),
      },
    }),
    async (c) => {
      const principal = personOf(c);
      const body = c.req.valid("json");
      const result = await createPool(c.var.deps, {
        ...body,
        orgId: principal.orgId,
        actor: actorOf(principal),
      });
      return c.json(valueOrThrow(result), 201);
    },
  )
  .openapi(
    createRoute({
      method: "get",
      operationId: "listPools",
      path: "/",
      tags: ["pools"],
      summary: "List the org's agent pools",
      security: [{ bearer: [] }],
      middleware: [requirePermission("pools.read")] as const,
      responses: {
        200: jsonResponse(z.object({ pools: z.array(AgentPoolSchema) }), "Pools by name"),
        ...errorResponses(401, 403),
      },
    }),
    async (c) => {
      const principal = personOf(c);
      return c.json({ pools: await listPools(c.var.db, principal.orgId) }, 200);
    },
  )
  .openapi(
    createRoute({
      method: "get",
      operationId: "getPool",
      path: "/{poolId}",
      tags: ["pools"],
      summary: "A pool with its agents, their status and jobs, and the workspaces using it",
      security: [{ bearer: [] }],
      middleware: [requirePermission("pools.read")] as const,
      request: { params: PoolIdParams },
      responses: {
        200: jsonResponse(AgentPoolDetail, "The pool"),
        ...errorResponses(400, 401, 403, 404),
      },
    }),
    async (c) => {
      const principal = personOf(c);
      const poolId = await idOf(c, "pool", c.req.valid("param").poolId);
      const resource = { type: "organization" as const, orgId: principal.orgId };
      const showTokenIds = (await may(c.var.db, principal, "pools.manage", resource)) === "allow";
      const result = await getPoolDetail(c.var.db, c.env, principal.orgId, poolId, showTokenIds);
      return c.json(valueOrThrow(result), 200);
    },
  )
  .openapi(
    createRoute({
      method: "patch",
      operationId: "updatePool",
      path: "/{poolId}",
      tags: ["pools"],
      summary: "Rename a pool, change its liveness or autoscaling settings or its scope",
      description:
        "Narrowing the scope errors the waiting runs of the workspaces it leaves out (erroredRunIds), with a reason naming the pool and the workspace; their jobs leave the pool's queue.",
      security: [{ bearer: [] }],
      middleware: [requirePermission("pools.manage")] as const,
      request: { params: PoolIdParams, body: jsonBody(UpdatePool) },
      responses: {
        200: jsonResponse(
          AgentPoolSchema.extend({ erroredRunIds: z.array(z.string()) }).openapi(
            "UpdatedAgentPool",
          ),
          "The pool, and the runs its new scope errored",
        ),
        ...errorResponses(400, 401, 403, 404, 409, 413, 415),
      },
    }),
    async (c) => {
      const principal = personOf(c);
      const poolId = await idOf(c, "pool", c.req.valid("param").poolId);
      const result = await changePool(c.var.deps, {
        orgId: principal.orgId,
        id: poolId,
        actor: actorOf(principal),
        patch: c.req.valid("json"),
      });
      return c.json(valueOrThrow(result), 200);
    },
  )
  .openapi(
    createRoute({
      method: "delete",
      operationId: "deletePool",
      path: "/{poolId}",
      tags: ["pools"],
      summary: "Delete a pool that no workspace uses (409 names the workspaces that do)",
      security: [{ bearer: [] }],
      middleware: [requirePermission("pools.manage")] as const,
      request: { params: PoolIdParams },
      responses: {
        204: { description: "Deleted; its tokens are gone and its agents told to exit" },
        ...errorResponses(400, 401, 403, 404, 409),
      },
    }),
    async (c) => {
      const principal = personOf(c);
      const poolId = await idOf(c, "pool", c.req.valid("param").poolId);
      const result = await deletePool(c.var.deps, {
        orgId: principal.orgId,
        id: poolId,
        actor: actorOf(principal),
      });
      valueOrThrow(result);
      return c.body(null, 204);
    },
  )
  .route("/", poolTokenRoutes)
  .route("/", autoscalingRoutes)
  .route("/", oidcTrustRoutes);
