/**
 * `GET /metrics`: the organization's metrics for Prometheus, in its text format or, when the
 * `Accept` header prefers it, OpenMetrics. Read with an org token (reader and up).
 */
import { createRoute, z } from "@hono/zod-openapi";
import { accepts } from "hono/accepts";
import { personOf, requirePermission } from "../middleware/auth.ts";
import { errorResponses, newRouter } from "../router.ts";
import {
  EXPOSITION_CONTENT_TYPES,
  EXPOSITION_MEDIA_TYPES,
  type ExpositionFormat,
  formatExposition,
} from "./exposition.ts";
import { collectMetrics } from "./service.ts";

const Exposition = z.string().openapi({
  description: "Metric families (docs/operations.md lists each one)",
  example:
    '# HELP outpost_pool_desired_agents The agents the pool should have: desiredAgents of its autoscaling signal.\n# TYPE outpost_pool_desired_agents gauge\noutpost_pool_desired_agents{pool="datacenter-1",pool_id="pool_…"} 3\n',
});

export const metricsRoutes = newRouter().openapi(
  createRoute({
    method: "get",
    operationId: "getMetrics",
    path: "/",
    tags: ["operations"],
    summary: "The organization's metrics in the Prometheus text format or OpenMetrics",
    description:
      "OpenMetrics 1.0.0 when the Accept header prefers application/openmetrics-text (as Prometheus does), else the text format 0.0.4. Covers the token's organization only; costs a bounded number of D1 statements and one call per pool.",
    security: [{ bearer: [] }],
    middleware: [requirePermission("operations.read")] as const,
    responses: {
      200: {
        description: "The metrics",
        content: {
          [EXPOSITION_MEDIA_TYPES.text]: { schema: Exposition },
          [EXPOSITION_MEDIA_TYPES.openmetrics]: { schema: Exposition },
        },
      },
      ...errorResponses(401, 403),
    },
  }),
  async (c) => {
    const principal = personOf(c);
    const media = accepts(c, {
      header: "Accept",
      supports: [EXPOSITION_MEDIA_TYPES.openmetrics, EXPOSITION_MEDIA_TYPES.text],
      default: EXPOSITION_MEDIA_TYPES.text,
    });
    const format: ExpositionFormat =
      media === EXPOSITION_MEDIA_TYPES.openmetrics ? "openmetrics" : "text";
    const families = await collectMetrics(c.var.deps, principal.orgId);
    return c.body(formatExposition(families, format), 200, {
      "content-type": EXPOSITION_CONTENT_TYPES[format],
      "cache-control": "no-store",
    });
  },
);
