/**
 * `/api/v1/workspaces/{workspaceId}/configuration-versions`: members upload a tar.gz as the raw
 * request body (Content-Length required, size-limited before anything is read); every role lists
 * and reads them.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { actorOf } from "../authz/principal.ts";
import { ApiError, valueOrThrow } from "../errors.ts";
import { decodeCursor, PageQuery, takePage } from "../lib/paging.ts";
import { requirePerson } from "../middleware/auth.ts";
import { errorResponses, idParam, jsonResponse, newRouter } from "../router.ts";
import { workspaceOf } from "../workspaces/http.ts";
import { WorkspaceRef } from "../workspaces/model.ts";
import { isUploadMediaType, UPLOAD_MEDIA_TYPES, uploadLimits } from "./model.ts";
import { getConfigurationVersion, listConfigurationVersionRows } from "./queries.ts";
import { presentConfigurationVersion, uploadConfigurationVersion } from "./service.ts";

export const ConfigurationVersionSchema = z
  .object({
    id: z.string(),
    workspaceId: z.string(),
    source: z.enum(["upload", "vcs"]),
    sha256: z.string().nullable().openapi({ description: "Hex SHA-256 of the uploaded tar.gz" }),
    sizeBytes: z.number().int().nullable(),
    repoUrl: z.string().nullable(),
    commitSha: z.string().nullable(),
    branch: z.string().nullable(),
    isSpeculative: z.boolean().openapi({
      description: "A pull request's commit: only speculative plans may run on it",
    }),
    isFork: z.boolean().openapi({
      description: "A pull request from a fork: its runs get no secrets and never write state",
    }),
    createdBy: z.string().nullable(),
    createdAt: z.string(),
  })
  .openapi("ConfigurationVersion");

const WorkspaceParams = z.strictObject({ workspaceId: WorkspaceRef });
const VersionParams = z.strictObject({
  workspaceId: WorkspaceRef,
  configurationVersionId: idParam("cv", "configurationVersionId"),
});
const binary = z.string().openapi({ format: "binary" });

/** The declared body length, checked against the limit before a byte is read. */
function declaredLength(header: string | undefined, maxBytes: number): number {
  if (header === undefined) {
    throw new ApiError("LENGTH_REQUIRED", "Content-Length is required for uploads");
  }
  if (!/^\d+$/.test(header.trim())) {
    throw new ApiError("BAD_REQUEST", "Content-Length must be a number of bytes");
  }
  const length = Number(header.trim());
  if (length > maxBytes) {
    throw new ApiError("PAYLOAD_TOO_LARGE", `the upload is larger than ${maxBytes} bytes`);
  }
  if (length === 0) {
    throw new ApiError("BAD_REQUEST", "the body is empty; send a tar.gz");
  }
  return length;
}

const tags = ["configuration-versions"];
const security = [{ bearer: [] }];

export const configurationVersionRoutes = newRouter()
  .openapi(
    createRoute({
      method: "post",
      operationId: "createConfigurationVersion",
      path: "/{workspaceId}/configuration-versions",
      tags,
      summary: "Upload a configuration (tar.gz as the raw body)",
      description:
        "Refused with 400 unless the body is a gzip-compressed tar whose entries are relative, without '..', devices, FIFOs, or links leaving the tree, and whose working directory (the workspace's) holds a .tf or .tf.json file (Pulumi.yaml for Pulumi workspaces); 413 past CONFIGURATION_MAX_BYTES (compressed) or CONFIGURATION_MAX_UNPACKED_BYTES (unpacked), or unpacking to more than CONFIGURATION_MAX_RATIO (100) times the compressed bytes past 16 MiB.",
      security,
      middleware: [requirePerson()] as const,
      request: {
        params: WorkspaceParams,
        body: {
          required: true,
          content: Object.fromEntries(UPLOAD_MEDIA_TYPES.map((t) => [t, { schema: binary }])),
        },
      },
      responses: {
        201: jsonResponse(ConfigurationVersionSchema, "The stored configuration version"),
        ...errorResponses(400, 401, 403, 404, 411, 413, 415),
      },
    }),
    async (c) => {
      const { principal, workspace } = await workspaceOf(
        c,
        c.req.valid("param").workspaceId,
        "configuration.upload",
      );
      if (!isUploadMediaType(c.req.header("content-type"))) {
        throw new ApiError(
          "UNSUPPORTED_MEDIA_TYPE",
          `send the tar.gz as ${UPLOAD_MEDIA_TYPES.join(" or ")}`,
        );
      }
      const limits = uploadLimits(c.env);
      const contentLength = declaredLength(c.req.header("content-length"), limits.maxBytes);
      const body = c.req.raw.body;
      if (!body) {
        throw new ApiError("BAD_REQUEST", "the body is empty; send a tar.gz");
      }
      const result = await uploadConfigurationVersion(c.var.deps, {
        orgId: principal.orgId,
        workspaceId: workspace.id,
        actor: actorOf(principal),
        body,
        contentLength,
        limits,
        expected: { engine: workspace.engine, workingDirectory: workspace.workingDirectory },
      });
      return c.json(valueOrThrow(result), 201);
    },
  )
  .openapi(
    createRoute({
      method: "get",
      operationId: "listConfigurationVersions",
      path: "/{workspaceId}/configuration-versions",
      tags,
      summary: "List a workspace's configuration versions, newest first",
      security,
      middleware: [requirePerson()] as const,
      request: { params: WorkspaceParams, query: PageQuery },
      responses: {
        200: jsonResponse(
          z.object({
            configurationVersions: z.array(ConfigurationVersionSchema),
            nextCursor: z.string().nullable(),
          }),
          "A page of configuration versions",
        ),
        ...errorResponses(400, 401, 404),
      },
    }),
    async (c) => {
      const { workspace } = await workspaceOf(
        c,
        c.req.valid("param").workspaceId,
        "workspace.read",
      );
      const { limit, cursor } = c.req.valid("query");
      const before =
        cursor === undefined ? undefined : valueOrThrow(decodeCursor(cursor, ["number", "string"]));
      const rows = await listConfigurationVersionRows(c.var.db, workspace.id, { limit, before });
      const page = takePage(rows, limit, (r) => [r.createdAt, r.id]);
      return c.json(
        {
          configurationVersions: page.items.map(presentConfigurationVersion),
          nextCursor: page.nextCursor,
        },
        200,
      );
    },
  )
  .openapi(
    createRoute({
      method: "get",
      operationId: "getConfigurationVersion",
      path: "/{workspaceId}/configuration-versions/{configurationVersionId}",
      tags,
      summary: "Get a configuration version",
      security,
      middleware: [requirePerson()] as const,
      request: { params: VersionParams },
      responses: {
        200: jsonResponse(ConfigurationVersionSchema, "The configuration version"),
        ...errorResponses(400, 401, 404),
      },
    }),
    async (c) => {
      const { workspaceId, configurationVersionId } = c.req.valid("param");
      const { workspace } = await workspaceOf(c, workspaceId, "workspace.read");
      const row = await getConfigurationVersion(c.var.db, workspace.id, configurationVersionId);
      if (!row) {
        throw new ApiError(
          "NOT_FOUND",
          `configuration version ${configurationVersionId} not found`,
        );
      }
      return c.json(presentConfigurationVersion(row), 200);
    },
  )
  .openapi(
    createRoute({
      method: "get",
      operationId: "downloadConfigurationVersion",
      path: "/{workspaceId}/configuration-versions/{configurationVersionId}/download",
      tags,
      summary: "Download an uploaded configuration's tar.gz, exactly as it was uploaded",
      security,
      middleware: [requirePerson()] as const,
      request: { params: VersionParams },
      responses: {
        200: {
          description: "The tar.gz; X-Content-SHA256 carries its hex SHA-256",
          content: { "application/gzip": { schema: binary } },
        },
        ...errorResponses(400, 401, 404),
      },
    }),
    async (c) => {
      const { workspaceId, configurationVersionId } = c.req.valid("param");
      const { workspace } = await workspaceOf(c, workspaceId, "workspace.read");
      const row = await getConfigurationVersion(c.var.db, workspace.id, configurationVersionId);
      const object = row?.r2Key ? await c.env.BLOBS.get(row.r2Key) : null;
      if (!row || !object) {
        // A VCS configuration has no tarball here: the agent clones it.
        throw new ApiError(
          "NOT_FOUND",
          `configuration version ${configurationVersionId} has no upload`,
        );
      }
      return new Response(object.body, {
        headers: {
          "content-type": "application/gzip",
          "content-length": String(object.size),
          "content-disposition": `attachment; filename="${row.id}.tar.gz"`,
          "x-content-sha256": row.sha256 ?? "",
        },
      });
    },
  );
