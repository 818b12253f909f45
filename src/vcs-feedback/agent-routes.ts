/**
 * `/agent/v1/feedback/*`: agent-mode VCS feedback. An agent token of the pool (never a job's run
 * token) claims the pool's feedback items for the VCS hosts the agent holds tokens for (names
 * only: tokens never reach the coordinator), and reports how each post went. Items of another
 * pool, or claimed by another agent, are not found.
 */
import { createRoute, z } from "@hono/zod-openapi";
import {
  AgentId,
  FeedbackClaimRequest,
  FeedbackClaimResponse,
  FeedbackItemId,
  FeedbackReport,
  FeedbackReportResponse,
} from "@outpost/protocol";
import type { Context } from "hono";
import type { AppEnv } from "../env.ts";
import { valueOrThrow } from "../errors.ts";
import { requireAuth } from "../middleware/auth.ts";
import { errorResponses, jsonBody, jsonResponse, newRouter } from "../router.ts";
import { claimFeedback, FEEDBACK_POLL_SECONDS, reportFeedback } from "./agent-mode.ts";

/** Claims are polled: the pool keeps the agent's contact, D1 records no token use for them. */
const agentPolls = requireAuth({ kinds: ["agent"], recordUse: false });
const agentAuth = requireAuth({ kinds: ["agent"] });

const AgentHeaders = z.object({
  "outpost-agent-id": AgentId.openapi({
    param: { name: "outpost-agent-id", in: "header" },
    description: "The agent id returned by register",
  }),
});

/** The calling agent's pool (from its token) and id (from the header). */
function caller(c: Context<AppEnv>, agentId: string): { poolId: string; agentId: string } {
  const principal = c.get("principal");
  if (principal?.kind !== "agent") {
    throw new Error("agent route without agent auth");
  }
  return { poolId: principal.poolId, agentId };
}

const common = { tags: ["agent"], security: [{ bearer: [] }] };

export const agentFeedbackRoutes = newRouter()
  .openapi(
    createRoute({
      ...common,
      method: "post",
      operationId: "claimVcsFeedback",
      path: "/feedback/claim",
      summary: "Take the pool's VCS feedback to post, for the hosts this agent holds tokens for",
      middleware: [agentPolls] as const,
      request: {
        headers: AgentHeaders,
        body: jsonBody(FeedbackClaimRequest.openapi("FeedbackClaimRequest")),
      },
      responses: {
        200: jsonResponse(
          FeedbackClaimResponse.openapi("FeedbackClaimResponse"),
          "Items now held by this agent (possibly none)",
        ),
        ...errorResponses(400, 401, 413, 415),
      },
    }),
    async (c) => {
      const who = caller(c, c.req.valid("header")["outpost-agent-id"]);
      const hosts = [...new Set(c.req.valid("json").hosts)];
      const items = await claimFeedback(c.var.deps, { ...who, hosts });
      return c.json({ items, pollIntervalSeconds: FEEDBACK_POLL_SECONDS }, 200);
    },
  )
  .openapi(
    createRoute({
      ...common,
      method: "post",
      operationId: "reportVcsFeedback",
      path: "/feedback/{itemId}",
      summary: "Report whether the VCS took a claimed feedback item (recorded on the run)",
      middleware: [agentAuth] as const,
      request: {
        headers: AgentHeaders,
        params: z.strictObject({
          itemId: FeedbackItemId.openapi({ param: { name: "itemId", in: "path" } }),
        }),
        body: jsonBody(FeedbackReport.openapi("FeedbackReport")),
      },
      responses: {
        200: jsonResponse(FeedbackReportResponse.openapi("FeedbackReportResponse"), "Recorded"),
        ...errorResponses(400, 401, 404, 413, 415),
      },
    }),
    async (c) => {
      const who = caller(c, c.req.valid("header")["outpost-agent-id"]);
      const { itemId } = c.req.valid("param");
      const report = c.req.valid("json");
      return c.json(
        valueOrThrow(await reportFeedback(c.var.deps, { ...who, itemId, report })),
        200,
      );
    },
  );
