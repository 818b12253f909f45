/**
 * Takes a state body in one pass: bytes flow to R2 while they are counted, MD5-hashed and
 * scanned for the few top-level members the backend reads. Nothing holds the whole body.
 */

import { fail, ok } from "@outpost/common";
import type { Outcome, Reason } from "../lib/reason.ts";
import { putStream } from "./blobs.ts";
import { JsonScanner } from "./json-scan.ts";
import { readStateHeader, STATE_FIELDS, STATE_MAX_BYTES, type StateHeader } from "./model.ts";

export type Ingested = { header: StateHeader; md5: Uint8Array; sizeBytes: number };

/**
 * Why a body was refused: over the size limit, or not a state file (a conflict with what the
 * backend stores, as the clients expect: they retry nothing on 409).
 */
type IngestReason = Reason<"too_large" | "conflict">;

/**
 * Streams `body` to R2 under `key` and reads it on the way. On failure no object is left
 * behind. On success the object exists; the caller deletes it if it then refuses the write.
 * Errors other than the body's own (R2, a broken connection) are thrown.
 */
export async function ingestState(
  bucket: R2Bucket,
  key: string,
  body: ReadableStream<Uint8Array>,
  length: number | null,
): Promise<Outcome<Ingested, IngestReason["kind"]>> {
  const scanner = new JsonScanner(STATE_FIELDS);
  const digest = new crypto.DigestStream("MD5");
  const digestWriter = digest.getWriter();
  let sizeBytes = 0;
  // Set when the body itself is refused, to tell that apart from an R2 error.
  const seen: { refusal: IngestReason | null } = { refusal: null };
  const stop = (reason: IngestReason) => {
    seen.refusal = reason;
    return new Error(reason.message);
  };
  const reader = body.getReader();
  // Pull-based: a chunk is read only when R2 asks for one, and a refusal cancels the request
  // body right here, so no read is left running after the response.
  const inspected = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { done, value } = await reader.read();
      if (done) {
        controller.close();
        return;
      }
      sizeBytes += value.byteLength;
      let error: Error | null = null;
      if (sizeBytes > STATE_MAX_BYTES) {
        error = stop({
          kind: "too_large",
          message: `the state is larger than ${STATE_MAX_BYTES} bytes`,
        });
      } else if (!scanner.push(value)) {
        const outcome = scanner.finish();
        const why = outcome.ok ? "invalid JSON" : outcome.reason;
        error = stop({ kind: "conflict", message: `the body is not a state file: ${why}` });
      }
      if (error !== null) {
        await reader.cancel(error.message).catch(() => undefined);
        controller.error(error);
        return;
      }
      await digestWriter.write(value);
      controller.enqueue(value);
    },
    async cancel(reason) {
      await reader.cancel(reason);
    },
  });
  try {
    await putStream(bucket, key, inspected, length, "application/json");
  } catch (err) {
    if (seen.refusal !== null) {
      return fail(seen.refusal);
    }
    throw err;
  }
  await digestWriter.close();
  const md5 = new Uint8Array(await digest.digest);
  const scanned = scanner.finish();
  const header = scanned.ok
    ? readStateHeader(scanned.fields)
    : { ok: false as const, reason: `the body is not a state file: ${scanned.reason}` };
  if (!header.ok) {
    await bucket.delete(key);
    return fail({ kind: "conflict", message: header.reason } satisfies IngestReason);
  }
  return ok({ header: header.value, md5, sizeBytes });
}
