/**
 * Who may do what to a workspace's state, and the lock as it really is (a lock held by a run
 * that has ended is released on sight, so a dead agent never leaves a workspace locked).
 */

import { auditWhereQuery } from "../audit/service.ts";
import type { Database } from "../db/client.ts";
import type { ErrorCode } from "../errors.ts";
import { ok } from "../lib/result.ts";
import { isRunStatus, isTerminal as isTerminalStatus } from "../runs/model.ts";
import { type Principal, roleAtLeast } from "../tokens/model.ts";
import type { HeldLock } from "./model.ts";
import {
  deleteLockQuery,
  findLock,
  findRunStatus,
  findStateWorkspace,
  PREVIOUS_STATEMENT_CHANGED,
  type StateWorkspace,
} from "./queries.ts";

/** An expected refusal: the error code to answer with, a message, and the lock if one is at stake. */
export type StateFailure = { code: ErrorCode; message: string; lockInfo?: string };

/** A service outcome: the value, or the refusal to answer with. */
export type StateResult<T> = { ok: true; value: T } | { ok: false; reason: StateFailure };

export function refuse(
  code: ErrorCode,
  message: string,
  lockInfo?: string,
): { ok: false; reason: StateFailure } {
  return {
    ok: false,
    reason: lockInfo === undefined ? { code, message } : { code, message, lockInfo },
  };
}

/** read: any org role, or any run of the org. write: members on local workspaces, or the workspace's own run. admin: admins. */
export type Need = "read" | "write" | "admin";

function isTerminal(status: string | undefined): boolean {
  return status === undefined || !isRunStatus(status) || isTerminalStatus(status);
}

/**
 * Finds the workspace in the caller's org (404 otherwise, also for another org's id) and checks
 * the caller may do `need` to its state. A run token whose run has ended is refused (401).
 */
export async function openWorkspace(
  db: Database,
  principal: Principal,
  workspaceId: string,
  need: Need,
): Promise<StateResult<StateWorkspace>> {
  const ws = await findStateWorkspace(db, principal.orgId, workspaceId);
  if (!ws) {
    return refuse("NOT_FOUND", `workspace ${workspaceId} not found`);
  }
  if (principal.kind === "run") {
    if (isTerminal(await findRunStatus(db, principal.orgId, principal.runId))) {
      return refuse(
        "TOKEN_REVOKED",
        `run ${principal.runId} has ended; its token is no longer valid`,
      );
    }
    if (need === "read") {
      return ok(ws);
    }
    if (need === "write" && principal.workspaceId === ws.id) {
      return ok(ws);
    }
    return refuse(
      "FORBIDDEN",
      need === "write"
        ? `a run of workspace ${principal.workspaceId} may read, never write, the state of workspace ${ws.id}`
        : "this needs an admin token",
    );
  }
  if (principal.kind !== "org") {
    return refuse("FORBIDDEN", "agent tokens have no access to state");
  }
  if (need === "read") {
    return ok(ws);
  }
  if (need === "admin") {
    return roleAtLeast(principal.role, "admin")
      ? ok(ws)
      : refuse("FORBIDDEN", "this needs the admin role");
  }
  if (!roleAtLeast(principal.role, "member")) {
    return refuse("FORBIDDEN", "writing or locking state needs the member role");
  }
  if (ws.executionMode !== "local") {
    return refuse(
      "FORBIDDEN",
      `workspace ${ws.id} runs on agents (execution mode "agent"): its state is written by its runs; set the execution mode to "local" to use it from your machine`,
    );
  }
  return ok(ws);
}

function toHeldLock(row: {
  lockId: string;
  info: string;
  runId: string | null;
  createdBy: string | null;
}): HeldLock {
  return { lockId: row.lockId, info: row.info, runId: row.runId, createdBy: row.createdBy };
}

/**
 * The workspace's state lock, or null. A lock whose run has ended (its agent died, or nobody
 * called {@link releaseRunStateLocks}) is released here, audited as done by the system.
 */
export async function loadLock(db: Database, ws: StateWorkspace): Promise<HeldLock | null> {
  const row = await findLock(db, ws.id);
  if (!row) {
    return null;
  }
  if (row.runId !== null && isTerminal(await findRunStatus(db, ws.orgId, row.runId))) {
    const now = Date.now();
    await db.batch([
      deleteLockQuery(db, ws.id, row.lockId),
      auditWhereQuery(
        db,
        {
          orgId: ws.orgId,
          actor: "system",
          action: "state.lock.release",
          targetType: "workspace",
          targetId: ws.id,
          data: {
            lockId: row.lockId,
            runId: row.runId,
            reason: "the run holding the lock has ended",
          },
          now,
        },
        PREVIOUS_STATEMENT_CHANGED,
      ),
    ]);
    return null;
  }
  return toHeldLock(row);
}
