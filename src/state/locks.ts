/**
 * The state lock: LOCK and UNLOCK of the http backend, the admin force-unlock of the API, and
 * the release of a run's locks when its job ends. One lock per workspace, a D1 row whose
 * primary key makes taking it a single atomic insert.
 */

import { ok } from "@outpost/common";
import { auditWhereQuery } from "../audit/service.ts";
import { type AuditActor, SYSTEM_ACTOR } from "../authz/actor.ts";
import { actorOf, type Principal } from "../authz/principal.ts";
import type { Deps } from "../deps.ts";
import { refuse } from "../lib/reason.ts";
import { loadLock, mayForceState, openWorkspace, type StateResult } from "./access.ts";
import {
  callerOf,
  decideLock,
  decideUnlock,
  type HeldLock,
  type LockInfo,
  workspaceLockInfo,
} from "./model.ts";
import {
  deleteLockQuery,
  findJobLocks,
  findRunLocks,
  insertLockQuery,
  PREVIOUS_STATEMENT_CHANGED,
} from "./queries.ts";

/**
 * LOCK: takes the lock, or answers 200 again for the holder's own ID (a retried LOCK). Held by
 * someone else, or the workspace user-locked by someone else → LOCKED with that holder's info.
 */
export async function lockState(
  deps: Deps,
  input: { principal: Principal; workspaceId: string; info: LockInfo; infoText: string },
): Promise<StateResult<HeldLock>> {
  const ws = await openWorkspace(deps.db, input.principal, input.workspaceId, "lock");
  if (!ws.ok) {
    return ws;
  }
  const caller = callerOf(input.principal);
  const lockedBy = ws.value.lockedBy;
  if (lockedBy !== null && lockedBy !== caller.principalId) {
    return refuse("locked", `the workspace is locked by ${lockedBy}`, {
      lockInfo: workspaceLockInfo({ ...ws.value, lockedBy }),
    });
  }
  for (let attempt = 0; attempt < 3; attempt++) {
    const lock = await loadLock(deps, ws.value);
    const decision = decideLock(lock, input.info.ID, caller);
    if (decision === "already_held" && lock) {
      return ok(lock);
    }
    if (decision === "conflict" && lock) {
      return refuse(
        "locked",
        `the state is locked by ${lock.runId ?? lock.createdBy ?? "unknown"}`,
        { lockInfo: lock.info },
      );
    }
    const [taken] = await insertLockQuery(deps.db, {
      workspaceId: ws.value.id,
      orgId: ws.value.orgId,
      lockId: input.info.ID,
      info: input.infoText,
      runId: caller.runId,
      jobId: caller.jobId,
      createdBy: caller.principalId,
      createdAt: deps.now(),
    });
    if (taken) {
      return ok({
        lockId: taken.lockId,
        info: taken.info,
        runId: taken.runId,
        createdBy: taken.createdBy,
      });
    }
    // Someone took it between the read and the insert: decide again against their lock.
  }
  return refuse("locked", "the state lock is contended; retry");
}

export type UnlockRequest = { kind: "empty" } | { kind: "info"; id: string; text: string };

/**
 * UNLOCK: see {@link decideUnlock}. Nothing held → 200. A forced release (Terraform's empty
 * body, OpenTofu's force-unlock by ID, an admin releasing someone else's lock) is audited.
 */
export async function unlockState(
  deps: Deps,
  input: { principal: Principal; workspaceId: string; request: UnlockRequest },
): Promise<StateResult<{ released: boolean }>> {
  const seen = await openWorkspace(deps.db, input.principal, input.workspaceId, "read");
  if (!seen.ok) {
    return seen;
  }
  const caller = callerOf(
    input.principal,
    await mayForceState(deps.db, input.principal, seen.value),
  );
  // Who may force is decided with the lock in hand; releasing one's own lock needs lock access.
  const need = input.request.kind === "empty" ? "unlock" : "lock";
  const ws = caller.isAdmin
    ? seen
    : await openWorkspace(deps.db, input.principal, input.workspaceId, need);
  if (!ws.ok) {
    return ws;
  }
  const lock = await loadLock(deps, ws.value);
  const decision = decideUnlock(lock, input.request, caller);
  if (decision.kind === "none_held" || lock === null) {
    return ok({ released: false });
  }
  if (decision.kind === "conflict") {
    return refuse("conflict", decision.message, { lockInfo: lock.info });
  }
  const actor = actorOf(input.principal);
  return ok({ released: await release(deps, ws.value, lock, actor, decision.isForced) });
}

async function release(
  deps: Deps,
  ws: { id: string; orgId: string },
  lock: HeldLock,
  actor: AuditActor,
  isForced: boolean,
): Promise<boolean> {
  const { db } = deps;
  const remove = deleteLockQuery(db, ws.id, lock.lockId);
  if (!isForced) {
    return (await remove).length > 0;
  }
  const [removed] = await db.batch([
    remove,
    auditWhereQuery(
      db,
      {
        orgId: ws.orgId,
        actor,
        action: "state.force_unlock",
        targetType: "workspace",
        targetId: ws.id,
        data: { lockId: lock.lockId, heldBy: lock.runId ?? lock.createdBy, info: lock.info },
        now: deps.now(),
      },
      PREVIOUS_STATEMENT_CHANGED,
    ),
  ]);
  return removed.length > 0;
}

/** The lock as the API shows it. */
export function presentLock(lock: HeldLock & { createdAt?: number }) {
  let info: unknown = null;
  try {
    info = JSON.parse(lock.info);
  } catch {
    info = null;
  }
  return { id: lock.lockId, heldBy: lock.createdBy, runId: lock.runId, info };
}

/** The workspace's state lock, for any reader. */
export async function getStateLock(
  deps: Deps,
  principal: Principal,
  workspaceId: string,
): Promise<StateResult<ReturnType<typeof presentLock> | null>> {
  const ws = await openWorkspace(deps.db, principal, workspaceId, "read");
  if (!ws.ok) {
    return ws;
  }
  const lock = await loadLock(deps, ws.value);
  return ok(lock ? presentLock(lock) : null);
}

/**
 * The API's force-unlock (admins, audited). With `lockId`, only that lock is released, so an
 * admin never breaks a lock taken after they looked.
 */
export async function forceUnlockState(
  deps: Deps,
  input: { principal: Principal; workspaceId: string; lockId: string | null },
): Promise<StateResult<{ released: ReturnType<typeof presentLock> | null }>> {
  const ws = await openWorkspace(deps.db, input.principal, input.workspaceId, "force_unlock");
  if (!ws.ok) {
    return ws;
  }
  const lock = await loadLock(deps, ws.value);
  if (lock === null) {
    return ok({ released: null });
  }
  if (input.lockId !== null && input.lockId !== lock.lockId) {
    return refuse("conflict", `the state is locked by lock ${lock.lockId}, not ${input.lockId}`);
  }
  const released = await release(deps, ws.value, lock, actorOf(input.principal), true);
  return ok({ released: released ? presentLock(lock) : null });
}

/**
 * Releases every state lock a run holds; called when the run reaches a terminal status.
 * Idempotent: a second call finds nothing. Audited per lock.
 */
export function releaseRunStateLocks(deps: Deps, runId: string): Promise<number> {
  return releaseLocks(deps, findRunLocks(deps.db, runId), { runId, reason: "the run ended" });
}

/**
 * Releases every state lock a job took; called when the job ends, however it ends (finished,
 * canceled, errored, agent lost). Idempotent. Locks of ended jobs are also released on sight by
 * the next LOCK or write, as a safety net.
 */
export function releaseJobStateLocks(deps: Deps, jobId: string): Promise<number> {
  return releaseLocks(deps, findJobLocks(deps.db, jobId), { jobId, reason: "the job ended" });
}

async function releaseLocks(
  deps: Deps,
  found: Promise<{ workspaceId: string; orgId: string; lockId: string; runId: string | null }[]>,
  why: { runId?: string; jobId?: string; reason: string },
): Promise<number> {
  const { db } = deps;
  let released = 0;
  for (const lock of await found) {
    const [removed] = await db.batch([
      deleteLockQuery(db, lock.workspaceId, lock.lockId),
      auditWhereQuery(
        db,
        {
          orgId: lock.orgId,
          actor: SYSTEM_ACTOR,
          action: "state.lock.release",
          targetType: "workspace",
          targetId: lock.workspaceId,
          data: { lockId: lock.lockId, runId: lock.runId, ...why },
          now: deps.now(),
        },
        PREVIOUS_STATEMENT_CHANGED,
      ),
    ]);
    released += removed.length;
  }
  return released;
}
