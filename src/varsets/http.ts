/** The HTTP edge's way to address a variable set and what it is applied to. */
import type { Context } from "hono";
import { actorOf } from "../authz/principal.ts";
import type { AppEnv } from "../env.ts";
import { ApiError } from "../errors.ts";
import { personOf } from "../middleware/auth.ts";
import { resolveProject } from "../projects/service.ts";
import { resolveWorkspace } from "../workspaces/service.ts";
import type { LinkTarget } from "./links.ts";
import { resolveVariableSet } from "./service.ts";

/** The caller and the set named by `ref` (`varset_…` or a name) in its org, else 404. */
export async function setOf(c: Context<AppEnv>, ref: string) {
  const principal = personOf(c);
  const set = await resolveVariableSet(c.var.db, principal.orgId, ref);
  if (!set) {
    throw new ApiError("NOT_FOUND", `variable set ${ref} not found`);
  }
  const ctx = { orgId: principal.orgId, actor: actorOf(principal), now: c.var.deps.now() };
  return { principal, set, ctx };
}

/** The project or workspace of the caller's org a path names (by id or name), else 404. */
export async function linkTargetOf(
  c: Context<AppEnv>,
  type: LinkTarget["type"],
  ref: string,
): Promise<LinkTarget> {
  const orgId = personOf(c).orgId;
  const found =
    type === "project"
      ? await resolveProject(c.var.db, orgId, ref)
      : await resolveWorkspace(c.var.db, orgId, ref);
  if (!found) {
    throw new ApiError("NOT_FOUND", `${type} ${ref} not found`);
  }
  return { type, id: found.id, name: found.name };
}
