/** Finding a workspace's state versions for the `state` commands. */
import { must, type UserApi } from "../api.ts";
import type { components } from "../api-types.ts";
import { UsageError } from "../errors.ts";

type StateVersion = components["schemas"]["StateVersion"];

/** The workspace as the state routes take it: its id or its name (the one resolver decides). */
export function workspaceId(_api: UserApi, ref: string): Promise<string> {
  return Promise.resolve(ref);
}

export async function listAll(api: UserApi, wsId: string): Promise<StateVersion[]> {
  const all: StateVersion[] = [];
  let cursor: string | null = null;
  do {
    const query: { limit: number; cursor?: string } = { limit: 100 };
    if (cursor !== null) {
      query.cursor = cursor;
    }
    const page = await must(
      api.client.GET("/api/v1/workspaces/{workspaceId}/state-versions", {
        params: { path: { workspaceId: wsId }, query },
      }),
    );
    all.push(...page.stateVersions);
    cursor = page.nextCursor;
  } while (cursor !== null);
  return all;
}

/** A version by id (`sv_…`) or serial, else the current one. */
export async function pickVersion(api: UserApi, wsId: string, ref: string | undefined) {
  const versions = await listAll(api, wsId);
  const found =
    ref === undefined
      ? versions.find((v) => v.isCurrent)
      : versions.find((v) => v.id === ref || (/^\d+$/.test(ref) && v.serial === Number(ref)));
  if (!found) {
    throw new UsageError(
      ref === undefined
        ? "the workspace has no state yet"
        : `no state version ${ref} in this workspace (see outpost state versions)`,
    );
  }
  return found;
}
