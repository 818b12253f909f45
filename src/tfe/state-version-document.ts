/**
 * A state version in Terraform Cloud's words (go-tfe `state_version.go`): the create document
 * the cloud backend sends, and the `state-versions` resource it reads, whose
 * `hosted-state-download-url` it downloads with its token and whose upload URLs it PUTs to
 * without one.
 */
import { z } from "@hono/zod-openapi";
import type { Resource } from "./jsonapi.ts";
import { related } from "./jsonapi.ts";
import type { TfeStateVersion } from "./state-versions.ts";

/** Base64 of a state up to the state backend's limit (96 MiB), as older clients send it inline. */
const INLINE_STATE_MAX_CHARS = Math.ceil((96 * 1024 * 1024) / 3) * 4;

/** `POST /workspaces/{id}/state-versions`: serial, lineage and md5 of the state, maybe the state. */
export const StateVersionDocument = z
  .object({
    data: z.object({
      type: z.literal("state-versions"),
      attributes: z.object({
        serial: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
        md5: z
          .string()
          .regex(/^[0-9a-f]{32}$/i, "must be the state's md5 as 32 hex digits")
          .transform((md5) => md5.toLowerCase()),
        lineage: z.string().min(1).max(200),
        state: z.base64().max(INLINE_STATE_MAX_CHARS).optional(),
        force: z.boolean().optional(),
        // Terraform's JSON renderings of the state: Outpost reads outputs from the state itself.
        "json-state": z.string().optional(),
        "json-state-outputs": z.string().optional(),
      }),
    }),
  })
  .openapi("TfeStateVersionDocument");
export type StateVersionDocument = z.infer<typeof StateVersionDocument>;

const iso = (ms: number) => new Date(ms).toISOString();

/** The `state-versions` resource of a stored or pending version; `origin` makes its URLs. */
export function stateVersionResource(version: TfeStateVersion, origin: string): Resource {
  const base = `${origin}/api/v2/state-versions`;
  if (version.kind === "pending") {
    const secret = version.secret === null ? null : encodeURIComponent(version.secret);
    return {
      id: version.id,
      type: "state-versions",
      attributes: {
        status: "pending",
        serial: version.declared.serial,
        lineage: version.declared.lineage,
        md5: version.declared.md5,
        "created-at": iso(version.createdAt),
        "hosted-state-upload-url": secret && `${base}/${version.id}/upload?secret=${secret}`,
        "hosted-json-state-upload-url":
          secret && `${base}/${version.id}/json-upload?secret=${secret}`,
        "hosted-state-download-url": null,
        "hosted-json-state-download-url": null,
        "resources-processed": false,
      },
      relationships: { workspace: related("workspaces", version.workspaceId) },
    };
  }
  const { row } = version;
  return {
    id: row.id,
    type: "state-versions",
    attributes: {
      status: "finalized",
      serial: row.serial,
      lineage: row.lineage,
      md5: row.md5,
      size: row.sizeBytes,
      "created-at": iso(row.createdAt),
      "terraform-version": row.terraformVersion ?? "",
      "hosted-state-download-url": `${base}/${row.id}/download`,
      "hosted-json-state-download-url": null,
      "resources-processed": true,
      "state-version": 4,
    },
    relationships: {
      workspace: related("workspaces", row.workspaceId),
      run: related("runs", row.runId),
    },
    links: { self: `/api/v2/state-versions/${row.id}` },
  };
}
