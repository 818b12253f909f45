/**
 * Workspace tags: names an organization gives its workspaces to group and find them (the
 * `cloud` block's `workspaces { tags = [...] }`, `terraform workspace list`, the `tfe`
 * provider's `tag_names`). A name is lowercase letters, digits, `:`, `_` and `-`, starting and
 * ending with a letter or digit; names are compared lowercased, as Terraform Cloud does.
 */
import { z } from "@hono/zod-openapi";

/** The most tags one workspace carries. */
export const MAX_TAGS_PER_WORKSPACE = 50;
const TAG_PATTERN = /^[a-z0-9](?:[a-z0-9:_-]{0,253}[a-z0-9])?$/;

/** One tag name as a client sends it: trimmed and lowercased, then checked. */
export const TagName = z
  .string()
  .trim()
  .toLowerCase()
  .regex(
    TAG_PATTERN,
    "a tag is 1 to 255 letters, digits, ':', '_' and '-', starting and ending with a letter or digit",
  )
  .openapi({ example: "app" });

/** A set of tag names: duplicates collapse, at most {@link MAX_TAGS_PER_WORKSPACE}. */
export const TagNames = z
  .array(TagName)
  .max(MAX_TAGS_PER_WORKSPACE, `a workspace carries at most ${MAX_TAGS_PER_WORKSPACE} tags`)
  .transform((names) => [...new Set(names)].sort());

/** The names of a comma-separated search (`search[tags]=a,b`), each checked like a tag. */
export function searchedTags(list: string): { ok: true; names: string[] } | { ok: false } {
  const parsed = TagNames.safeParse(list.split(",").filter((part) => part.trim() !== ""));
  return parsed.success ? { ok: true, names: parsed.data } : { ok: false };
}
