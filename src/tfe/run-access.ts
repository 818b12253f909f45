/** A run addressed in the TFE API, as the caller may see it. */
import type { Context } from "hono";
import { authorizeWorkspace } from "../authz/http.ts";
import type { WorkspaceAction } from "../authz/model.ts";
import type { AppEnv } from "../env.ts";
import { ApiError } from "../errors.ts";
import { personOf } from "../middleware/auth.ts";
import { plannedEngineVersion } from "../runs/job-records.ts";
import { getRun, type RunRow } from "../runs/queries.ts";
import type { WorkspaceRow } from "../workspaces/queries.ts";
import { resolveWorkspace } from "../workspaces/service.ts";
import { runResource } from "./run-document.ts";

/**
 * The run and its workspace once the caller may do `action` there; a run of another
 * organization, or of a workspace the caller cannot see, is 404 like a missing one.
 */
export async function loadTfeRun(
  c: Context<AppEnv>,
  runId: string,
  action: WorkspaceAction,
  /** How a refusal names what was asked for: the run, or its plan or apply. */
  what = `run ${runId}`,
): Promise<{ run: RunRow; workspace: WorkspaceRow }> {
  const principal = personOf(c);
  const run = await getRun(c.var.db, principal.orgId, runId);
  const workspace = run && (await resolveWorkspace(c.var.db, principal.orgId, run.workspaceId));
  if (!run || !workspace) {
    throw new ApiError("NOT_FOUND", `${what} not found`);
  }
  await authorizeWorkspace(c.var.db, principal, action, workspace).catch((error: unknown) => {
    throw error instanceof ApiError && error.code === "NOT_FOUND"
      ? new ApiError("NOT_FOUND", `${what} not found`)
      : error;
  });
  return { run, workspace };
}

/**
 * The run as a resource for the caller (who may read its workspace), with the engine version its
 * plan ran or will run.
 */
export async function runResourceFor(c: Context<AppEnv>, run: RunRow, workspace: WorkspaceRow) {
  const principal = personOf(c);
  const grants = await authorizeWorkspace(c.var.db, principal, "workspace.read", workspace);
  const planned = await plannedEngineVersion(c.var.db, run.id);
  const engineVersion = planned ?? workspace.engineVersion;
  return runResource(run, { grants, now: c.var.deps.now(), engineVersion });
}
