/**
 * `/api/v1/workspaces/{workspaceId}/…`: state history, current outputs, rollback and the state
 * lock for people and tools (JSON, bearer tokens, in the OpenAPI document). Readers and runs of
 * the org read; admins roll back and force-unlock.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { ActorSchema } from "../authz/actor.ts";
import { PERSON_KINDS } from "../authz/principal.ts";
import { PageQuery } from "../lib/paging.ts";
import { requireAuth, requirePerson } from "../middleware/auth.ts";
import { errorResponses, idParam, jsonResponse, newRouter } from "../router.ts";
import { WorkspaceRef } from "../workspaces/model.ts";
import { namedValueOrThrow, stateWorkspaceId } from "./http.ts";
import { forceUnlockState, getStateLock } from "./locks.ts";
import { readOutputs, readVersionOutputs } from "./output-reads.ts";
import { listVersionResources } from "./resources.ts";
import { md5Base64 } from "./service.ts";
import { downloadVersion, getVersion, listVersions, rollbackState } from "./versions.ts";

// People's permissions on the workspace are `may`'s, asked by each service through
// `openWorkspace`; run tokens keep their own rules there.
const readers = requireAuth({ kinds: [...PERSON_KINDS, "run"] });

const StateVersion = z
  .object({
    id: z.string(),
    workspaceId: z.string(),
    serial: z.number().int(),
    lineage: z.string(),
    md5: z.string().openapi({ description: "MD5 of the body, hex" }),
    sizeBytes: z.number().int(),
    terraformVersion: z.string().nullable(),
    isEncrypted: z.boolean().openapi({ description: "OpenTofu client-side encrypted state" }),
    isCurrent: z.boolean(),
    outputsStatus: z.enum(["stored", "none", "encrypted", "too_large"]),
    restoredFromId: z.string().nullable().openapi({ description: "Set on a rollback" }),
    runId: z.string().nullable(),
    createdBy: ActorSchema.nullable().openapi({
      description:
        "Who wrote it: a person or token, or for a run's write the person who confirmed the run",
    }),
    createdAt: z.string(),
    discardedAt: z.string().nullable().openapi({ description: "Set once the state was deleted" }),
  })
  .openapi("StateVersion");

const Output = z
  .object({
    value: z
      .unknown()
      .openapi({ description: "null when sensitive, unless an admin asked with reveal=true" }),
    type: z.unknown(),
    sensitive: z.boolean(),
  })
  .openapi("StateOutput");

const Outputs = z
  .object({
    stateVersionId: z.string().nullable(),
    serial: z.number().int().nullable(),
    outputsStatus: z.enum(["stored", "none", "encrypted", "too_large"]).nullable(),
    isRevealed: z.boolean().openapi({ description: "True when sensitive values are shown" }),
    outputs: z.record(z.string(), Output),
  })
  .openapi("StateOutputs");

const StateResources = z
  .object({
    stateVersionId: z.string(),
    serial: z.int(),
    resources: z.array(
      z.object({
        address: z.string().openapi({
          example: "module.vpc.aws_subnet.a[0]",
          description: "Terraform's address; a Pulumi resource's URN",
        }),
        mode: z.enum(["managed", "data"]),
        type: z.string(),
        name: z.string(),
        module: z.string().nullable(),
        provider: z.string().nullable(),
      }),
    ),
  })
  .openapi("StateResources");

const StateLock = z
  .object({
    id: z.string(),
    heldBy: z.string().nullable(),
    runId: z.string().nullable(),
    info: z.unknown().openapi({ description: "The lock info the client sent" }),
  })
  .openapi("StateLock");

const WorkspaceParams = z.strictObject({ workspaceId: WorkspaceRef });
const VersionParams = WorkspaceParams.extend({ stateVersionId: idParam("sv", "stateVersionId") });
const ForceUnlockQuery = z.strictObject({
  lockId: z
    .string()
    .min(1)
    .max(256)
    .optional()
    .openapi({ param: { name: "lockId", in: "query" }, description: "Only release this lock" }),
});

const RevealQuery = z.strictObject({
  reveal: z
    .enum(["true", "false"])
    .optional()
    .openapi({
      param: { name: "reveal", in: "query" },
      description:
        "true: show sensitive values (admins and owners only; audited as state.outputs.reveal)",
    }),
});

const tags = ["state"];
const security = [{ bearer: [] }];

export const stateApiRoutes = newRouter()
  .openapi(
    createRoute({
      method: "get",
      operationId: "listStateVersions",
      path: "/{workspaceId}/state-versions",
      tags,
      security,
      summary: "List state versions, newest first",
      middleware: [readers] as const,
      request: { params: WorkspaceParams, query: PageQuery },
      responses: {
        200: jsonResponse(
          z.object({ stateVersions: z.array(StateVersion), nextCursor: z.string().nullable() }),
          "A page of versions",
        ),
        ...errorResponses(400, 401, 403, 404),
      },
    }),
    async (c) => {
      const ref = c.req.valid("param").workspaceId;
      const workspaceId = await stateWorkspaceId(c, ref);
      const page = c.req.valid("query");
      return c.json(
        namedValueOrThrow(
          await listVersions(c.var.deps, c.var.principal, workspaceId, page),
          ref,
          workspaceId,
        ),
        200,
      );
    },
  )
  .openapi(
    createRoute({
      method: "get",
      operationId: "getStateVersion",
      path: "/{workspaceId}/state-versions/{stateVersionId}",
      tags,
      security,
      summary: "One state version",
      middleware: [readers] as const,
      request: { params: VersionParams },
      responses: {
        200: jsonResponse(StateVersion, "The version"),
        ...errorResponses(400, 401, 403, 404),
      },
    }),
    async (c) => {
      const { workspaceId: ref, stateVersionId } = c.req.valid("param");
      const workspaceId = await stateWorkspaceId(c, ref);
      return c.json(
        namedValueOrThrow(
          await getVersion(c.var.deps, c.var.principal, workspaceId, stateVersionId),
          ref,
          workspaceId,
        ),
        200,
      );
    },
  )
  .openapi(
    createRoute({
      method: "get",
      operationId: "downloadStateVersion",
      path: "/{workspaceId}/state-versions/{stateVersionId}/download",
      tags,
      security,
      summary: "Download a state version's body (the state file, streamed)",
      middleware: [readers] as const,
      request: { params: VersionParams },
      responses: {
        200: {
          description: "The state file (JSON) byte for byte as written, with Content-MD5",
          content: {
            "application/octet-stream": { schema: z.string().openapi({ format: "binary" }) },
          },
        },
        ...errorResponses(400, 401, 403, 404),
      },
    }),
    async (c) => {
      const { workspaceId: ref, stateVersionId } = c.req.valid("param");
      const workspaceId = await stateWorkspaceId(c, ref);
      const state = namedValueOrThrow(
        await downloadVersion(c.var.deps, c.var.principal, workspaceId, stateVersionId),
        ref,
        workspaceId,
      );
      return new Response(state.body, {
        status: 200,
        headers: {
          "content-type": "application/octet-stream",
          "content-length": String(state.sizeBytes),
          "content-md5": md5Base64(state.md5Hex),
          "content-disposition": `attachment; filename="${workspaceId}-${state.version.serial}.tfstate"`,
        },
      });
    },
  )
  .openapi(
    createRoute({
      method: "post",
      operationId: "rollbackState",
      path: "/{workspaceId}/state-versions/{stateVersionId}/rollback",
      tags,
      security,
      summary: "Make an old version current again: writes it as a new version with a higher serial",
      middleware: [requirePerson()] as const,
      request: { params: VersionParams },
      responses: {
        201: jsonResponse(StateVersion, "The new current version"),
        ...errorResponses(400, 401, 403, 404, 409),
      },
    }),
    async (c) => {
      const { workspaceId: ref, stateVersionId } = c.req.valid("param");
      const workspaceId = await stateWorkspaceId(c, ref);
      const version = namedValueOrThrow(
        await rollbackState(c.var.deps, {
          principal: c.var.principal,
          workspaceId,
          stateVersionId,
        }),
        ref,
        workspaceId,
      );
      return c.json(version, 201);
    },
  )
  .openapi(
    createRoute({
      method: "get",
      operationId: "listStateVersionResources",
      path: "/{workspaceId}/state-versions/{stateVersionId}/resources",
      tags,
      security,
      summary:
        "The resource instances a state version holds, by address (as terraform state list prints them); no attribute values",
      middleware: [readers] as const,
      request: { params: VersionParams },
      responses: {
        200: jsonResponse(StateResources, "The version's resources, in the state's order"),
        ...errorResponses(400, 401, 403, 404, 409),
      },
    }),
    async (c) => {
      const { workspaceId: ref, stateVersionId } = c.req.valid("param");
      const workspaceId = await stateWorkspaceId(c, ref);
      const result = await listVersionResources(
        c.var.deps,
        c.var.principal,
        workspaceId,
        stateVersionId,
      );
      return c.json(namedValueOrThrow(result, ref, workspaceId), 200);
    },
  )
  .openapi(
    createRoute({
      method: "get",
      operationId: "getOutputs",
      path: "/{workspaceId}/outputs",
      tags,
      security,
      summary:
        "Outputs of the current state; sensitive values hidden unless an admin asks with reveal=true",
      middleware: [readers] as const,
      request: { params: WorkspaceParams, query: RevealQuery },
      responses: {
        200: jsonResponse(Outputs, "Current outputs"),
        ...errorResponses(400, 401, 403, 404),
      },
    }),
    async (c) => {
      const ref = c.req.valid("param").workspaceId;
      const workspaceId = await stateWorkspaceId(c, ref);
      const reveal = c.req.valid("query").reveal === "true";
      return c.json(
        namedValueOrThrow(
          await readOutputs(c.var.deps, c.var.principal, workspaceId, reveal),
          ref,
          workspaceId,
        ),
        200,
      );
    },
  )
  .openapi(
    createRoute({
      method: "get",
      operationId: "getStateVersionOutputs",
      path: "/{workspaceId}/state-versions/{stateVersionId}/outputs",
      tags,
      security,
      summary: "Outputs of one state version; sensitive values as for the current outputs",
      middleware: [readers] as const,
      request: { params: VersionParams, query: RevealQuery },
      responses: {
        200: jsonResponse(Outputs, "The version's outputs"),
        ...errorResponses(400, 401, 403, 404),
      },
    }),
    async (c) => {
      const { workspaceId: ref, stateVersionId } = c.req.valid("param");
      const workspaceId = await stateWorkspaceId(c, ref);
      const reveal = c.req.valid("query").reveal === "true";
      const result = await readVersionOutputs(
        c.var.deps,
        c.var.principal,
        workspaceId,
        stateVersionId,
        reveal,
      );
      return c.json(namedValueOrThrow(result, ref, workspaceId), 200);
    },
  )
  .openapi(
    createRoute({
      method: "get",
      operationId: "getStateLock",
      path: "/{workspaceId}/state-lock",
      tags,
      security,
      summary: "Who holds the state lock",
      middleware: [readers] as const,
      request: { params: WorkspaceParams },
      responses: {
        200: jsonResponse(z.object({ lock: StateLock.nullable() }), "The lock, or null"),
        ...errorResponses(400, 401, 403, 404),
      },
    }),
    async (c) => {
      const ref = c.req.valid("param").workspaceId;
      const workspaceId = await stateWorkspaceId(c, ref);
      return c.json(
        {
          lock: namedValueOrThrow(
            await getStateLock(c.var.deps, c.var.principal, workspaceId),
            ref,
            workspaceId,
          ),
        },
        200,
      );
    },
  )
  .openapi(
    createRoute({
      method: "delete",
      operationId: "forceUnlockState",
      path: "/{workspaceId}/state-lock",
      tags,
      security,
      summary: "Force-unlock the state (admins; audited)",
      middleware: [requirePerson()] as const,
      request: { params: WorkspaceParams, query: ForceUnlockQuery },
      responses: {
        200: jsonResponse(
          z.object({ released: StateLock.nullable() }),
          "The released lock, or null when none was held",
        ),
        ...errorResponses(400, 401, 403, 404, 409),
      },
    }),
    async (c) => {
      const ref = c.req.valid("param").workspaceId;
      const workspaceId = await stateWorkspaceId(c, ref);
      const { lockId } = c.req.valid("query");
      const result = await forceUnlockState(c.var.deps, {
        principal: c.var.principal,
        workspaceId,
        lockId: lockId ?? null,
      });
      return c.json(namedValueOrThrow(result, ref, workspaceId), 200);
    },
  );
