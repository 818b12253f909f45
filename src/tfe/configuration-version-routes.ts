/**
 * The TFE API's configuration versions for the cloud backend's remote runs: create one on a
 * workspace (its `upload-url` in the answer), PUT the tar.gz there without a token, and read it
 * until it is `uploaded` (or `errored`, with the upload's refusal as `error-message`).
 */
import { createRoute, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { authorizeWorkspace } from "../authz/http.ts";
import { uploadLimits } from "../configuration-versions/model.ts";
import type { AppEnv } from "../env.ts";
import { ApiError, valueOrThrow } from "../errors.ts";
import { personOf, requirePerson } from "../middleware/auth.ts";
import { idParam, newRouter } from "../router.ts";
import { workspaceOf } from "../workspaces/http.ts";
import { resolveWorkspace } from "../workspaces/service.ts";
import {
  createPendingConfiguration,
  readTfeConfiguration,
  type TfeConfigurationVersion,
  uploadTfeConfiguration,
} from "./configuration-versions.ts";
import {
  documentBody,
  documentResponse,
  errorDocuments,
  type Resource,
  sendDocument,
} from "./jsonapi.ts";

const tags = ["terraform cli"];
const security = [{ bearer: [] }];

const WorkspaceParams = z.strictObject({
  workspaceId: idParam("ws", "workspaceId"),
});
const VersionParams = z.strictObject({
  configurationVersionId: idParam("cv", "configurationVersionId"),
});
const UploadQuery = z.object({ secret: z.string().min(20).max(100) });

/** The create body; `provisional` (saved cloud plans) is refused, other members are ignored. */
const CreateDocument = z
  .object({
    data: z
      .object({
        type: z.literal("configuration-versions"),
        attributes: z
          .object({
            "auto-queue-runs": z.boolean().default(true),
            speculative: z.boolean().default(false),
            provisional: z.literal(false, "saved cloud plans (-out) are not supported").optional(),
          })
          .default({ "auto-queue-runs": true, speculative: false }),
      })
      .optional(),
  })
  .openapi("TfeConfigurationVersionDocument");

function origin(c: Context<AppEnv>): string {
  return new URL(c.req.url).origin;
}

/** The version as a `configuration-versions` resource; the upload URL only when just created. */
export function configurationVersionResource(
  version: TfeConfigurationVersion,
  base: string,
): Resource {
  const uploadUrl =
    version.secret === null
      ? null
      : `${base}/api/v2/configuration-versions/${version.id}/upload?secret=${version.secret}`;
  return {
    id: version.id,
    type: "configuration-versions",
    attributes: {
      "auto-queue-runs": version.autoQueueRuns,
      error: version.error === null ? null : "upload_refused",
      "error-message": version.error,
      source: "tfe-api",
      speculative: version.speculative,
      provisional: false,
      status: version.status,
      "status-timestamps": {
        [version.status === "pending" ? "queued-at" : `${version.status}-at`]: new Date(
          version.createdAt,
        ).toISOString(),
      },
      "upload-url": uploadUrl,
    },
    relationships: {},
    links: { self: `/api/v2/configuration-versions/${version.id}` },
  };
}

/** The declared body length: required, a number, not empty, within the configuration limit. */
function declaredLength(c: Context<AppEnv>): number {
  const header = c.req.header("content-length");
  if (header === undefined) {
    throw new ApiError("LENGTH_REQUIRED", "Content-Length is required for uploads");
  }
  if (!/^\d+$/.test(header.trim())) {
    throw new ApiError("BAD_REQUEST", "Content-Length must be a number of bytes");
  }
  const length = Number(header.trim());
  const { maxBytes } = uploadLimits(c.env);
  if (length > maxBytes) {
    throw new ApiError("PAYLOAD_TOO_LARGE", `the upload is larger than ${maxBytes} bytes`);
  }
  if (length === 0 || c.req.raw.body === null) {
    throw new ApiError("BAD_REQUEST", "the body is empty; send the configuration as a tar.gz");
  }
  return length;
}

export const configurationVersionRoutes = newRouter()
  .openapi(
    createRoute({
      method: "post",
      operationId: "tfeCreateConfigurationVersion",
      path: "/workspaces/{workspaceId}/configuration-versions",
      tags,
      summary:
        "Create a configuration version to upload to: the answer's upload-url takes the tar.gz (TFE API)",
      security,
      middleware: [requirePerson()] as const,
      request: {
        params: WorkspaceParams,
        body: { ...documentBody(CreateDocument), required: false },
      },
      responses: {
        201: documentResponse("The configuration version, pending, with its upload-url"),
        ...errorDocuments(400, 401, 403, 404, 415),
      },
    }),
    async (c) => {
      const { workspaceId } = c.req.valid("param");
      const { principal, workspace } = await workspaceOf(c, workspaceId, "configuration.upload");
      const attributes = c.req.valid("json")?.data?.attributes;
      const version = await createPendingConfiguration(c.var.deps, principal, workspace, {
        autoQueueRuns: attributes?.["auto-queue-runs"] ?? true,
        speculative: attributes?.speculative ?? false,
      });
      return sendDocument(c, { data: configurationVersionResource(version, origin(c)) }, 201);
    },
  )
  .openapi(
    createRoute({
      method: "get",
      operationId: "tfeReadConfigurationVersion",
      path: "/configuration-versions/{configurationVersionId}",
      tags,
      summary: "A configuration version: pending, uploaded or errored (TFE API)",
      security,
      middleware: [requirePerson()] as const,
      request: { params: VersionParams },
      responses: {
        200: documentResponse("The configuration version"),
        ...errorDocuments(400, 401, 404),
      },
    }),
    async (c) => {
      const { configurationVersionId: id } = c.req.valid("param");
      const principal = personOf(c);
      const version = valueOrThrow(await readTfeConfiguration(c.var.deps, principal.orgId, id));
      const workspace = await resolveWorkspace(c.var.db, principal.orgId, version.workspaceId);
      const notFound = new ApiError("NOT_FOUND", `configuration version ${id} not found`);
      if (!workspace) {
        throw notFound;
      }
      await authorizeWorkspace(c.var.db, principal, "workspace.read", workspace).catch(() => {
        throw notFound;
      });
      return sendDocument(c, { data: configurationVersionResource(version, origin(c)) });
    },
  )
  .openapi(
    createRoute({
      method: "put",
      operationId: "tfeUploadConfigurationVersion",
      path: "/configuration-versions/{configurationVersionId}/upload",
      tags,
      summary:
        "The upload URL of a configuration version: the tar.gz, once (the URL's secret, no token; TFE API)",
      description:
        "Checked as on /api/v1 (a safe tar.gz whose working directory holds a .tf or .tf.json file, within CONFIGURATION_MAX_BYTES); a refused archive leaves the version errored with the reason.",
      request: {
        params: VersionParams,
        query: UploadQuery,
        body: {
          required: true,
          content: {
            "application/octet-stream": { schema: z.string().openapi({ format: "binary" }) },
          },
        },
      },
      responses: {
        200: { description: "Stored" },
        ...errorDocuments(400, 403, 404, 409, 410, 411, 413),
      },
    }),
    async (c) => {
      const { configurationVersionId: id } = c.req.valid("param");
      const contentLength = declaredLength(c);
      const body = c.req.raw.body;
      if (body === null) {
        throw new ApiError("BAD_REQUEST", "the body is empty; send the configuration as a tar.gz");
      }
      const uploaded = await uploadTfeConfiguration(c.var.deps, {
        id,
        secret: c.req.valid("query").secret,
        body,
        contentLength,
      });
      valueOrThrow(uploaded);
      return c.body(null, 200);
    },
  );
