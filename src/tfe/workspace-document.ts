/**
 * A workspace in Terraform Cloud's words: the JSON:API resource the CLI and the `tfe` provider
 * read (`go-tfe` `workspace.go`), and their create/update attributes turned into Outpost's
 * settings. Only the mapping lives here; the workspace rules stay in `src/workspaces`.
 */
import { z } from "@hono/zod-openapi";
import { decideWorkspace, type Grants, type WorkspaceAction } from "../authz/model.ts";
import { invalidInput, type Outcome } from "../lib/reason.ts";
import { TagNames } from "../workspace-tags/model.ts";
import {
  EngineVersion,
  type SettingsInput,
  WorkingDirectory,
  WorkspaceName,
} from "../workspaces/model.ts";
import type { Workspace } from "../workspaces/service.ts";
import { type Resource, related } from "./jsonapi.ts";

/** Create/update attributes; others the clients send (queue-all-runs, …) are ignored. */
const Attributes = z.object({
  name: WorkspaceName.optional(),
  description: z.string().max(1000).nullable().optional(),
  "auto-apply": z.boolean().optional(),
  "execution-mode": z.enum(["local", "agent", "remote"]).optional(),
  "agent-pool-id": z
    .string()
    .regex(/^pool_[a-z2-7]{26}$/, "must be a pool_ id")
    .nullable()
    .optional(),
  "terraform-version": EngineVersion.optional(),
  // Validated as on /api/v1: a relative path inside the configuration, never "..".
  "working-directory": WorkingDirectory.nullable().optional(),
  // The older way to give tags (go-tfe sends relationships.tags); both count.
  "tag-names": TagNames.optional(),
});

const PoolRelationship = z.object({
  data: z
    .object({
      id: z.string().regex(/^pool_[a-z2-7]{26}$/, "must be a pool_ id"),
      type: z.literal("agent-pools"),
    })
    .nullable(),
});

/** A tag by its id, or by its name (`{ type: "tags", attributes: { name } }`, as go-tfe sends). */
export const TagIdentifier = z.object({
  type: z.literal("tags"),
  id: z
    .string()
    .regex(/^(tag_[a-z2-7]{26})?$/, "must be a tag_ id")
    .optional(),
  attributes: z.object({ name: z.string().max(300).optional() }).optional(),
});
export type TagIdentifier = z.infer<typeof TagIdentifier>;

const TagsRelationship = z.object({ data: z.array(TagIdentifier).max(50) });

const ProjectRelationship = z.object({
  data: z.object({
    id: z.string().regex(/^prj_[a-z2-7]{26}$/, "must be a prj_ id"),
    type: z.literal("projects"),
  }),
});

/** The body of a workspace create or update: `{ data: { type: "workspaces", attributes } }`. */
export const WorkspaceDocument = z
  .object({
    data: z.object({
      type: z.literal("workspaces"),
      attributes: Attributes.default({}),
      relationships: z
        .object({
          "agent-pool": PoolRelationship.optional(),
          tags: TagsRelationship.optional(),
          project: ProjectRelationship.optional(),
        })
        .optional(),
    }),
  })
  .openapi("TfeWorkspaceDocument");
export type WorkspaceDocument = z.infer<typeof WorkspaceDocument>;

/**
 * Outpost's settings for a create or update document: only the attributes given. `remote` is
 * refused (Outpost runs remotely on agents: `agent` with an agent pool).
 */
export function settingsOf(
  document: WorkspaceDocument,
): Outcome<SettingsInput & { name?: string }, "invalid"> {
  const { attributes, relationships } = document.data;
  if (attributes["execution-mode"] === "remote") {
    return invalidInput(
      "json.data.attributes.execution-mode",
      'execution-mode "remote" is not offered: use "agent" with an agent pool, or "local"',
    );
  }
  const settings: SettingsInput & { name?: string; engineVersion?: string } = {};
  const pool = relationships?.["agent-pool"];
  const poolId = pool !== undefined ? (pool.data?.id ?? null) : attributes["agent-pool-id"];
  if (attributes.name !== undefined) {
    settings.name = attributes.name;
  }
  if (attributes.description !== undefined) {
    settings.description = attributes.description ?? "";
  }
  if (attributes["auto-apply"] !== undefined) {
    settings.autoApply = attributes["auto-apply"];
  }
  if (attributes["execution-mode"] !== undefined) {
    settings.executionMode = attributes["execution-mode"];
  }
  if (poolId !== undefined) {
    settings.poolId = poolId;
  }
  if (attributes["terraform-version"] !== undefined) {
    settings.engineVersion = attributes["terraform-version"];
  }
  if (attributes["working-directory"] !== undefined) {
    settings.workingDirectory = attributes["working-directory"] ?? "";
  }
  return { ok: true, value: settings };
}

const PERMISSIONS: Record<string, WorkspaceAction> = {
  "can-read-settings": "workspace.read",
  "can-queue-run": "run.queue",
  "can-queue-apply": "run.confirm",
  "can-queue-destroy": "run.confirm",
  "can-update": "workspace.update",
  "can-destroy": "workspace.delete",
  "can-lock": "workspace.lock",
  "can-unlock": "workspace.lock",
  "can-force-unlock": "workspace.force_unlock",
  "can-read-state-versions": "state.download",
  "can-create-state-versions": "state.write",
  "can-update-variable": "variables.write",
};

/**
 * The workspace as a `workspaces` resource, with what `grants` let its caller do there, and its
 * tags and its newest run when the caller read it (`extra.latestRunId`; left out of lists).
 */
export function workspaceResource(
  workspace: Workspace,
  organizationName: string,
  grants: Grants,
  extra: { tagNames?: readonly string[]; latestRunId?: string | null } = {},
): Resource {
  const { tagNames = [], latestRunId } = extra;
  const permissions = Object.fromEntries(
    Object.entries(PERMISSIONS).map(([name, action]) => [
      name,
      decideWorkspace(grants, action) === "allow",
    ]),
  );
  return {
    id: workspace.id,
    type: "workspaces",
    attributes: {
      name: workspace.name,
      description: workspace.description,
      "auto-apply": workspace.autoApply,
      "execution-mode": workspace.executionMode,
      operations: workspace.executionMode !== "local",
      "agent-pool-id": workspace.poolId,
      "terraform-version": workspace.engineVersion,
      "working-directory": workspace.workingDirectory,
      locked: workspace.lock !== null,
      "locked-reason": workspace.lock?.reason ?? "",
      "created-at": workspace.createdAt,
      "updated-at": workspace.updatedAt,
      "tag-names": tagNames,
      "resource-count": 0,
      // The CLI would then render the plan from a redacted JSON plan with provider schemas,
      // which Outpost does not produce: it prints the plan log as the engine wrote it instead.
      "structured-run-output-enabled": false,
      "speculative-enabled": true,
      "queue-all-runs": false,
      "vcs-repo": workspace.vcsRepoUrl === null ? null : { identifier: workspace.vcsRepoUrl },
      actions: { "is-destroyable": decideWorkspace(grants, "workspace.delete") === "allow" },
      permissions,
    },
    relationships: {
      organization: related("organizations", organizationName),
      "agent-pool": related("agent-pools", workspace.poolId),
      project: related("projects", workspace.projectId),
      "current-run": related("runs", workspace.currentRunId),
      ...(latestRunId === undefined ? {} : { "latest-run": related("runs", latestRunId) }),
      "locked-by": related(
        workspace.lock?.holderKind === "run" ? "runs" : "users",
        workspace.lock?.lockedBy,
      ),
    },
    links: { self: `/api/v2/organizations/${organizationName}/workspaces/${workspace.name}` },
  };
}
