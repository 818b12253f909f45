/**
 * How the state routes (the `http` backend and the JSON API) address a workspace: by id or by
 * name through the one resolver, in the caller's organization.
 */
import type { Context } from "hono";
import type { AppEnv } from "../env.ts";
import { valueOrThrow } from "../errors.ts";
import { refuse } from "../lib/reason.ts";
import { resolvedOrThrow } from "../names/http.ts";
import { notFoundSentence } from "../names/model.ts";
import type { StateResult } from "./access.ts";

/** The id of the workspace `ref` names in the caller's org; a miss throws the 404. */
export async function stateWorkspaceId(c: Context<AppEnv>, ref: string): Promise<string> {
  const principal = c.get("principal");
  return (await resolvedOrThrow(c.var.db, "workspace", { orgId: principal.orgId }, ref)).id;
}

/**
 * The service's outcome, its "no such workspace" (a workspace the caller may not see) worded
 * with the name the caller used, so a name never answers with the id it hides.
 */
export function asNamed<T>(result: StateResult<T>, ref: string, id: string): StateResult<T> {
  if (!result.ok && ref !== id && result.reason.message === notFoundSentence("workspace", id)) {
    return refuse("not_found", notFoundSentence("workspace", ref));
  }
  return result;
}

/** {@link asNamed}, then the value or the thrown refusal. */
export function namedValueOrThrow<T>(result: StateResult<T>, ref: string, id: string): T {
  return valueOrThrow(asNamed(result, ref, id));
}
