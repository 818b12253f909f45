/**
 * `GET /api/v1/pools/{poolId}/autoscaling`: the number of agents the pool should have, in the
 * shape KEDA's `metrics-api` scaler reads as is (`valueLocation: desiredAgents`, bearer auth).
 */
import { createRoute, z } from "@hono/zod-openapi";
import { valueOrThrow } from "../errors.ts";
import { personOf, requirePermission } from "../middleware/auth.ts";
import { errorResponses, idParam, jsonResponse, newRouter } from "../router.ts";
import { getAutoscaling } from "./autoscaling.ts";

const Params = z.strictObject({ poolId: idParam("pool", "poolId") });

const count = (description: string) => z.int().nonnegative().openapi({ description });

const AutoscalingSignal = z
  .object({
    desiredAgents: count(
      "Agents the pool should have: ceil((queuedJobs + runningJobs) / jobsPerAgent) within [minAgents, maxAgents], and never fewer than the agents holding jobs",
    ),
    queuedJobs: count(
      "Jobs waiting in the pool's queue; runs waiting for their workspace (behind another run, or held by a workspace lock) are not queued yet",
    ),
    runningJobs: count("Jobs leased to or started by an agent"),
    idleAgents: count("Agents online without a job"),
    busyAgents: count("Agents online with at least one job"),
    minAgents: count("The pool's minAgents setting"),
    maxAgents: count("The pool's maxAgents setting"),
  })
  .openapi("AutoscalingSignal");

export const autoscalingRoutes = newRouter().openapi(
  createRoute({
    method: "get",
    operationId: "getPoolAutoscaling",
    path: "/{poolId}/autoscaling",
    tags: ["pools"],
    summary: "How many agents the pool should have now (for KEDA's metrics-api scaler)",
    security: [{ bearer: [] }],
    middleware: [requirePermission("operations.read")] as const,
    request: { params: Params },
    responses: {
      200: jsonResponse(AutoscalingSignal, "The pool's autoscaling signal"),
      ...errorResponses(400, 401, 403, 404),
    },
  }),
  async (c) => {
    const principal = personOf(c);
    const { poolId } = c.req.valid("param");
    return c.json(valueOrThrow(await getAutoscaling(c.var.deps, principal.orgId, poolId)), 200);
  },
);
