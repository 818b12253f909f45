/**
 * Configuration versions: a tar.gz uploaded once, streamed to R2 while its sha256, size and tar
 * structure are checked in the same pass. A refused upload leaves nothing in R2 or D1.
 */

import { newId } from "@outpost/common";
import { and, desc, eq, lt, or } from "drizzle-orm";
import { auditQuery } from "../audit/service.ts";
import type { AuditActor } from "../authz/actor.ts";
import type { Database } from "../db/client.ts";
import { configurationVersions } from "../db/schema.ts";
import { toHex } from "../lib/crypto.ts";
import { inspectTarGz, type TarRejection } from "../lib/tar.ts";
import { configurationVersionKey, type UploadLimits } from "./model.ts";

export type ConfigurationVersionRow = typeof configurationVersions.$inferSelect;

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

export type UploadFailure =
  | { reason: "too_large"; message: string }
  | { reason: "invalid_archive"; message: string }
  | { reason: "workspace_gone"; message: string };

/**
 * The pass-through between the request body and R2: counts the bytes (refusing past the limit),
 * hashes them, and feeds the tar inspection, each at the pace of the slowest.
 */
function uploadTap(limits: UploadLimits) {
  const inspection = inspectTarGz(limits);
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
  db: Database,
  blobs: R2Bucket,
  input: {
    orgId: string;
    workspaceId: string;
    actor: AuditActor;
    body: ReadableStream<Uint8Array>;
    contentLength: number;
    limits: UploadLimits;
  },
): Promise<{ ok: true; value: ConfigurationVersion } | ({ ok: false } & UploadFailure)> {
  const id = newId("configurationVersion");
  const key = configurationVersionKey(input.orgId, input.workspaceId, id);
  const tap = uploadTap(input.limits);
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
      const message = `the body is larger than ${input.limits.maxBytes} bytes`;
      return { ok: false, reason: "too_large", message };
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
  const sizeBytes = tap.state.sizeBytes;
  const now = Date.now();
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
    isSpeculative: false,
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
      return { ok: false, reason: "workspace_gone", message: "the workspace was deleted" };
    }
    throw err;
  }
  return { ok: true, value: presentConfigurationVersion(row) };
}

function failure(rejection: TarRejection): { ok: false } & UploadFailure {
  return rejection.reason === "too_large"
    ? { ok: false, reason: "too_large", message: rejection.message }
    : { ok: false, reason: "invalid_archive", message: rejection.message };
}

/** A configuration version of the workspace, or undefined. */
export function getConfigurationVersion(
  db: Database,
  workspaceId: string,
  id: string,
): Promise<ConfigurationVersionRow | undefined> {
  return configurationVersionQuery(db, workspaceId, id).get();
}

/** {@link getConfigurationVersion} as a query to put in a batch: zero or one row. */
export function configurationVersionQuery(db: Database, workspaceId: string, id: string) {
  return db
    .select()
    .from(configurationVersions)
    .where(
      and(eq(configurationVersions.workspaceId, workspaceId), eq(configurationVersions.id, id)),
    )
    .limit(1);
}

/**
 * The workspace's newest configuration version (the default of a new run), or undefined when it
 * has none. Ties on the creation time break by id, so the answer is stable.
 */
export function latestConfigurationVersion(
  db: Database,
  workspaceId: string,
): Promise<ConfigurationVersionRow | undefined> {
  return latestConfigurationVersionQuery(db, workspaceId).get();
}

/** {@link latestConfigurationVersion} as a query to put in a batch: zero or one row. */
export function latestConfigurationVersionQuery(db: Database, workspaceId: string) {
  return (
    db
      .select()
      .from(configurationVersions)
      // A pull request's commit is not the workspace's code until it is merged.
      .where(
        and(
          eq(configurationVersions.workspaceId, workspaceId),
          eq(configurationVersions.isSpeculative, false),
        ),
      )
      .orderBy(desc(configurationVersions.createdAt), desc(configurationVersions.id))
      .limit(1)
  );
}

/** One page of the workspace's versions, newest first, `limit + 1` rows to detect a next page. */
export function listConfigurationVersionRows(
  db: Database,
  workspaceId: string,
  page: { limit: number; before?: readonly [number, string] },
): Promise<ConfigurationVersionRow[]> {
  const before = page.before;
  return db
    .select()
    .from(configurationVersions)
    .where(
      and(
        eq(configurationVersions.workspaceId, workspaceId),
        before === undefined
          ? undefined
          : or(
              lt(configurationVersions.createdAt, before[0]),
              and(
                eq(configurationVersions.createdAt, before[0]),
                lt(configurationVersions.id, before[1]),
              ),
            ),
      ),
    )
    .orderBy(desc(configurationVersions.createdAt), desc(configurationVersions.id))
    .limit(page.limit + 1);
}
