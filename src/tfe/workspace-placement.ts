/**
 * What a TFE workspace document says beyond the settings: its tags (`tag-names` or
 * `relationships.tags`) and its project (`relationships.project`), resolved in the caller's
 * organization before anything is written, and the tags a workspace answer carries.
 */
import type { Context } from "hono";
import { authorizeProject } from "../authz/http.ts";
import type { Database } from "../db/client.ts";
import type { AppEnv } from "../env.ts";
import { reasonError, valueOrThrow } from "../errors.ts";
import { invalidInput, type Outcome } from "../lib/reason.ts";
import { personOf } from "../middleware/auth.ts";
import { namedProject } from "../projects/http.ts";
import { MAX_TAGS_PER_WORKSPACE, TagName } from "../workspace-tags/model.ts";
import { namesOfTagIds, workspaceTagNames } from "../workspace-tags/service.ts";
import type { Workspace } from "../workspaces/service.ts";
import type { TagIdentifier, WorkspaceDocument } from "./workspace-document.ts";

/**
 * The tag names a list of identifiers stands for: names as given (checked like every tag), ids
 * resolved in the organization (an unknown id is refused).
 */
export async function namesOfIdentifiers(
  db: Database,
  orgId: string,
  identifiers: readonly TagIdentifier[],
): Promise<Outcome<string[], "invalid">> {
  const names: string[] = [];
  const ids: string[] = [];
  for (const [index, identifier] of identifiers.entries()) {
    const name = identifier.attributes?.name;
    if (identifier.id) {
      ids.push(identifier.id);
    } else if (name !== undefined) {
      const parsed = TagName.safeParse(name);
      if (!parsed.success) {
        const message = parsed.error.issues[0]?.message ?? "invalid tag";
        return invalidInput(`json.data.${index}.attributes.name`, `tag ${name}: ${message}`);
      }
      names.push(parsed.data);
    } else {
      return invalidInput(`json.data.${index}`, "a tag needs an id or attributes.name");
    }
  }
  const named = await namesOfTagIds(db, orgId, ids);
  if (!named.ok) {
    return named;
  }
  return { ok: true, value: [...new Set([...names, ...named.value])].sort() };
}

const PROJECT_FIELD = "json.data.relationships.project.data.id";

/** The tags the document gives (the union of both ways), or undefined when it gives none. */
export async function documentTagNames(
  c: Context<AppEnv>,
  document: WorkspaceDocument,
): Promise<string[] | undefined> {
  const { attributes, relationships } = document.data;
  if (attributes["tag-names"] === undefined && relationships?.tags === undefined) {
    return undefined;
  }
  const related = relationships?.tags
    ? valueOrThrow(await namesOfIdentifiers(c.var.db, personOf(c).orgId, relationships.tags.data))
    : [];
  const names = [...new Set([...(attributes["tag-names"] ?? []), ...related])].sort();
  if (names.length > MAX_TAGS_PER_WORKSPACE) {
    throw reasonError(
      invalidInput(
        "json.data.attributes.tag-names",
        `a workspace carries at most ${MAX_TAGS_PER_WORKSPACE} tags; this gives ${names.length}`,
      ).reason,
    );
  }
  return names;
}

/**
 * The project the document puts a new workspace in (the caller must be allowed to add
 * workspaces there), or undefined for the organization's default project.
 */
export async function projectForCreate(c: Context<AppEnv>, document: WorkspaceDocument) {
  const id = document.data.relationships?.project?.data.id;
  return id === undefined ? undefined : namedProject(c, id, PROJECT_FIELD, "project.add_workspace");
}

/**
 * The project the document moves the workspace to, or undefined when it stays; moving needs
 * the right to add workspaces to the new project (updating the workspace is checked already).
 */
export async function projectForUpdate(
  c: Context<AppEnv>,
  document: WorkspaceDocument,
  current: { projectId: string | null },
) {
  const id = document.data.relationships?.project?.data.id;
  if (id === undefined) {
    return undefined;
  }
  const project = await namedProject(c, id, PROJECT_FIELD);
  if (project.id !== current.projectId) {
    await authorizeProject(c.var.db, personOf(c), "project.add_workspace", project);
  }
  return project;
}

/** The workspace's tags, for its document. */
export function tagNamesOf(c: Context<AppEnv>, workspace: Workspace): Promise<string[]> {
  return workspaceTagNames(c.var.db, personOf(c).orgId, workspace.id);
}
