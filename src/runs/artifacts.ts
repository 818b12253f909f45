/**
 * Plan artefacts: written once per job by its plan job while its lease is live, each with the
 * SHA-256 the agent computed (checked by R2 as the bytes arrive and kept as the object's
 * metadata), so the plan that is confirmed is exactly the plan that is applied.
 */
import type { Principal } from "../authz/principal.ts";
import { artifactKey, SHA256_METADATA } from "./blobs.ts";
import type { Deps } from "./deps.ts";
import { getRunById } from "./queries.ts";

export type StoreFailure =
  /** Not the plan job, or its run is no longer planning. */
  | { reason: "not_planning"; message: string }
  /** The artefact exists with other bytes: artefacts are write-once. */
  | { reason: "already_stored"; sha256: string }
  /** The body's SHA-256 is not the one announced. */
  | { reason: "digest_mismatch" };

export type StoreResult = { ok: true; sizeBytes: number } | ({ ok: false } & StoreFailure);

/** R2 refuses a body whose SHA-256 differs from the one given (error 10037, BadDigest). */
function isDigestMismatch(error: unknown): boolean {
  return error instanceof Error && /\b10037\b|SHA-256 checksum/i.test(error.message);
}

/**
 * Stores artefact `name` of the run token's plan job, once. A retry with the same bytes (same
 * SHA-256) succeeds again without writing; different bytes are refused.
 */
export async function storeArtifact(
  deps: Deps,
  principal: Extract<Principal, { kind: "run" }>,
  input: { name: string; sha256: string; body: ReadableStream<Uint8Array> },
): Promise<StoreResult> {
  const run = await getRunById(deps.db, principal.runId);
  if (!principal.jobId.endsWith(":plan") || run?.status !== "planning") {
    return {
      ok: false,
      reason: "not_planning",
      message: "only the plan job of a planning run uploads plan artefacts",
    };
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
      return { ok: false, reason: "digest_mismatch" };
    }
    throw error;
  }
  if (stored) {
    return { ok: true, sizeBytes: stored.size };
  }
  const existing = await deps.env.BLOBS.head(key);
  const existingSha = existing?.customMetadata?.[SHA256_METADATA] ?? "";
  return existing && existingSha === input.sha256
    ? { ok: true, sizeBytes: existing.size }
    : { ok: false, reason: "already_stored", sha256: existingSha };
}
