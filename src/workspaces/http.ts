/** The HTTP edge's way to address a workspace: by id or name, in the caller's org, else 404. */
import type { Context } from "hono";
import type { AppEnv } from "../env.ts";
import { reasonError } from "../errors.ts";
import { orgPrincipal } from "../middleware/auth.ts";
import { resolveWorkspace, workspaceNotFound } from "./service.ts";

/**
 * The caller's org principal and the workspace named by `ref` (`ws_…` or a name). Another org's
 * workspace answers 404 like a missing one.
 */
export async function workspaceOf(c: Context<AppEnv>, ref: string) {
  const principal = orgPrincipal(c);
  const workspace = await resolveWorkspace(c.var.db, principal.orgId, ref);
  if (!workspace) {
    throw reasonError(workspaceNotFound(ref).reason);
  }
  return { principal, workspace };
}
