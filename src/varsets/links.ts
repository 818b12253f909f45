/**
 * Where a variable set applies: to projects (every workspace in them, now and later) and to
 * workspaces by name. Applying twice changes nothing; a global set already reaches every
 * workspace, so it takes no links. Each change is audited.
 */
import { ok } from "@outpost/common";
import { and, eq } from "drizzle-orm";
import { auditQuery } from "../audit/service.ts";
import type { Database } from "../db/client.ts";
import { variableSetProjects, variableSetWorkspaces } from "../db/schema.ts";
import { type Outcome, refuse } from "../lib/reason.ts";
import type { VariableSet, VariableSetRow } from "./model.ts";
import {
  linkProjectQuery,
  linkWorkspaceQuery,
  unlinkProjectQuery,
  unlinkWorkspaceQuery,
} from "./queries.ts";
import { type SetCtx, showVariableSet } from "./service.ts";

/** What a set is applied to: a project or a workspace of the set's organization. */
export type LinkTarget = { type: "project" | "workspace"; id: string; name: string };

function globalRefusal(set: VariableSetRow) {
  return refuse(
    "conflict",
    `variable set ${set.name} is global: it applies to every workspace already; make it non-global first`,
  );
}

/** Whether the set is applied to the target now. */
async function isLinked(db: Database, set: VariableSetRow, target: LinkTarget): Promise<boolean> {
  const rows =
    target.type === "project"
      ? await db
          .select({ id: variableSetProjects.varsetId })
          .from(variableSetProjects)
          .where(
            and(
              eq(variableSetProjects.varsetId, set.id),
              eq(variableSetProjects.projectId, target.id),
            ),
          )
      : await db
          .select({ id: variableSetWorkspaces.varsetId })
          .from(variableSetWorkspaces)
          .where(
            and(
              eq(variableSetWorkspaces.varsetId, set.id),
              eq(variableSetWorkspaces.workspaceId, target.id),
            ),
          );
  return rows.length > 0;
}

function linkAudit(
  db: Database,
  ctx: SetCtx,
  set: VariableSetRow,
  target: LinkTarget,
  action: string,
) {
  return auditQuery(db, {
    orgId: ctx.orgId,
    actor: ctx.actor,
    action,
    targetType: "variable_set",
    targetId: set.id,
    data: { [`${target.type}Id`]: target.id, name: target.name },
    now: ctx.now,
  });
}

/** Applies the set to the project or workspace (nothing changes when it already is). */
export async function applySet(
  db: Database,
  ctx: SetCtx,
  set: VariableSetRow,
  target: LinkTarget,
): Promise<Outcome<VariableSet, "conflict">> {
  if (set.global) {
    return globalRefusal(set);
  }
  if (!(await isLinked(db, set, target))) {
    const row = { varsetId: set.id, orgId: ctx.orgId, now: ctx.now };
    await db.batch([
      target.type === "project"
        ? linkProjectQuery(db, { ...row, projectId: target.id })
        : linkWorkspaceQuery(db, { ...row, workspaceId: target.id }),
      linkAudit(db, ctx, set, target, "variable_set.apply"),
    ]);
  }
  return ok(await showVariableSet(db, set));
}

/** Stops applying the set to the project or workspace; not found when it was not applied. */
export async function unapplySet(
  db: Database,
  ctx: SetCtx,
  set: VariableSetRow,
  target: LinkTarget,
): Promise<Outcome<VariableSet, "not_found">> {
  if (!(await isLinked(db, set, target))) {
    return refuse(
      "not_found",
      `variable set ${set.name} is not applied to ${target.type} ${target.name}`,
    );
  }
  await db.batch([
    target.type === "project"
      ? unlinkProjectQuery(db, set.id, target.id)
      : unlinkWorkspaceQuery(db, set.id, target.id),
    linkAudit(db, ctx, set, target, "variable_set.unapply"),
  ]);
  return ok(await showVariableSet(db, set));
}
