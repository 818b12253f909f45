/**
 * Who may do what to a workspace's state, and the lock as it really is (a lock held by a run
 * that has ended is released on sight, so a dead agent never leaves a workspace locked).
 */

import { ok } from "@outpost/common";
import { auditWhereQuery } from "../audit/service.ts";
import type { Database } from "../db/client.ts";
import type { ErrorCode } from "../errors.ts";
import { isRunStatus, isTerminal as isTerminalStatus, parseJobId } from "../runs/model.ts";
import { isJobLive } from "../runs/queries.ts";
import { type Principal, roleAtLeast } from "../tokens/model.ts";
import type { HeldLock } from "./model.ts";
import {
  deleteLockQuery,
  findLock,
  findRunFacts,
  findRunStatus,
  findStateWorkspace,
  PREVIOUS_STATEMENT_CHANGED,
  type StateWorkspace,
} from "./queries.ts";
import { mayWriteState, sharesOutputsWith } from "./run-access.ts";

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

/**
 * read: any org role, or any job of the workspace. outputs: also a job of a workspace it shares
 * its outputs with. lock: members on local workspaces, or any job of the workspace. write:
 * members on local workspaces, or the workspace's applying job. admin: admins.
 */
export type Need = "read" | "outputs" | "lock" | "write" | "admin";

function isTerminal(status: string | undefined): boolean {
  return status === undefined || !isRunStatus(status) || isTerminalStatus(status);
}

/**
 * Finds the workspace in the caller's org (404 otherwise, also for another org's id) and checks
 * the caller may do `need` to its state. A run token whose run has ended is refused (401); a run
 * token asking for anything of another workspace but its shared outputs gets 404.
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
    return openForRun(db, principal, ws, need);
  }
  if (principal.kind !== "org") {
    return refuse("FORBIDDEN", "agent tokens have no access to state");
  }
  if (need === "read" || need === "outputs") {
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

/** The run-token half of {@link openWorkspace}: the job's phase and run decide. */
async function openForRun(
  db: Database,
  principal: Extract<Principal, { kind: "run" }>,
  ws: StateWorkspace,
  need: Need,
): Promise<StateResult<StateWorkspace>> {
  const run = await findRunFacts(db, principal.orgId, principal.runId);
  const job = parseJobId(principal.jobId);
  if (!run || !job || isTerminal(run.status)) {
    return refuse(
      "TOKEN_REVOKED",
      `run ${principal.runId} has ended; its token is no longer valid`,
    );
  }
  if (ws.id !== principal.workspaceId) {
    const consumer = { workspaceId: principal.workspaceId, isFork: run.isFork };
    return need === "outputs" && sharesOutputsWith(ws, consumer)
      ? ok(ws)
      : refuse(
          "NOT_FOUND",
          `workspace ${ws.id} not found, or it does not share its state with workspace ${principal.workspaceId}`,
        );
  }
  if (need === "read" || need === "outputs" || need === "lock") {
    return ok(ws);
  }
  if (need === "admin") {
    return refuse("FORBIDDEN", "this needs an admin token");
  }
  const allowed = mayWriteState({ workspaceId: principal.workspaceId, phase: job.phase, ...run });
  return allowed.ok ? ok(ws) : refuse("FORBIDDEN", allowed.reason);
}

function toHeldLock(row: {
  lockId: string;
  info: string;
  runId: string | null;
  createdBy: string | null;
}): HeldLock {
  return { lockId: row.lockId, info: row.info, runId: row.runId, createdBy: row.createdBy };
}

/** Why a run's lock is dead (its job or its run ended), or null while its holder lives. */
async function deadHolder(
  db: Database,
  orgId: string,
  row: { runId: string | null; jobId: string | null },
): Promise<string | null> {
  if (row.runId === null) {
    return null;
  }
  if (isTerminal(await findRunStatus(db, orgId, row.runId))) {
    return "the run holding the lock has ended";
  }
  if (row.jobId !== null && !(await isJobLive(db, row.jobId))) {
    return "the job holding the lock has ended";
  }
  return null;
}

/**
 * The workspace's state lock, or null. A lock whose job or run has ended (its agent died, or
 * nobody called `releaseJobStateLocks`) is released here, audited as done by the system.
 */
export async function loadLock(db: Database, ws: StateWorkspace): Promise<HeldLock | null> {
  const row = await findLock(db, ws.id);
  if (!row) {
    return null;
  }
  const reason = await deadHolder(db, ws.orgId, row);
  if (reason !== null) {
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
          data: { lockId: row.lockId, runId: row.runId, jobId: row.jobId, reason },
          now,
        },
        PREVIOUS_STATEMENT_CHANGED,
      ),
    ]);
    return null;
  }
  return toHeldLock(row);
}
