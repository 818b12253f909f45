/**
 * Workspace tags: add, remove or replace a workspace's tags, each change with its audit event in
 * the same D1 batch; read them for many workspaces at once. The caller has resolved the
 * workspace in its organization and checked the caller may change it.
 */
import { ok } from "@outpost/common";
import { auditQuery } from "../audit/service.ts";
import type { AuditActor } from "../authz/actor.ts";
import type { PersonPrincipal } from "../authz/principal.ts";
import { readableWorkspaces } from "../authz/queries.ts";
import type { Database } from "../db/client.ts";
import { workspaces } from "../db/schema.ts";
import type { Deps } from "../deps.ts";
import { invalidInput, type Outcome } from "../lib/reason.ts";
import { MAX_TAGS_PER_WORKSPACE } from "./model.ts";
import {
  addTagsQueries,
  organizationTags,
  removeTagsQuery,
  tagNamesByIds,
  tagNamesOf,
  tagRowsOfWorkspace,
} from "./queries.ts";

type Target = { orgId: string; workspaceId: string; actor: AuditActor };

export type TagChange = "add" | "remove" | "replace";

/** The workspace's tags, sorted. */
export async function workspaceTagNames(db: Database, orgId: string, workspaceId: string) {
  return (await tagNamesOf(db, orgId, [workspaceId])).get(workspaceId) ?? [];
}

/** The workspace's tags with their ids, by name. */
export function tagsOfWorkspace(db: Database, orgId: string, workspaceId: string) {
  return tagRowsOfWorkspace(db, orgId, workspaceId);
}

/** The tags on workspaces the viewer may read, with how many of those carry each. */
export function tagsVisibleTo(db: Database, viewer: PersonPrincipal) {
  return organizationTags(db, viewer.orgId, readableWorkspaces(db, viewer, workspaces.id));
}

/** The tags of each workspace, for lists (absent ids have none). */
export function tagsOfWorkspaces(db: Database, orgId: string, ids: readonly string[]) {
  return tagNamesOf(db, orgId, ids);
}

/**
 * Changes the workspace's tags: `add` keeps what it has, `remove` takes names off, `replace`
 * leaves exactly `names`. Refused (`invalid`, nothing written) when the workspace would carry
 * more than {@link MAX_TAGS_PER_WORKSPACE}. Answers the tags it carries afterwards.
 */
export async function changeWorkspaceTags(
  deps: Deps,
  target: Target,
  change: TagChange,
  names: string[],
): Promise<Outcome<string[], "invalid">> {
  const { db } = deps;
  const before = await workspaceTagNames(db, target.orgId, target.workspaceId);
  const after =
    change === "add"
      ? [...new Set([...before, ...names])].sort()
      : change === "remove"
        ? before.filter((name) => !names.includes(name))
        : [...names].sort();
  if (after.length > MAX_TAGS_PER_WORKSPACE) {
    return invalidInput(
      "json.tags",
      `a workspace carries at most ${MAX_TAGS_PER_WORKSPACE} tags; it would carry ${after.length}`,
    );
  }
  if (JSON.stringify(after) === JSON.stringify(before)) {
    return ok(after);
  }
  const { orgId, workspaceId } = target;
  const now = deps.now();
  const added = after.filter((name) => !before.includes(name));
  const removed = before.filter((name) => !after.includes(name));
  await db.batch([
    auditQuery(db, {
      orgId,
      actor: target.actor,
      action: "workspace.tags",
      targetType: "workspace",
      targetId: workspaceId,
      data: { added, removed },
      now,
    }),
    ...(removed.length > 0 ? [removeTagsQuery(db, orgId, workspaceId, removed)] : []),
    ...addTagsQueries(db, orgId, workspaceId, added, now),
  ]);
  return ok(after);
}

/**
 * The names of tags given by id (the TFE API's `relationships.tags` with ids); an id that is
 * not a tag of the organization is refused (`invalid`).
 */
export async function namesOfTagIds(
  db: Database,
  orgId: string,
  ids: string[],
): Promise<Outcome<string[], "invalid">> {
  const rows = await tagNamesByIds(db, orgId, ids);
  const missing = ids.filter((id) => !rows.some((row) => row.id === id));
  if (missing.length > 0) {
    return invalidInput("json.data", `tag ${missing.join(", ")} not found in this organization`);
  }
  return ok(rows.map((row) => row.name));
}
