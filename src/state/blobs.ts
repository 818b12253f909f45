/**
 * State bodies in R2: the one place their keys are built, and uploads that stream. A body of
 * known length goes to R2 as it arrives; one of unknown length goes up as a multipart upload one
 * part at a time, so memory holds at most one part either way.
 */

export type StateBlobKind = "state" | "outputs";

/** Every R2 key of a workspace's state starts with this prefix. */
function stateBlobPrefix(orgId: string, workspaceId: string): string {
  return `orgs/${orgId}/workspaces/${workspaceId}/state-versions/`;
}

/**
 * The R2 key of a state version's body (`state`) or of the outputs extracted from it
 * (`outputs`). The only function that builds state keys; nothing else concatenates them.
 */
export function stateBlobKey(
  ref: { orgId: string; workspaceId: string; stateVersionId: string },
  kind: StateBlobKind,
): string {
  const suffix = kind === "state" ? "tfstate" : "outputs.json";
  return `${stateBlobPrefix(ref.orgId, ref.workspaceId)}${ref.stateVersionId}.${suffix}`;
}

/** Multipart part size: R2 wants equal parts of at least 5 MiB except the last. */
const PART_BYTES = 8 * 1024 * 1024;

/**
 * Streams `body` into R2 under `key`. With `length` the stream is handed to R2 as it flows
 * (`FixedLengthStream`); without, it is uploaded in 8 MiB parts. Rejects, leaving no object,
 * when the stream errors or its length differs from `length`.
 */
export async function putStream(
  bucket: R2Bucket,
  key: string,
  body: ReadableStream<Uint8Array>,
  length: number | null,
  contentType: string,
): Promise<void> {
  const options = { httpMetadata: { contentType } };
  if (length !== null) {
    await bucket.put(key, body.pipeThrough(new FixedLengthStream(length)), options);
    return;
  }
  const reader = body.getReader();
  let upload: R2MultipartUpload | null = null;
  const parts: R2UploadedPart[] = [];
  let buffer = new Uint8Array(PART_BYTES);
  let filled = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) {
        break;
      }
      let at = 0;
      while (at < value.length) {
        const take = Math.min(PART_BYTES - filled, value.length - at);
        buffer.set(value.subarray(at, at + take), filled);
        filled += take;
        at += take;
        if (filled === PART_BYTES) {
          upload ??= await bucket.createMultipartUpload(key, options);
          parts.push(await upload.uploadPart(parts.length + 1, buffer));
          buffer = new Uint8Array(PART_BYTES);
          filled = 0;
        }
      }
    }
    if (upload === null) {
      await bucket.put(key, buffer.subarray(0, filled), options);
      return;
    }
    if (filled > 0) {
      parts.push(await upload.uploadPart(parts.length + 1, buffer.subarray(0, filled)));
    }
    await upload.complete(parts);
  } catch (err) {
    await upload?.abort().catch(() => undefined);
    throw err;
  }
}

/**
 * Deletes every state object of a workspace (bodies and outputs of all versions). For the
 * workspace deletion path: D1 rows go by cascade, R2 objects need this.
 */
export async function deleteWorkspaceStateBlobs(
  bucket: R2Bucket,
  orgId: string,
  workspaceId: string,
): Promise<number> {
  const prefix = stateBlobPrefix(orgId, workspaceId);
  let deleted = 0;
  let cursor: string | undefined;
  do {
    const page = await bucket.list({ prefix, cursor, limit: 1000 });
    const keys = page.objects.map((o) => o.key);
    if (keys.length > 0) {
      await bucket.delete(keys);
      deleted += keys.length;
    }
    cursor = page.truncated ? page.cursor : undefined;
  } while (cursor !== undefined);
  return deleted;
}
