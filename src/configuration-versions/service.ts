/**
 * Configuration versions: a tar.gz uploaded once, streamed to R2 while its sha256, size and tar
 * structure are checked in the same pass. A refused upload leaves nothing in R2 or D1.
 */

import { newId, ok } from "@outpost/common";
import { auditQuery } from "../audit/service.ts";
import type { AuditActor } from "../authz/actor.ts";
import { configurationVersions } from "../db/schema.ts";
import type { Deps } from "../deps.ts";
import { toHex } from "../lib/crypto.ts";
import { type Outcome, refuse } from "../lib/reason.ts";
import { inspectTarGz, type TarRejection } from "../lib/tar.ts";
import {
  type ConfigurationExpectation,
  ConfigurationFinder,
  configurationVersionKey,
  type UploadLimits,
} from "./model.ts";

import type { ConfigurationVersionRow } from "./queries.ts";

export type { ConfigurationVersionRow } from "./queries.ts";

/** The public shape of a configuration version. */
export function presentConfigurationVersion(row: ConfigurationVersionRow) {
  return {
    id: row.id,
    workspaceId: row.workspaceId,
    source: row.source,
    sha256: row.sha256,
    sizeBytes: row.sizeBytes,
    repoUrl: row.repoUrl,
    commitSha: row.commitSha,
    branch: row.branch,
    isSpeculative: row.isSpeculative,
    isFork: row.isFork,
    createdBy: row.createdBy,
    createdAt: new Date(row.createdAt).toISOString(),
  };
}
export type ConfigurationVersion = ReturnType<typeof presentConfigurationVersion>;

/** Why an upload was refused: `too_large`, `invalid` (not a safe tar.gz), `not_found` (the workspace went). */
type UploadResult<T> = Outcome<T, "too_large" | "invalid" | "not_found">;

function uploadRefused(kind: "too_large" | "invalid" | "not_found", why: string) {
  return refuse(kind, `configuration refused: ${why}`);
}

/**
 * The pass-through between the request body and R2: counts the bytes (refusing past the limit),
 * hashes them, and feeds the tar inspection, each at the pace of the slowest.
 */
function uploadTap(limits: UploadLimits, finder: ConfigurationFinder) {
  const inspection = inspectTarGz(limits, finder.notice);
  const inspector = inspection.writable.getWriter();
  const digest = new crypto.DigestStream("SHA-256");
  const hasher = digest.getWriter();
  const sha256 = digest.digest.then(toHex);
  // Failures surface through write/close/verdict; these would otherwise reject unobserved.
  for (const promise of [inspector.closed, hasher.closed, sha256]) {
    promise.catch(() => {});
  }
  // Flags, not error classes: R2 may reject with its own error when the stream fails.
  const state = { sizeBytes: 0, isTooLarge: false };
  const stream = new TransformStream<Uint8Array, Uint8Array>({
    async transform(chunk, controller) {
      state.sizeBytes += chunk.byteLength;
      if (state.sizeBytes > limits.maxBytes) {
        state.isTooLarge = true;
        throw new Error("upload larger than the limit");
      }
      // Each consumer gets its own copy: a native stream may take ownership of what it is given.
      await hasher.write(chunk.slice());
      await inspector.write(chunk.slice());
      controller.enqueue(chunk);
    },
    async flush() {
      await hasher.close();
      await inspector.close();
    },
  });
  return {
    stream,
    state,
    sha256,
    verdict: inspection.result,
    /** Ends the hashing and the inspection (which may be waiting for bytes that never come). */
    async abort(reason: unknown): Promise<void> {
      await Promise.all([
        inspector.abort(reason).catch(() => {}),
        hasher.abort(reason).catch(() => {}),
      ]);
    },
  };
}

/**
 * Copies the body into the tap with an explicit reader, so that every read is awaited here and a
 * failure ends with the body cancelled, before the response goes out. Never rejects.
 */
async function pump(body: ReadableStream<Uint8Array>, into: WritableStream<Uint8Array>) {
  const reader = body.getReader();
  const writer = into.getWriter();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) {
        await writer.close();
        return;
      }
      await writer.write(value);
    }
  } catch (err) {
    await Promise.all([reader.cancel(err).catch(() => {}), writer.abort(err).catch(() => {})]);
  }
}

/**
 * Streams `body` (exactly `contentLength` bytes) to R2 under the version's key while hashing it
 * and inspecting the archive. The D1 row and its audit event are written only once R2 holds the
 * object and the archive passed; on any failure the object is deleted again.
 */
export async function uploadConfigurationVersion(
  deps: Deps,
  input: {
    /** The id to store it under (the TFE API's, given when the version was created empty). */
    id?: string;
    orgId: string;
    workspaceId: string;
    actor: AuditActor;
    /** Only ever planned and never the workspace's default (the TFE API's `speculative`). */
    isSpeculative?: boolean;
    body: ReadableStream<Uint8Array>;
    contentLength: number;
    limits: UploadLimits;
    /** The workspace's engine and working directory, which the archive must serve. */
    expected: ConfigurationExpectation;
  },
): Promise<UploadResult<ConfigurationVersion>> {
  const { db } = deps;
  const blobs = deps.env.BLOBS;
  const id = input.id ?? newId("configurationVersion");
  const key = configurationVersionKey(input.orgId, input.workspaceId, id);
  const finder = new ConfigurationFinder(input.expected);
  const tap = uploadTap(input.limits, finder);
  const piping = pump(input.body, tap.stream.writable);
  try {
    await blobs.put(
      key,
      tap.stream.readable.pipeThrough(new FixedLengthStream(input.contentLength)),
      {
        httpMetadata: { contentType: "application/gzip" },
      },
    );
  } catch (err) {
    await Promise.all([piping, tap.abort(err)]);
    const verdict = await tap.verdict;
    await blobs.delete(key);
    if (tap.state.isTooLarge) {
      return uploadRefused("too_large", `the body is larger than ${input.limits.maxBytes} bytes`);
    }
    if (!verdict.ok) {
      return failure(verdict.rejection);
    }
    throw err;
  }
  await piping;
  const verdict = await tap.verdict;
  if (!verdict.ok) {
    await blobs.delete(key);
    return failure(verdict.rejection);
  }
  const missing = finder.missing();
  if (missing !== null) {
    await blobs.delete(key);
    return uploadRefused("invalid", missing);
  }
  const sizeBytes = tap.state.sizeBytes;
  const now = deps.now();
  const row: ConfigurationVersionRow = {
    id,
    orgId: input.orgId,
    workspaceId: input.workspaceId,
    source: "upload",
    r2Key: key,
    sha256: await tap.sha256,
    sizeBytes,
    repoUrl: null,
    commitSha: null,
    branch: null,
    isSpeculative: input.isSpeculative ?? false,
    isFork: false,
    createdBy: input.actor.id,
    createdAt: now,
  };
  try {
    await db.batch([
      db.insert(configurationVersions).values(row),
      auditQuery(db, {
        orgId: input.orgId,
        actor: input.actor,
        action: "configuration_version.create",
        targetType: "configuration_version",
        targetId: id,
        data: {
          workspaceId: input.workspaceId,
          sha256: row.sha256,
          sizeBytes,
          entries: verdict.value.entries,
        },
        now,
      }),
    ]);
  } catch (err) {
    await blobs.delete(key);
    if (
      err instanceof Error &&
      /FOREIGN KEY constraint failed/i.test(`${err.message} ${err.cause}`)
    ) {
      return uploadRefused("not_found", "the workspace was deleted");
    }
    throw err;
  }
  return ok(presentConfigurationVersion(row));
}

function failure(rejection: TarRejection) {
  return uploadRefused(
    rejection.reason === "too_large" ? "too_large" : "invalid",
    rejection.message,
  );
}

/**
 * A configuration version for a VCS commit: no tarball, the agent clones the repository at the
 * commit inside the private network. A pull request's commit is speculative (only ever planned);
 * a fork's is marked so its runs get no secrets and write no state.
 */
export async function createVcsConfigurationVersion(
  deps: Deps,
  input: {
    orgId: string;
    workspaceId: string;
    repoUrl: string;
    commitSha: string;
    branch: string;
    isSpeculative: boolean;
    isFork: boolean;
    actor: string;
  },
): Promise<ConfigurationVersionRow> {
  const row: ConfigurationVersionRow = {
    id: newId("configurationVersion"),
    orgId: input.orgId,
    workspaceId: input.workspaceId,
    source: "vcs",
    r2Key: null,
    sha256: null,
    sizeBytes: null,
    repoUrl: input.repoUrl,
    commitSha: input.commitSha,
    branch: input.branch,
    isSpeculative: input.isSpeculative,
    isFork: input.isFork,
    createdBy: input.actor,
    createdAt: deps.now(),
  };
  await deps.db.insert(configurationVersions).values(row);
  return row;
}
