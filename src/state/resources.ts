/** A state version's resources (addresses, no attribute values): what `outpost state list` shows. */
import { ok } from "@outpost/common";
import { resourcesOf, type StateResource } from "@outpost/protocol";
import type { Principal } from "../authz/principal.ts";
import type { Deps } from "../deps.ts";
import { refuse } from "../lib/reason.ts";
import type { StateResult } from "./access.ts";
import { openVersionBody } from "./service.ts";
import { readableVersion } from "./versions.ts";

/**
 * The resource instances of one version, for whoever may read the workspace's state metadata
 * (addresses carry no attribute values). A version encrypted on the client (OpenTofu state
 * encryption) cannot be read here: `conflict`.
 */
export async function listVersionResources(
  deps: Deps,
  principal: Principal,
  workspaceId: string,
  stateVersionId: string,
): Promise<StateResult<{ stateVersionId: string; serial: number; resources: StateResource[] }>> {
  const version = await readableVersion(deps, principal, workspaceId, stateVersionId);
  if (!version.ok) {
    return version;
  }
  if (version.value.isEncrypted) {
    return refuse(
      "conflict",
      `state version ${stateVersionId} is encrypted by its client (OpenTofu state encryption): its resources cannot be read on the coordinator`,
    );
  }
  const { body } = await openVersionBody(deps, version.value);
  // The body was checked as JSON when it was written; its size is capped by STATE_MAX_BYTES.
  const doc: unknown = JSON.parse(await new Response(body).text());
  return ok({
    stateVersionId: version.value.id,
    serial: version.value.serial,
    resources: resourcesOf(doc),
  });
}
