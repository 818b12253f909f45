/**
 * `terraform_remote_state` for jobs of other workspaces: a producer's current version served as
 * an outputs-only state document, never its resources.
 */

import { ok } from "@outpost/common";
import type { Deps } from "../deps.ts";
import { toHex } from "../lib/crypto.ts";
import { refuse } from "../lib/reason.ts";
import type { StateResult } from "./access.ts";
import { stateBlobKey } from "./blobs.ts";
import type { StateVersionRow } from "./queries.ts";
import { outputsOnlyState } from "./run-access.ts";
import type { StateBody } from "./service.ts";

/**
 * The producer's `version` as an outputs-only state document (see {@link outputsOnlyState}).
 * Refused (409) when the outputs were not extracted: an encrypted state, or outputs too large.
 */
export async function sharedOutputs(
  deps: Deps,
  version: StateVersionRow,
): Promise<StateResult<StateBody>> {
  if (version.outputsStatus === "encrypted" || version.outputsStatus === "too_large") {
    return refuse(
      "conflict",
      version.outputsStatus === "encrypted"
        ? `the state of workspace ${version.workspaceId} is encrypted client-side; its outputs cannot be shared`
        : `the outputs of workspace ${version.workspaceId} are too large to be shared`,
    );
  }
  let outputsJson = "{}";
  if (version.outputsStatus === "stored") {
    const key = stateBlobKey({ ...version, stateVersionId: version.id }, "outputs");
    const object = await deps.env.BLOBS.get(key);
    if (!object) {
      throw new Error(`outputs object of ${version.id} is missing from R2`);
    }
    outputsJson = await object.text();
  }
  const bytes = new TextEncoder().encode(
    outputsOnlyState({
      serial: version.serial,
      lineage: version.lineage,
      terraformVersion: version.terraformVersion,
      outputsJson,
    }),
  );
  return ok({
    body: new Response(bytes).body ?? new ReadableStream(),
    sizeBytes: bytes.byteLength,
    md5Hex: toHex(await crypto.subtle.digest("MD5", bytes)),
    version,
  });
}
