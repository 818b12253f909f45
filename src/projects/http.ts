/** The HTTP edge's way to address a project: by id or name, in the caller's org, else 404. */
import type { Context } from "hono";
import { authorizeProject } from "../authz/http.ts";
import { decideProject, type ProjectAction } from "../authz/model.ts";
import { grantsOnProject } from "../authz/service.ts";
import type { AppEnv } from "../env.ts";
import { ApiError } from "../errors.ts";
import { personOf } from "../middleware/auth.ts";
import { resolveProject } from "./service.ts";

/**
 * The caller and the project named by `ref` (`prj_…` or a name), once `may` allowed `action` on
 * it. Another org's project, and one the caller cannot see, answer 404 like a missing one; an
 * action the caller may not do there answers 403.
 */
export async function projectOf(c: Context<AppEnv>, ref: string, action: ProjectAction) {
  const principal = personOf(c);
  const project = await resolveProject(c.var.db, principal.orgId, ref);
  // Answered with the caller's own words: a project found by id but not visible must not
  // disclose its name.
  if (
    !project ||
    decideProject(await grantsOnProject(c.var.db, principal, project), "project.read") ===
      "not_found"
  ) {
    throw new ApiError("NOT_FOUND", `project ${ref} not found`);
  }
  const grants = await authorizeProject(c.var.db, principal, action, project);
  return { principal, project, grants };
}

/**
 * The project a request body or query names for a workspace (`json.projectId`,
 * `query.projectId`): a missing one, and one the caller cannot see (so that its existence does
 * not show), is bad input (400); with `action`, one the caller may not do it on is 403.
 */
export async function namedProject(
  c: Context<AppEnv>,
  ref: string,
  where: string,
  action?: ProjectAction,
) {
  const principal = personOf(c);
  const project = await resolveProject(c.var.db, principal.orgId, ref);
  const grants = project ? await grantsOnProject(c.var.db, principal, project) : null;
  const message = `project ${ref} not found in this organization`;
  if (!project || !grants || decideProject(grants, "project.read") === "not_found") {
    throw new ApiError("BAD_REQUEST", message, { issues: [{ path: where, message }] });
  }
  if (action) {
    await authorizeProject(c.var.db, principal, action, project);
  }
  return project;
}
