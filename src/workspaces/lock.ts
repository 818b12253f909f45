/**
 * The user lock of a workspace. `locked_by` holds the holder's id: a person (`usr_…`), a team
 * (`team_…`), an org token (`tok_…`) or, set by the runs feature, a run (`run_…`); the state
 * backend relies on that format.
 */
import { sql } from "drizzle-orm";
import { auditWhereQuery } from "../audit/service.ts";
import type { AuditActor } from "../authz/actor.ts";
import type { Database } from "../db/client.ts";
import { workspaces } from "../db/schema.ts";
import { unlockDecision } from "./model.ts";
import { acquireLockQuery, findWorkspace, releaseLockQuery } from "./queries.ts";
import { presentWorkspace, refuse, type Workspace, type WorkspaceResult } from "./service.ts";

/**
 * Locks the workspace for the caller (`locked_by` = its holder id). Locking a workspace
 * the caller already holds changes nothing and succeeds, so a retried request is harmless.
 */
export async function lockWorkspace(
  db: Database,
  input: { orgId: string; ref: string; holderId: string; actor: AuditActor; reason: string },
): Promise<WorkspaceResult<Workspace>> {
  const current = await findWorkspace(db, input.orgId, input.ref);
  if (!current) {
    return refuse({ reason: "not_found" });
  }
  if (current.lockedBy === input.holderId) {
    return { ok: true, value: presentWorkspace(current) };
  }
  if (current.lockedBy) {
    return refuse({ reason: "locked", lockedBy: current.lockedBy });
  }
  const now = Date.now();
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
    return now?.lockedBy
      ? refuse({ reason: "locked", lockedBy: now.lockedBy })
      : refuse({ reason: "not_found" });
  }
  return { ok: true, value: presentWorkspace(row) };
}

/**
 * Releases the lock. The holder may; an admin may release anyone's lock (a user's or a run's)
 * only with `force`, recorded as `workspace.force_unlock`. Unlocking an unlocked workspace
 * succeeds and changes nothing.
 */
export async function unlockWorkspace(
  db: Database,
  input: {
    orgId: string;
    ref: string;
    holderId: string;
    actor: AuditActor;
    isAdmin: boolean;
    force: boolean;
  },
): Promise<WorkspaceResult<Workspace>> {
  const current = await findWorkspace(db, input.orgId, input.ref);
  if (!current) {
    return refuse({ reason: "not_found" });
  }
  const holder = current.lockedBy;
  if (holder === null) {
    return { ok: true, value: presentWorkspace(current) };
  }
  const decision = unlockDecision(holder, input);
  if (decision === "forbidden") {
    return refuse({ reason: "not_lock_holder", lockedBy: holder });
  }
  if (decision === "needs_force") {
    return refuse({ reason: "needs_force", lockedBy: holder });
  }
  const now = Date.now();
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
  return row ? { ok: true, value: presentWorkspace(row) } : refuse({ reason: "not_found" });
}
