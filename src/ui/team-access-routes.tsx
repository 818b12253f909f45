/** Dashboard forms for a workspace's team access: its admins set and remove it. */
import { z } from "@hono/zod-openapi";
import { type Context, Hono } from "hono";
import { ACCESS_LEVELS } from "../authz/model.ts";
import { actorOf } from "../authz/principal.ts";
import { ApiError } from "../errors.ts";
import { deleteTeamAccess, putTeamAccess } from "../teams/access.ts";
import { idOf, readForm, redirectWithNotice } from "./forms.ts";
import type { UiEnv } from "./session.ts";
import { workspaceOf } from "./workspace-routes.tsx";

const ctxOf = (c: Context<UiEnv>) => ({
  orgId: c.var.session.orgId,
  actor: actorOf(c.var.session.principal),
  now: c.var.deps.now(),
});

export const teamAccessPages = new Hono<UiEnv>()
  .post("/:workspaceId/team-access", async (c) => {
    // The form (CSRF, fields) first: a bad body is 400 whatever the ids.
    const form = await readForm(
      c,
      z.strictObject({
        teamId: z.string().regex(/^team_[a-z2-7]{26}$/, "pick a team"),
        access: z.enum(ACCESS_LEVELS),
      }),
    );
    const { row } = await workspaceOf(c, "team_access.manage");
    const result = await putTeamAccess(c.var.db, ctxOf(c), {
      workspace: row,
      teamId: form.teamId,
      access: form.access,
    });
    if (!result.ok) {
      throw new ApiError("NOT_FOUND", "team not found");
    }
    return redirectWithNotice(c, `/ui/workspaces/${row.id}`, "team-access-saved");
  })
  .post("/:workspaceId/team-access/:teamId/delete", async (c) => {
    await readForm(c, z.strictObject({}));
    const { row } = await workspaceOf(c, "team_access.manage");
    const teamId = idOf(c, "teamId", "team");
    const result = await deleteTeamAccess(c.var.db, ctxOf(c), { workspace: row, teamId });
    if (!result.ok) {
      throw new ApiError("NOT_FOUND", "that team has no access here");
    }
    return redirectWithNotice(c, `/ui/workspaces/${row.id}`, "team-access-removed");
  });
