/**
 * Deleting a workspace: refused while anything still uses it, then D1 (cascading) and R2.
 */

import { fail, ok } from "@outpost/common";
import { eq, sql } from "drizzle-orm";
import { auditWhereQuery } from "../audit/service.ts";
import type { AuditActor } from "../authz/actor.ts";
import type { Database } from "../db/client.ts";
import { configurationVersions, stateVersions, workspaces } from "../db/schema.ts";
import type { Deps } from "../deps.ts";
import { type Reason, refuse } from "../lib/reason.ts";
import { forgetInPoolScopesQuery } from "../pools/queries.ts";
import { deleteWorkspaceStateBlobs } from "../state/blobs.ts";
import { workspaceBlobPrefix } from "./model.ts";
import { activeRunIds, deleteIdleWorkspaceQuery, findWorkspace } from "./queries.ts";
import {
  presentWorkspace,
  type Workspace,
  type WorkspaceResult,
  workspaceNotFound,
} from "./service.ts";

/**
 * Deletes a workspace with its variables, configuration versions, runs and state (D1 cascades),
 * then its R2 objects. Refused while a run is active, while it is locked, or while its state is
 * locked; the check and the delete are one statement, so no run can slip in between.
 */
export async function deleteWorkspace(
  deps: Deps,
  input: { orgId: string; ref: string; actor: AuditActor },
): Promise<WorkspaceResult<Workspace>> {
  const { db } = deps;
  const blobs = deps.env.BLOBS;
  const current = await findWorkspace(db, input.orgId, input.ref);
  if (!current) {
    return workspaceNotFound(input.ref);
  }
  const blobKeys = await blobKeysOf(db, current.id);
  const now = deps.now();
  const [deleted] = await db.batch([
    deleteIdleWorkspaceQuery(db, input.orgId, current.id),
    auditWhereQuery(
      db,
      {
        orgId: input.orgId,
        actor: input.actor,
        action: "workspace.delete",
        targetType: "workspace",
        targetId: current.id,
        data: { name: current.name },
        now,
      },
      sql`NOT EXISTS (SELECT 1 FROM ${workspaces} WHERE ${workspaces.id} = ${current.id})`,
    ),
    forgetInPoolScopesQuery(db, input.orgId, "workspace", current.id),
  ]);
  if (deleted.length === 0) {
    return fail(await whyNotDeleted(db, input, current.id));
  }
  await deleteBlobs(blobs, current, blobKeys);
  return ok(presentWorkspace(current));
}

async function whyNotDeleted(
  db: Database,
  input: { orgId: string; ref: string },
  id: string,
): Promise<Reason<"not_found" | "conflict">> {
  const { ref } = input;
  const row = await findWorkspace(db, input.orgId, id);
  if (!row) {
    return workspaceNotFound(ref).reason;
  }
  const runIds = await activeRunIds(db, id);
  if (runIds.length > 0) {
    return refuse("conflict", `workspace ${ref} has active runs; cancel them first`, {
      details: { runIds },
    }).reason;
  }
  if (row.lockedBy) {
    return lockedBy(ref, row.lockedBy);
  }
  return refuse("conflict", `the state of workspace ${ref} is locked`).reason;
}

/** The refusal for a workspace another holder has locked. */
export function lockedBy(ref: string, holder: string): Reason<"conflict"> {
  return refuse("conflict", `workspace ${ref} is locked by ${holder}`, {
    details: { lockedBy: holder },
  }).reason;
}

async function blobKeysOf(db: Database, workspaceId: string): Promise<string[]> {
  const [configs, states] = await db.batch([
    db
      .select({ key: configurationVersions.r2Key })
      .from(configurationVersions)
      .where(eq(configurationVersions.workspaceId, workspaceId)),
    db
      .select({ key: stateVersions.r2Key })
      .from(stateVersions)
      .where(eq(stateVersions.workspaceId, workspaceId)),
  ]);
  return [...configs, ...states].flatMap((r) => (r.key ? [r.key] : []));
}

/** Best effort: D1 is the source of truth; a leftover object is garbage, never a live secret. */
async function deleteBlobs(
  blobs: R2Bucket,
  workspace: { orgId: string; id: string },
  keys: string[],
): Promise<void> {
  const workspaceId = workspace.id;
  try {
    await deleteWorkspaceStateBlobs(blobs, workspace.orgId, workspaceId);
    for (let i = 0; i < keys.length; i += 1000) {
      await blobs.delete(keys.slice(i, i + 1000));
    }
    let cursor: string | undefined;
    do {
      const listed = await blobs.list({
        prefix: workspaceBlobPrefix(workspace.orgId, workspaceId),
        cursor,
      });
      if (listed.objects.length > 0) {
        await blobs.delete(listed.objects.map((o) => o.key));
      }
      cursor = listed.truncated ? listed.cursor : undefined;
    } while (cursor);
  } catch (err) {
    console.error(
      JSON.stringify({
        level: "warn",
        msg: "workspace blob cleanup failed",
        workspaceId,
        err: String(err),
      }),
    );
  }
}
