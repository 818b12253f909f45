/**
 * Plan artefacts: written once per job by its plan job while its lease is live, each with the
 * SHA-256 the agent computed (checked by R2 as the bytes arrive and kept as the object's
 * metadata), so the plan that is confirmed is exactly the plan that is applied.
 */

import { ok } from "@outpost/common";
import { SHA256_HEADER } from "@outpost/protocol";
import type { Principal } from "../authz/principal.ts";
import type { Deps } from "../deps.ts";
import { type Outcome, type Reason, refuse } from "../lib/reason.ts";
import { artifactKey, runLog, SHA256_METADATA } from "./blobs.ts";
import { getRunById } from "./queries.ts";

/** R2 refuses a body whose SHA-256 differs from the one given (error 10037, BadDigest). */
function isDigestMismatch(error: unknown): boolean {
  return error instanceof Error && /\b10037\b|SHA-256 checksum/i.test(error.message);
}

/**
 * Stores artefact `name` of the run token's plan job, once. A retry with the same bytes (same
 * SHA-256) succeeds again without writing. Refused `conflict` for any job but the plan job of a
 * planning run and for other bytes (artefacts are write-once), `invalid` for a body whose
 * SHA-256 is not the one announced.
 */
export async function storeArtifact(
  deps: Deps,
  principal: Extract<Principal, { kind: "run" }>,
  input: { name: string; sha256: string; body: ReadableStream<Uint8Array> },
): Promise<Outcome<{ sizeBytes: number }, "conflict" | "invalid">> {
  const run = await getRunById(deps.db, principal.runId);
  if (!principal.jobId.endsWith(":plan") || run?.status !== "planning") {
    return refuse("conflict", "only the plan job of a planning run uploads plan artefacts");
  }
  const key = artifactKey(principal, input.name);
  let stored: R2Object | null;
  try {
    stored = await deps.env.BLOBS.put(key, input.body, {
      onlyIf: { etagDoesNotMatch: "*" },
      sha256: input.sha256,
      customMetadata: { [SHA256_METADATA]: input.sha256 },
    });
  } catch (error) {
    if (isDigestMismatch(error)) {
      return refuse("invalid", `the body does not match its ${SHA256_HEADER}`);
    }
    throw error;
  }
  if (stored) {
    return ok({ sizeBytes: stored.size });
  }
  const existing = await deps.env.BLOBS.head(key);
  const existingSha = existing?.customMetadata?.[SHA256_METADATA] ?? "";
  return existing && existingSha === input.sha256
    ? ok({ sizeBytes: existing.size })
    : refuse(
        "conflict",
        `artefact ${input.name} of job ${principal.jobId} is already stored with SHA-256 ${existingSha}; artefacts are written once`,
      );
}

/**
 * Appends log bytes of the run token's job at `offset` under its lease. Refused `lease_lost`
 * once the lease is not the job's, `out_of_range` (with the length held, `received`) on a gap
 * or an overlap, so the agent resumes exactly there.
 */
export async function appendJobLog(
  deps: Deps,
  principal: Extract<Principal, { kind: "run" }>,
  target: { leaseId: string; offset: number; data: Uint8Array },
): Promise<Outcome<{ received: number }, "lease_lost"> | { ok: false; reason: OutOfRange }> {
  const { leaseId, offset, data } = target;
  const result = await runLog(deps.env, principal.workspaceId).append(
    principal.jobId,
    leaseId,
    offset,
    data,
  );
  if (result.ok) {
    return ok({ received: result.received });
  }
  if (result.reason === "lease_lost") {
    return refuse("lease_lost", `lease ${leaseId} no longer holds job ${principal.jobId}`);
  }
  return refuse("out_of_range", `expected offset ${result.received}, got ${offset}`, {
    received: result.received,
    details: { received: result.received },
  });
}

/** A refused append: the log holds `received` bytes, where the agent must resume. */
export type OutOfRange = Reason<"out_of_range"> & { readonly received: number };
