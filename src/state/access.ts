/**
 * Who may do what to a workspace's state, and the lock as it really is (a lock held by a run
 * that has ended is released on sight, so a dead agent never leaves a workspace locked).
 */

import { ok, type Result } from "@outpost/common";
import { auditWhereQuery } from "../audit/service.ts";
import { SYSTEM_ACTOR } from "../authz/actor.ts";
import { type WorkspaceAction, workspaceRefusal } from "../authz/model.ts";
import { isPerson, type PersonPrincipal, type Principal } from "../authz/principal.ts";
import { may } from "../authz/service.ts";
import type { Database } from "../db/client.ts";
import type { Deps } from "../deps.ts";
import { type Reason, refuse } from "../lib/reason.ts";
import { notFoundSentence } from "../names/model.ts";
import { isRunStatus, isTerminal as isTerminalStatus, parseJobId } from "../runs/model.ts";
import { isJobLive } from "../runs/token-queries.ts";
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

/**
 * Why a state operation was refused; when a lock is at stake, the holder's lock info (the `http`
 * backend's clients read it from a 409 or 423 answer).
 */
export type StateReason = Reason & { readonly lockInfo?: string };

/** A state service outcome: the value, or the refusal. */
export type StateResult<T> = Result<T, StateReason>;

/**
 * read: the metadata (versions, outputs with sensitive values hidden, the lock). outputs: also a
 * job of a workspace it shares its outputs with. download: a state body. lock and write: people
 * on local workspaces (write access), or a job of the workspace (any job locks; the applying job
 * writes). unlock: the same callers, on any workspace (the lock itself then decides). rollback, force_unlock, delete: the workspace's admins. People's needs are `may`'s
 * (`PERSON_NEEDS`); a run token's are decided here from its job.
 */
export type Need =
  | "read"
  | "outputs"
  | "download"
  | "lock"
  | "unlock"
  | "write"
  | "rollback"
  | "force_unlock"
  | "delete";

/** The action `may` decides for a person's need. */
const PERSON_NEEDS: Record<Need, WorkspaceAction> = {
  read: "workspace.read",
  outputs: "workspace.read",
  download: "state.download",
  lock: "state.write",
  unlock: "state.write",
  write: "state.write",
  rollback: "state.rollback",
  force_unlock: "state.force_unlock",
  delete: "state.delete",
};

function isTerminal(status: string | undefined): boolean {
  return status === undefined || !isRunStatus(status) || isTerminalStatus(status);
}

/**
 * Finds the workspace in the caller's org (`not_found` otherwise, also for another org's id) and
 * checks the caller may do `need` to its state. A run token whose run has ended is `revoked`; a
 * run token asking for anything of another workspace but its shared outputs gets `not_found`.
 */
export async function openWorkspace(
  db: Database,
  principal: Principal,
  workspaceId: string,
  need: Need,
): Promise<StateResult<StateWorkspace>> {
  const ws = await findStateWorkspace(db, principal.orgId, workspaceId);
  if (!ws) {
    return refuse("not_found", notFoundSentence("workspace", workspaceId));
  }
  if (principal.kind === "run") {
    return openForRun(db, principal, ws, need);
  }
  if (!isPerson(principal)) {
    return refuse("forbidden", "agent tokens have no access to state");
  }
  return openForPerson(db, principal, ws, need);
}

/** The person half of {@link openWorkspace}: `may` decides, then the execution mode. */
async function openForPerson(
  db: Database,
  principal: PersonPrincipal,
  ws: StateWorkspace,
  need: Need,
): Promise<StateResult<StateWorkspace>> {
  const resource = { type: "workspace" as const, orgId: ws.orgId, id: ws.id };
  const action = PERSON_NEEDS[need];
  switch (await may(db, principal, action, resource)) {
    case "not_found":
      return refuse("not_found", notFoundSentence("workspace", ws.id));
    case "forbidden":
      return refuse("forbidden", workspaceRefusal(action, ws.id));
    case "allow":
      break;
  }
  if ((need === "lock" || need === "write") && ws.executionMode !== "local") {
    return refuse(
      "forbidden",
      `workspace ${ws.id} runs on agents (execution mode "agent"): its state is written by its runs; set the execution mode to "local" to use it from your machine`,
    );
  }
  return ok(ws);
}

/**
 * Whether a person may force the state lock of the workspace (release another's lock, or
 * Terraform's empty-body force-unlock): the workspace's admins may.
 */
export async function mayForceState(
  db: Database,
  principal: Principal,
  ws: { id: string; orgId: string },
): Promise<boolean> {
  const resource = { type: "workspace" as const, orgId: ws.orgId, id: ws.id };
  return (await may(db, principal, "state.force_unlock", resource)) === "allow";
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
    return refuse("revoked", `run ${principal.runId} has ended; its token is no longer valid`);
  }
  if (ws.id !== principal.workspaceId) {
    const consumer = { workspaceId: principal.workspaceId, isFork: run.isFork };
    return need === "outputs" && sharesOutputsWith(ws, consumer)
      ? ok(ws)
      : refuse(
          "not_found",
          `workspace ${ws.id} not found, or it does not share its state with workspace ${principal.workspaceId}`,
        );
  }
  if (["read", "outputs", "download", "lock", "unlock"].includes(need)) {
    return ok(ws);
  }
  if (need !== "write") {
    return refuse("forbidden", "this needs the workspace's admin access");
  }
  const allowed = mayWriteState({ workspaceId: principal.workspaceId, phase: job.phase, ...run });
  return allowed.ok ? ok(ws) : refuse("forbidden", allowed.reason);
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
export async function loadLock(deps: Deps, ws: StateWorkspace): Promise<HeldLock | null> {
  const { db } = deps;
  const row = await findLock(db, ws.id);
  if (!row) {
    return null;
  }
  const reason = await deadHolder(db, ws.orgId, row);
  if (reason !== null) {
    const now = deps.now();
    await db.batch([
      deleteLockQuery(db, ws.id, row.lockId),
      auditWhereQuery(
        db,
        {
          orgId: ws.orgId,
          actor: SYSTEM_ACTOR,
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
