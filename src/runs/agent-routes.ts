/**
 * What a job's run token may do on the agent side, while its lease is live (started, not yet
 * ended: checked when the token is authenticated): append to its job's log, download its
 * configuration, and upload once (plan job) or download (same run) plan artefacts. Everything
 * else — other jobs, other runs, other orgs — answers 404.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { ArtifactName, JobId, LeaseId, LOG_LENGTH_HEADER, SHA256_HEADER } from "@outpost/protocol";
import type { Context } from "hono";
import type { AppEnv } from "../env.ts";
import { ApiError, reasonError, valueOrThrow } from "../errors.ts";
import { requireAuth } from "../middleware/auth.ts";
import { limitBody } from "../middleware/body-limit.ts";
import { renewWorkloadIdentity } from "../oidc/workload.ts";
import { errorResponses, jsonResponse, newRouter } from "../router.ts";
import { appendJobLog, storeArtifact } from "./artifacts.ts";
import { artifactKey } from "./blobs.ts";
import { parseJobId } from "./model.ts";
import { getRunById } from "./queries.ts";

export const MAX_LOG_CHUNK_BYTES = 1024 * 1024;
export const MAX_ARTIFACT_BYTES = 100 * 1024 * 1024;

const JobParams = z.strictObject({
  jobId: JobId.openapi({
    param: { name: "jobId", in: "path" },
    example: `run_${"a".repeat(26)}:plan`,
  }),
});
const LeaseParams = JobParams.extend({
  leaseId: LeaseId.openapi({ param: { name: "leaseId", in: "path" } }),
});
const ArtifactParams = JobParams.extend({
  name: ArtifactName.openapi({ param: { name: "name", in: "path" } }),
});

const runToken = requireAuth({ kinds: ["run"] });

/** The run token's principal, checked to belong to `jobId` (or, with `sameRun`, to its run). */
function scopedJob(c: Context<AppEnv>, id: string, sameRun = false) {
  const principal = c.get("principal");
  const job = parseJobId(id);
  if (principal?.kind !== "run" || !job) {
    throw new ApiError("NOT_FOUND", `job ${id} not found`);
  }
  const allowed = sameRun ? principal.runId === job.runId : principal.jobId === id;
  if (!allowed) {
    throw new ApiError("NOT_FOUND", `job ${id} not found`);
  }
  return { principal, job };
}

export const jobDataRoutes = newRouter()
  .openapi(
    createRoute({
      method: "post",
      operationId: "renewWorkloadIdentity",
      path: "/jobs/{jobId}/workload-identity",
      tags: ["agent"],
      summary:
        "A fresh workload identity token for the running job (the agent rewrites its token file)",
      security: [{ bearer: [] }],
      middleware: [runToken] as const,
      request: { params: JobParams },
      responses: {
        200: jsonResponse(
          z.object({ token: z.string(), expiresAt: z.string() }).openapi("WorkloadIdentityToken"),
          "The new token, with the same claims and a later exp",
        ),
        ...errorResponses(401, 404, 409, 503),
      },
    }),
    async (c) => {
      const { jobId } = c.req.valid("param");
      const { principal } = scopedJob(c, jobId);
      return c.json(valueOrThrow(await renewWorkloadIdentity(c.var.deps, principal)), 200);
    },
  )
  .openapi(
    createRoute({
      method: "put",
      operationId: "appendJobLog",
      path: "/jobs/{jobId}/leases/{leaseId}/logs",
      tags: ["agent"],
      summary: "Append log bytes at an offset (416 with the length held on a gap or overlap)",
      security: [{ bearer: [] }],
      middleware: [runToken, limitBody(MAX_LOG_CHUNK_BYTES)] as const,
      request: {
        params: LeaseParams,
        query: z.strictObject({
          offset: z.coerce
            .number()
            .int()
            .min(0)
            .openapi({ param: { name: "offset", in: "query" } }),
        }),
      },
      responses: {
        200: jsonResponse(z.object({ received: z.number() }), "Bytes the coordinator holds"),
        ...errorResponses(400, 401, 404, 409, 413, 416),
      },
    }),
    async (c) => {
      const { jobId, leaseId } = c.req.valid("param");
      const { offset } = c.req.valid("query");
      const { principal } = scopedJob(c, jobId);
      const data = new Uint8Array(await c.req.arrayBuffer());
      const result = await appendJobLog(c.var.deps, principal, { leaseId, offset, data });
      if (!result.ok && result.reason.kind === "out_of_range") {
        // The agent resumes from the length the coordinator holds.
        const held = { [LOG_LENGTH_HEADER]: String(result.reason.received) };
        throw reasonError(result.reason, held);
      }
      return c.json(valueOrThrow(result), 200);
    },
  )
  .openapi(
    createRoute({
      method: "get",
      operationId: "downloadJobConfiguration",
      path: "/jobs/{jobId}/configuration",
      tags: ["agent"],
      summary: "Download the job's configuration tarball",
      security: [{ bearer: [] }],
      middleware: [runToken] as const,
      request: { params: JobParams },
      responses: {
        200: { description: "The tar.gz", content: { "application/gzip": { schema: z.string() } } },
        ...errorResponses(401, 404, 409),
      },
    }),
    async (c) => {
      const { jobId } = c.req.valid("param");
      const { job } = scopedJob(c, jobId);
      const run = await getRunById(c.var.db, job.runId);
      const cv = run?.configurationVersionId
        ? await c.var.db.query.configurationVersions.findFirst({
            where: (t, { eq }) => eq(t.id, run.configurationVersionId ?? ""),
          })
        : undefined;
      if (!cv?.r2Key) {
        throw new ApiError(
          "CONFLICT",
          `job ${jobId} has no uploaded configuration (a VCS run clones it)`,
        );
      }
      const object = await c.env.BLOBS.get(cv.r2Key);
      if (!object) {
        throw new ApiError("NOT_FOUND", `configuration ${cv.id} is gone`);
      }
      return c.body(object.body, 200, {
        "content-type": "application/gzip",
        "content-length": String(object.size),
        ...(cv.sha256 ? { [SHA256_HEADER]: cv.sha256 } : {}),
      });
    },
  )
  .openapi(
    createRoute({
      method: "put",
      operationId: "uploadJobArtifact",
      path: "/jobs/{jobId}/artifacts/{name}",
      tags: ["agent"],
      summary: "Upload a plan artefact, once (plan jobs only, while the job runs)",
      description: `The body's SHA-256 (hex) goes in \`${SHA256_HEADER}\`; the coordinator checks it and records it. An artefact is written once per job: a retry with the same bytes answers 200 again, other bytes 409.`,
      security: [{ bearer: [] }],
      middleware: [runToken, limitBody(MAX_ARTIFACT_BYTES)] as const,
      request: {
        params: ArtifactParams,
        headers: z.object({
          [SHA256_HEADER.toLowerCase()]: z
            .string()
            .optional()
            .openapi({
              param: { name: SHA256_HEADER.toLowerCase(), in: "header" },
              description: "Required: the body's SHA-256 in hex",
            }),
        }),
      },
      responses: {
        200: jsonResponse(
          z.object({ name: z.string(), sizeBytes: z.number(), sha256: z.string() }),
          "Stored (or already stored with the same bytes)",
        ),
        ...errorResponses(400, 401, 404, 409, 413),
      },
    }),
    async (c) => {
      const { jobId, name } = c.req.valid("param");
      const { principal } = scopedJob(c, jobId);
      const sha256 = (c.req.valid("header")[SHA256_HEADER.toLowerCase()] ?? "").toLowerCase();
      if (!/^[0-9a-f]{64}$/.test(sha256)) {
        throw new ApiError("BAD_REQUEST", `${SHA256_HEADER} must be the body's SHA-256 in hex`);
      }
      const length = Number(c.req.header("content-length"));
      const body = c.req.raw.body;
      if (!body || !Number.isInteger(length)) {
        throw new ApiError("BAD_REQUEST", "a body with Content-Length is required");
      }
      const result = await storeArtifact(c.var.deps, principal, { name, sha256, body });
      return c.json({ name, sizeBytes: valueOrThrow(result).sizeBytes, sha256 }, 200);
    },
  )
  .openapi(
    createRoute({
      method: "get",
      operationId: "downloadJobArtifact",
      path: "/jobs/{jobId}/artifacts/{name}",
      tags: ["agent"],
      summary: "Download a plan artefact of the same run",
      security: [{ bearer: [] }],
      middleware: [runToken] as const,
      request: { params: ArtifactParams },
      responses: {
        200: {
          description: "The artefact",
          content: { "application/octet-stream": { schema: z.string() } },
        },
        ...errorResponses(401, 404),
      },
    }),
    async (c) => {
      const { jobId, name } = c.req.valid("param");
      const { principal, job } = scopedJob(c, jobId, true);
      const object = await c.env.BLOBS.get(artifactKey(principal, name));
      if (!object) {
        throw new ApiError("NOT_FOUND", `artefact ${name} of run ${job.runId} not found`);
      }
      return c.body(object.body, 200, {
        "content-type": "application/octet-stream",
        "content-length": String(object.size),
      });
    },
  );
