/**
 * Outputs for the API and the dashboard: the current state's, any version's, and the difference
 * between two versions. Sensitive values are hidden from everyone by default; an admin sees them
 * only by asking (`reveal`), and every such reveal is audited with the names it showed.
 */

import { ok } from "@outpost/common";
import { auditQuery } from "../audit/service.ts";
import { actorOf, type Principal } from "../authz/principal.ts";
import { may } from "../authz/service.ts";
import type { Deps } from "../deps.ts";
import { refuse } from "../lib/reason.ts";
import { openWorkspace, type StateResult } from "./access.ts";
import { stateBlobKey } from "./blobs.ts";
import {
  diffOutputs,
  type OutputChange,
  type PresentedOutput,
  presentOutputs,
  type StoredOutput,
  storedOutputs,
} from "./outputs.ts";
import { findCurrentVersion, type StateVersionRow } from "./queries.ts";
import { readableVersion } from "./versions.ts";

export type VersionOutputs = {
  stateVersionId: string | null;
  serial: number | null;
  outputsStatus: StateVersionRow["outputsStatus"] | null;
  /** True when sensitive values are shown (an admin asked for them). */
  isRevealed: boolean;
  outputs: Record<string, PresentedOutput>;
};

/** The outputs stored with a version, with every value (callers present them). */
async function loadStored(
  deps: Deps,
  version: StateVersionRow,
): Promise<Record<string, StoredOutput>> {
  if (version.outputsStatus !== "stored") {
    return {};
  }
  const object = await deps.env.BLOBS.get(
    stateBlobKey({ ...version, stateVersionId: version.id }, "outputs"),
  );
  if (!object) {
    throw new Error(`outputs object of ${version.id} is missing from R2`);
  }
  return storedOutputs(await object.text()) ?? {};
}

/** Refuses a reveal `may` does not allow; records one that is allowed (with the names it shows). */
async function checkReveal(
  deps: Deps,
  principal: Principal,
  target: { workspaceId: string; stateVersionId: string | null; sensitiveNames: string[] },
): Promise<StateResult<null>> {
  const resource = { type: "workspace" as const, orgId: principal.orgId, id: target.workspaceId };
  if ((await may(deps.db, principal, "state.reveal", resource)) !== "allow") {
    return refuse(
      "forbidden",
      "showing sensitive output values needs the admin or owner role, or write access to the workspace",
    );
  }
  if (target.sensitiveNames.length > 0) {
    await auditQuery(deps.db, {
      orgId: principal.orgId,
      actor: actorOf(principal),
      action: "state.outputs.reveal",
      targetType: "workspace",
      targetId: target.workspaceId,
      data: { stateVersionId: target.stateVersionId, outputs: target.sensitiveNames },
      now: deps.now(),
    });
  }
  return ok(null);
}

function sensitiveNames(stored: Record<string, StoredOutput>): string[] {
  return Object.keys(stored).filter((name) => stored[name]?.sensitive === true);
}

async function present(
  deps: Deps,
  principal: Principal,
  version: StateVersionRow,
  reveal: boolean,
): Promise<StateResult<VersionOutputs>> {
  const stored = await loadStored(deps, version);
  if (reveal) {
    const allowed = await checkReveal(deps, principal, {
      workspaceId: version.workspaceId,
      stateVersionId: version.id,
      sensitiveNames: sensitiveNames(stored),
    });
    if (!allowed.ok) {
      return allowed;
    }
  }
  return ok({
    stateVersionId: version.id,
    serial: version.serial,
    outputsStatus: version.outputsStatus,
    isRevealed: reveal,
    outputs: presentOutputs(stored, reveal),
  });
}

/**
 * The current state's outputs. A run token of another workspace reads them only when this
 * workspace shares them with it; encrypted states and outputs too large to extract say so in
 * `outputsStatus`.
 */
export async function readOutputs(
  deps: Deps,
  principal: Principal,
  workspaceId: string,
  reveal = false,
): Promise<StateResult<VersionOutputs>> {
  const ws = await openWorkspace(deps.db, principal, workspaceId, "outputs");
  if (!ws.ok) {
    return ws;
  }
  const current = await findCurrentVersion(deps.db, workspaceId);
  if (!current) {
    const allowed = reveal
      ? await checkReveal(deps, principal, {
          workspaceId,
          stateVersionId: null,
          sensitiveNames: [],
        })
      : ok(null);
    if (!allowed.ok) {
      return allowed;
    }
    const none = { stateVersionId: null, serial: null, outputsStatus: null };
    return ok({ ...none, isRevealed: reveal, outputs: {} });
  }
  return present(deps, principal, current, reveal);
}

/** One version's outputs, with the same rules as {@link readOutputs}. */
export async function readVersionOutputs(
  deps: Deps,
  principal: Principal,
  workspaceId: string,
  stateVersionId: string,
  reveal = false,
): Promise<StateResult<VersionOutputs>> {
  const version = await readableVersion(deps, principal, workspaceId, stateVersionId);
  return version.ok ? present(deps, principal, version.value, reveal) : version;
}

/**
 * What changed in the outputs from version `fromId` to version `toId`. Values are compared in
 * full, so a sensitive output that changed says so without showing either value.
 */
export async function diffVersionOutputs(
  deps: Deps,
  principal: Principal,
  workspaceId: string,
  ids: { fromId: string; toId: string },
): Promise<StateResult<OutputChange[]>> {
  const from = await readableVersion(deps, principal, workspaceId, ids.fromId);
  if (!from.ok) {
    return from;
  }
  const to = await readableVersion(deps, principal, workspaceId, ids.toId);
  if (!to.ok) {
    return to;
  }
  const [before, after] = await Promise.all([
    loadStored(deps, from.value),
    loadStored(deps, to.value),
  ]);
  return ok(diffOutputs(before, after));
}
