/** The HTTP edge's way to address a workspace: by id or name, in the caller's org, else 404. */
import type { Context } from "hono";
import { authorizeWorkspace } from "../authz/http.ts";
import type { WorkspaceAction } from "../authz/model.ts";
import type { AppEnv } from "../env.ts";
import { reasonError } from "../errors.ts";
import { personOf } from "../middleware/auth.ts";
import { resolveWorkspace, workspaceNotFound } from "./service.ts";

/**
 * The caller and the workspace named by `ref` (`ws_…` or a name), once `may` allowed `action` on
 * it. Another org's workspace, and one the caller cannot see, answer 404 like a missing one; an
 * action the caller may not do there answers 403.
 */
export async function workspaceOf(c: Context<AppEnv>, ref: string, action: WorkspaceAction) {
  const principal = personOf(c);
  const workspace = await resolveWorkspace(c.var.db, principal.orgId, ref);
  if (!workspace) {
    throw reasonError(workspaceNotFound(ref).reason);
  }
  const grants = await authorizeWorkspace(c.var.db, principal, action, workspace);
  return { principal, workspace, grants };
}
