/**
 * The user lock of a workspace. `locked_by` holds the holder's id: a person (`usr_…`), a team
 * (`team_…`), an org token (`tok_…`) or, set by the runs feature, a run (`run_…`); the state
 * backend relies on that format.
 */

import { fail, ok } from "@outpost/common";
import { sql } from "drizzle-orm";
import { auditWhereQuery } from "../audit/service.ts";
import type { AuditActor } from "../authz/actor.ts";
import { workspaces } from "../db/schema.ts";
import type { Deps } from "../deps.ts";
import { refuse } from "../lib/reason.ts";
import { lockedBy } from "./delete.ts";
import { unlockDecision } from "./model.ts";
import { acquireLockQuery, findWorkspace, releaseLockQuery } from "./queries.ts";
import {
  presentWorkspace,
  resolveWorkspace,
  type Workspace,
  type WorkspaceResult,
  workspaceNotFound,
} from "./service.ts";

/**
 * Locks the workspace for the caller (`locked_by` = its holder id). Locking a workspace
 * the caller already holds changes nothing and succeeds, so a retried request is harmless,
 * unless `reentrant` is false (the TFE API's rule): then any held lock is a `conflict`.
 */
export async function lockWorkspace(
  deps: Deps,
  input: {
    orgId: string;
    ref: string;
    holderId: string;
    actor: AuditActor;
    reason: string;
    reentrant?: boolean;
  },
): Promise<WorkspaceResult<Workspace>> {
  const { db } = deps;
  const current = await resolveWorkspace(db, input.orgId, input.ref);
  if (!current) {
    return workspaceNotFound(input.ref);
  }
  if (current.lockedBy === input.holderId && input.reentrant !== false) {
    return ok(presentWorkspace(current));
  }
  if (current.lockedBy) {
    return fail(lockedBy(input.ref, current.lockedBy));
  }
  const now = deps.now();
  const [updated] = await db.batch([
    acquireLockQuery(db, input.orgId, current.id, {
      lockedBy: input.holderId,
      reason: input.reason,
      now,
    }),
    auditWhereQuery(
      db,
      {
        orgId: input.orgId,
        actor: input.actor,
        action: "workspace.lock",
        targetType: "workspace",
        targetId: current.id,
        data: { reason: input.reason },
        now,
      },
      sql`EXISTS (SELECT 1 FROM ${workspaces} WHERE ${workspaces.id} = ${current.id} AND ${workspaces.lockedBy} = ${input.holderId} AND ${workspaces.lockedAt} = ${now})`,
    ),
  ]);
  const row = updated[0];
  if (!row) {
    const now = await findWorkspace(db, input.orgId, current.id);
    return now?.lockedBy ? fail(lockedBy(input.ref, now.lockedBy)) : workspaceNotFound(input.ref);
  }
  return ok(presentWorkspace(row));
}

/**
 * Releases the lock. The holder may; an admin may release anyone's lock (a user's or a run's)
 * only with `force`, recorded as `workspace.force_unlock`. Unlocking an unlocked workspace
 * succeeds and changes nothing.
 */
export async function unlockWorkspace(
  deps: Deps,
  input: {
    orgId: string;
    ref: string;
    holderId: string;
    actor: AuditActor;
    isAdmin: boolean;
    force: boolean;
  },
): Promise<WorkspaceResult<Workspace>> {
  const { db } = deps;
  const current = await resolveWorkspace(db, input.orgId, input.ref);
  if (!current) {
    return workspaceNotFound(input.ref);
  }
  const holder = current.lockedBy;
  if (holder === null) {
    return ok(presentWorkspace(current));
  }
  const decision = unlockDecision(holder, input);
  if (decision === "forbidden") {
    return refuse(
      "forbidden",
      `workspace ${input.ref} is locked by ${holder}; only the holder or an admin may unlock`,
      { details: { lockedBy: holder } },
    );
  }
  if (decision === "needs_force") {
    return refuse(
      "conflict",
      `workspace ${input.ref} is locked by ${holder}; add ?force=true to force-unlock`,
      { details: { lockedBy: holder } },
    );
  }
  const now = deps.now();
  const [updated] = await db.batch([
    releaseLockQuery(db, input.orgId, current.id, holder),
    auditWhereQuery(
      db,
      {
        orgId: input.orgId,
        actor: input.actor,
        action: decision === "force_release" ? "workspace.force_unlock" : "workspace.unlock",
        targetType: "workspace",
        targetId: current.id,
        data: { lockedBy: holder, reason: current.lockReason },
        now,
      },
      sql`EXISTS (SELECT 1 FROM ${workspaces} WHERE ${workspaces.id} = ${current.id} AND ${workspaces.lockedBy} IS NULL)`,
    ),
  ]);
  const row = updated[0] ?? (await findWorkspace(db, input.orgId, current.id));
  return row ? ok(presentWorkspace(row)) : workspaceNotFound(input.ref);
}
