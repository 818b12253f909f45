/**
 * The TFE API's state versions, for the cloud backend's local mode (`internal/cloud/state.go`):
 * the workspace's current version, creating a version (its body inline as base64, or PUT to its
 * upload URL afterwards as go-tfe's `Upload` does), reading one, and downloading its body. Every
 * write goes through the state service, so history, locks and serial/lineage rules are the
 * `http` backend's.
 */
import { createRoute, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppEnv } from "../env.ts";
import { ApiError, reasonError, valueOrThrow } from "../errors.ts";
import { invalidInput } from "../lib/reason.ts";
import { personOf, requirePerson } from "../middleware/auth.ts";
import { idParam, newRouter } from "../router.ts";
import { STATE_MAX_BYTES } from "../state/model.ts";
import { writeState } from "../state/service.ts";
import { downloadVersion } from "../state/versions.ts";
import { documentBody, documentResponse, errorDocuments, sendDocument } from "./jsonapi.ts";
import { StateVersionDocument, stateVersionResource } from "./state-version-document.ts";
import {
  authorizedUpload,
  createPendingVersion,
  currentTfeVersion,
  readTfeVersion,
  uploadPendingVersion,
} from "./state-versions.ts";

const tags = ["terraform cli"];
const security = [{ bearer: [] }];

const WorkspaceParams = z.strictObject({
  workspaceId: idParam("ws", "workspaceId"),
});
const VersionParams = z.strictObject({
  stateVersionId: idParam("sv", "stateVersionId"),
});
const UploadQuery = z.object({ secret: z.string().min(20).max(100) });
const binary = { schema: z.string().openapi({ format: "binary" }) };

function origin(c: Context<AppEnv>): string {
  return new URL(c.req.url).origin;
}

/** The declared body length, refused past the state limit before anything is read. */
function contentLength(c: Context<AppEnv>): number | null {
  const header = c.req.header("content-length");
  if (header === undefined) {
    return null;
  }
  const length = Number(header);
  if (!Number.isSafeInteger(length) || length < 0) {
    throw new ApiError("BAD_REQUEST", "Content-Length must be a whole number of bytes");
  }
  if (length > STATE_MAX_BYTES) {
    throw new ApiError("PAYLOAD_TOO_LARGE", `a state may be at most ${STATE_MAX_BYTES} bytes`);
  }
  return length;
}

function bodyOf(c: Context<AppEnv>): ReadableStream<Uint8Array> {
  const body = c.req.raw.body ?? new Response("").body;
  if (body === null) {
    throw new Error("no body stream");
  }
  return body;
}

function uploadRoute(kind: "upload" | "json-upload") {
  const isState = kind === "upload";
  return createRoute({
    method: "put",
    operationId: isState ? "tfeUploadStateVersion" : "tfeUploadStateVersionJson",
    path: `/state-versions/{stateVersionId}/${kind}`,
    tags,
    summary: isState
      ? "The upload URL of a state version: the raw state (the URL's secret, no token; TFE API)"
      : "The JSON-state upload URL of a state version: accepted and not kept (TFE API)",
    request: {
      params: VersionParams,
      query: UploadQuery,
      body: { required: true, content: { "application/octet-stream": binary } },
    },
    responses: {
      200: { description: "Stored" },
      ...errorDocuments(400, 404, 409, 410, 413),
    },
  });
}

export const stateVersionRoutes = newRouter()
  .openapi(
    createRoute({
      method: "get",
      operationId: "tfeReadCurrentStateVersion",
      path: "/workspaces/{workspaceId}/current-state-version",
      tags,
      summary: "The workspace's current state version; 404 when it has none (TFE API)",
      security,
      middleware: [requirePerson()] as const,
      request: { params: WorkspaceParams },
      responses: {
        200: documentResponse("The state version"),
        ...errorDocuments(400, 401, 403, 404),
      },
    }),
    async (c) => {
      const { workspaceId } = c.req.valid("param");
      const row = valueOrThrow(await currentTfeVersion(c.var.deps, personOf(c), workspaceId));
      return sendDocument(c, { data: stateVersionResource({ kind: "stored", row }, origin(c)) });
    },
  )
  .openapi(
    createRoute({
      method: "post",
      operationId: "tfeCreateStateVersion",
      path: "/workspaces/{workspaceId}/state-versions",
      tags,
      summary:
        "Create a state version: with `state` (base64) it is stored now, without it the answer carries its upload URL (TFE API)",
      security,
      middleware: [requirePerson()] as const,
      request: { params: WorkspaceParams, body: documentBody(StateVersionDocument) },
      responses: {
        201: documentResponse("The state version"),
        ...errorDocuments(400, 401, 403, 404, 409, 413, 415),
      },
    }),
    async (c) => {
      const { workspaceId } = c.req.valid("param");
      const { serial, lineage, md5, state, force } = c.req.valid("json").data.attributes;
      const principal = personOf(c);
      if (force === true) {
        throw reasonError(
          invalidInput(
            "json.data.attributes.force",
            "force-pushing state is not supported: roll back to an earlier version (POST /api/v1/workspaces/{ws}/state-versions/{sv}/rollback) or push a state with a higher serial",
          ).reason,
        );
      }
      if (state === undefined) {
        const pending = await createPendingVersion(c.var.deps, principal, workspaceId, {
          serial,
          lineage,
          md5,
        });
        return sendDocument(
          c,
          { data: stateVersionResource(valueOrThrow(pending), origin(c)) },
          201,
        );
      }
      const bytes = Uint8Array.from(atob(state), (char) => char.charCodeAt(0));
      const written = await writeState(c.var.deps, {
        principal,
        workspaceId,
        lockId: null,
        body: new Response(bytes).body ?? new ReadableStream(),
        contentLength: bytes.byteLength,
        contentMd5: Uint8Array.from(md5.match(/../g) ?? [], (hex) => Number.parseInt(hex, 16)),
      });
      const row = valueOrThrow(written).version;
      return sendDocument(
        c,
        { data: stateVersionResource({ kind: "stored", row }, origin(c)) },
        201,
      );
    },
  )
  .openapi(
    createRoute({
      method: "get",
      operationId: "tfeReadStateVersion",
      path: "/state-versions/{stateVersionId}",
      tags,
      summary: "A state version, stored or still waiting for its upload (TFE API)",
      security,
      middleware: [requirePerson()] as const,
      request: { params: VersionParams },
      responses: {
        200: documentResponse("The state version"),
        ...errorDocuments(400, 401, 403, 404),
      },
    }),
    async (c) => {
      const { stateVersionId } = c.req.valid("param");
      const version = await readTfeVersion(c.var.deps, personOf(c), stateVersionId);
      return sendDocument(c, { data: stateVersionResource(valueOrThrow(version), origin(c)) });
    },
  )
  .openapi(
    createRoute({
      method: "get",
      operationId: "tfeDownloadStateVersion",
      path: "/state-versions/{stateVersionId}/download",
      tags,
      summary:
        "A state version's body (sensitive outputs null for callers who may not reveal them; TFE API)",
      security,
      middleware: [requirePerson()] as const,
      request: { params: VersionParams },
      responses: {
        200: { description: "The state (application/json)" },
        ...errorDocuments(400, 401, 403, 404),
      },
    }),
    async (c) => {
      const { stateVersionId } = c.req.valid("param");
      const principal = personOf(c);
      const version = valueOrThrow(await readTfeVersion(c.var.deps, principal, stateVersionId));
      if (version.kind === "pending") {
        throw new ApiError(
          "NOT_FOUND",
          `state version ${stateVersionId} has no state uploaded yet`,
        );
      }
      const { row } = version;
      const state = valueOrThrow(
        await downloadVersion(c.var.deps, principal, row.workspaceId, row.id),
      );
      return new Response(state.body, {
        status: 200,
        headers: { "content-type": "application/json", "content-length": String(state.sizeBytes) },
      });
    },
  )
  .openapi(uploadRoute("upload"), async (c) => {
    const { stateVersionId } = c.req.valid("param");
    const stored = await uploadPendingVersion(c.var.deps, {
      stateVersionId,
      secret: c.req.valid("query").secret,
      body: bodyOf(c),
      contentLength: contentLength(c),
    });
    valueOrThrow(stored);
    return c.body(null, 200);
  })
  .openapi(uploadRoute("json-upload"), async (c) => {
    const { stateVersionId } = c.req.valid("param");
    valueOrThrow(await authorizedUpload(c.var.deps, stateVersionId, c.req.valid("query").secret));
    // Terraform's JSON rendering of the state: Outpost reads what it shows from the state itself.
    await bodyOf(c).cancel();
    return c.body(null, 200);
  });
