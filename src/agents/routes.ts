/**
 * `/agent/v1/*`: the agent protocol. An agent token authenticates every call; after `register`
 * the `Outpost-Agent-Id` header names the agent, and job-scoped calls carry the lease id (the
 * fencing token) in the path. Bodies are the zod schemas of `@outpost/protocol` (packages/protocol).
 */
import { createRoute, z } from "@hono/zod-openapi";
import {
  AgentId,
  FinishRequest,
  FinishResponse,
  GoodbyeRequest,
  GoodbyeResponse,
  HeartbeatRequest,
  HeartbeatResponse,
  JobId,
  JobsNextResponse,
  LeaseId,
  MAX_POLL_WAIT_SECONDS,
  MAX_REQUESTED_WAIT_SECONDS,
  RegisterRequest,
  RegisterResponse,
  StartResponse,
} from "@outpost/protocol";
import type { Context } from "hono";
import type { AgentRef } from "../../durable/pool-types.ts";
import type { AppEnv } from "../env.ts";
import { valueOrThrow } from "../errors.ts";
import { requireAuth } from "../middleware/auth.ts";
import { errorResponses, jsonBody, jsonResponse, newRouter } from "../router.ts";
import { finishJob, nextJob, startJob } from "../runs/agent-jobs.ts";
import { shippedRelease } from "./release.ts";
import { agentGoodbye, agentHeartbeat, registerAgent } from "./service.ts";

const agentAuth = requireAuth({ kinds: ["agent"] });
/** Polls and heartbeats: the pool keeps their time as the agent's last contact, D1 nothing. */
const agentLiveness = requireAuth({ kinds: ["agent"], recordUse: false });

const AgentHeaders = z.object({
  "outpost-agent-id": AgentId.openapi({
    param: { name: "outpost-agent-id", in: "header" },
    description: "The agent id returned by register",
  }),
});

const LeaseParams = z.strictObject({
  jobId: JobId.openapi({
    param: { name: "jobId", in: "path" },
    example: `run_${"a".repeat(26)}%3Aplan`,
    description: "<run id>:plan or <run id>:apply, colon percent-encoded",
  }),
  leaseId: LeaseId.openapi({ param: { name: "leaseId", in: "path" } }),
});

const NextQuery = z.strictObject({
  wait: z.coerce
    .number()
    .int()
    .min(0)
    .max(MAX_REQUESTED_WAIT_SECONDS)
    .default(0)
    .openapi({
      param: { name: "wait", in: "query" },
      description: `Seconds to hold the request for work; at most ${MAX_POLL_WAIT_SECONDS} are used`,
    }),
});

/** Who is calling: the agent token's pool and the agent the header names. */
function agentRef(c: Context<AppEnv>, agentId: string): { poolId: string; ref: AgentRef } {
  const principal = c.get("principal");
  if (principal?.kind !== "agent") {
    throw new Error("agent route without agent auth");
  }
  // The pool binds agents to the token chain, so an OIDC agent's renewed token keeps its
  // registration (a static token's chain is the token itself).
  return { poolId: principal.poolId, ref: { agentId, tokenId: principal.chainId } };
}

const common = { tags: ["agent"], security: [{ bearer: [] }] };

export const agentRoutes = newRouter()
  .openapi(
    createRoute({
      ...common,
      method: "post",
      operationId: "registerAgent",
      path: "/register",
      summary: "Register an agent with the pool of its token",
      middleware: [agentAuth] as const,
      request: { body: jsonBody(RegisterRequest.openapi("AgentRegisterRequest")) },
      responses: {
        201: jsonResponse(RegisterResponse.openapi("AgentRegisterResponse"), "The agent's id"),
        ...errorResponses(400, 401, 410, 413, 415, 429),
      },
    }),
    async (c) => {
      const { poolId, ref } = agentRef(c, "");
      const body = c.req.valid("json");
      const result = await registerAgent(c.env, poolId, {
        tokenId: ref.tokenId,
        name: body.name ?? null,
        version: body.version,
        os: body.os,
        arch: body.arch,
        capacity: body.capacity,
        acceptedPhases: body.acceptedPhases,
        isolation: body.isolation ?? null,
        predecessorAgentId: body.predecessorAgentId ?? null,
        ...(body.engines === undefined ? {} : { engines: body.engines }),
      });
      const registered = valueOrThrow(result);
      const release = await shippedRelease(c.env.ASSETS).catch(() => null);
      return c.json(
        { ...registered, poolId, agentVersion: release?.manifest.version ?? null },
        201,
      );
    },
  )
  .openapi(
    createRoute({
      ...common,
      method: "post",
      operationId: "pollNextJob",
      path: "/jobs/next",
      summary: "Long-poll for work: answered the moment a matching job is queued, 204 when none",
      middleware: [agentLiveness] as const,
      request: { headers: AgentHeaders, query: NextQuery },
      responses: {
        200: jsonResponse(JobsNextResponse.openapi("JobsNextResponse"), "A job, or exit"),
        204: { description: "No job arrived within the wait" },
        ...errorResponses(400, 401, 404, 429),
      },
    }),
    async (c) => {
      const agentId = c.req.valid("header")["outpost-agent-id"];
      const { poolId, ref } = agentRef(c, agentId);
      const waitMs = Math.min(c.req.valid("query").wait, MAX_POLL_WAIT_SECONDS) * 1000;
      const outcome = valueOrThrow(await nextJob(c.var.deps, poolId, ref, waitMs));
      if (outcome.kind === "none") {
        return c.body(null, 204);
      }
      if (outcome.kind === "exit") {
        return c.json({ action: "exit" as const, exit: outcome.exit }, 200);
      }
      return c.json({ action: "run" as const, job: outcome.job }, 200);
    },
  )
  .openapi(
    createRoute({
      ...common,
      method: "post",
      operationId: "startJob",
      path: "/jobs/{jobId}/leases/{leaseId}/start",
      summary: "Acknowledge a lease (two-phase take); unacknowledged leases return to the queue",
      middleware: [agentAuth] as const,
      request: { headers: AgentHeaders, params: LeaseParams },
      responses: {
        200: jsonResponse(StartResponse.openapi("StartResponse"), "The job is started"),
        ...errorResponses(400, 401, 404, 409),
      },
    }),
    async (c) => {
      const agentId = c.req.valid("header")["outpost-agent-id"];
      const { jobId, leaseId } = c.req.valid("param");
      const { poolId, ref } = agentRef(c, agentId);
      valueOrThrow(await startJob(c.var.deps, poolId, ref, { jobId, leaseId }));
      return c.json({ jobId, leaseId, state: "started" as const }, 200);
    },
  )
  .openapi(
    createRoute({
      ...common,
      method: "post",
      operationId: "sendHeartbeat",
      path: "/heartbeat",
      summary: "Report running jobs; the answer carries cancel requests and an exit instruction",
      middleware: [agentLiveness] as const,
      request: {
        headers: AgentHeaders,
        body: jsonBody(HeartbeatRequest.openapi("HeartbeatRequest")),
      },
      responses: {
        200: jsonResponse(HeartbeatResponse.openapi("HeartbeatResponse"), "Instructions"),
        ...errorResponses(400, 401, 404, 413, 415),
      },
    }),
    async (c) => {
      const agentId = c.req.valid("header")["outpost-agent-id"];
      const { poolId, ref } = agentRef(c, agentId);
      const result = await agentHeartbeat(c.env, poolId, ref, c.req.valid("json").running);
      return c.json(valueOrThrow(result), 200);
    },
  )
  .openapi(
    createRoute({
      ...common,
      method: "post",
      operationId: "finishJob",
      path: "/jobs/{jobId}/leases/{leaseId}/finish",
      summary: "Report how a job ended (idempotent for the same lease)",
      middleware: [agentAuth] as const,
      request: {
        headers: AgentHeaders,
        params: LeaseParams,
        body: jsonBody(FinishRequest.openapi("FinishRequest")),
      },
      responses: {
        200: jsonResponse(FinishResponse.openapi("FinishResponse"), "The job has ended"),
        ...errorResponses(400, 401, 404, 409, 413, 415),
      },
    }),
    async (c) => {
      const agentId = c.req.valid("header")["outpost-agent-id"];
      const { jobId, leaseId } = c.req.valid("param");
      const body = c.req.valid("json");
      const { poolId, ref } = agentRef(c, agentId);
      const result = await finishJob(
        c.var.deps,
        poolId,
        ref,
        { jobId, leaseId },
        {
          outcome: body.outcome,
          exitCode: body.exitCode,
          planSummary: body.planSummary ?? null,
          message: body.message ?? null,
        },
        body.engineVersion ?? null,
      );
      const outcome = valueOrThrow(result).ending.outcome;
      return c.json({ jobId, state: "ended" as const, outcome }, 200);
    },
  )
  .openapi(
    createRoute({
      ...common,
      method: "post",
      operationId: "sayGoodbye",
      path: "/goodbye",
      summary: "Graceful exit: the agent is exited and takes no more work",
      middleware: [agentAuth] as const,
      request: {
        headers: AgentHeaders,
        body: jsonBody(GoodbyeRequest.openapi("GoodbyeRequest")),
      },
      responses: {
        200: jsonResponse(GoodbyeResponse.openapi("GoodbyeResponse"), "The agent has exited"),
        ...errorResponses(400, 401, 404, 413, 415),
      },
    }),
    async (c) => {
      const agentId = c.req.valid("header")["outpost-agent-id"];
      const { poolId, ref } = agentRef(c, agentId);
      const result = await agentGoodbye(c.env, poolId, ref, c.req.valid("json").reason ?? null);
      valueOrThrow(result);
      return c.json({ agentId, status: "exited" as const }, 200);
    },
  );
