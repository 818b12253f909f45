/**
 * Reading a release mirror: every request the installer and the resolver make, with one
 * failure convention. Network errors (but an untrusted certificate), 429 and 5xx throw
 * {@link TransientError}, which callers retry; anything else, and a body over its size cap,
 * throws {@link EngineInstallError}, which fails the job with its message.
 */
import { createHash } from "node:crypto";
import { createWriteStream } from "node:fs";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { ReadableStream as WebReadableStream } from "node:stream/web";
import { TransientError } from "../errors.ts";
import { describeNetworkError, isTlsTrustError } from "../net/errors.ts";
import { type HttpResponse, httpFetch } from "../net/fetch.ts";
import { EngineInstallError } from "./release.ts";

/** Indexes and checksums files list every release ever made; far larger is not one. */
export const MAX_LIST_BYTES = 32 * 1024 * 1024;
/** Engine archives are tens of MB (Pulumi's ~150 MB); anything far larger is not a release. */
export const MAX_ARCHIVE_BYTES = 512 * 1024 * 1024;
const TIMEOUT_MS = 10 * 60_000;
/** Attempts at a request to the mirror before the job fails (transient failures only). */
export const MIRROR_ATTEMPTS = 5;

/**
 * How a fetched thing is named in messages (`the release index <url>` or the URL itself), and
 * the size cap of a list ({@link MAX_LIST_BYTES} unless smaller).
 */
type Named = { url: string; label?: string; maxBytes?: number; timeoutMs?: number };

async function request({ url, label = url, timeoutMs = TIMEOUT_MS }: Named): Promise<HttpResponse> {
  let res: HttpResponse;
  try {
    res = await httpFetch(url, { signal: AbortSignal.timeout(timeoutMs), redirect: "follow" });
  } catch (cause) {
    const message = `cannot download ${url}: ${describeNetworkError(cause)}`;
    // An untrusted certificate stays untrusted however often it is asked.
    throw isTlsTrustError(cause)
      ? new EngineInstallError(message)
      : new TransientError(message, { cause });
  }
  if (res.status === 429 || res.status >= 500) {
    await res.body?.cancel();
    throw new TransientError(`${label} answered ${res.status}`, {
      retryAfter: res.headers.get("retry-after"),
    });
  }
  if (!res.ok || res.body === null) {
    await res.body?.cancel();
    throw new EngineInstallError(`${label} answered ${res.status}`);
  }
  return res;
}

/**
 * The body of a list (an index, a checksums file, a signature), refused past its cap
 * ({@link MAX_LIST_BYTES} by default).
 */
export async function fetchList(named: Named): Promise<Buffer> {
  const res = await request(named);
  const maxBytes = named.maxBytes ?? MAX_LIST_BYTES;
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of Readable.fromWeb(res.body as WebReadableStream<Uint8Array>)) {
    size += (chunk as Buffer).length;
    if (size > maxBytes) {
      // Leaving the loop cancels the rest of the body.
      throw new EngineInstallError(`${named.label ?? named.url} is larger than ${maxBytes} bytes`);
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

/** Streams an archive to `file`, refused past {@link MAX_ARCHIVE_BYTES}; answers its hex SHA-256. */
export async function downloadTo(url: string, file: string): Promise<string> {
  const res = await request({ url });
  const hash = createHash("sha256");
  let size = 0;
  const body = Readable.fromWeb(res.body as WebReadableStream<Uint8Array>);
  body.on("data", (chunk: Buffer) => {
    size += chunk.length;
    if (size > MAX_ARCHIVE_BYTES) {
      body.destroy(new EngineInstallError(`${url} is larger than ${MAX_ARCHIVE_BYTES} bytes`));
      return;
    }
    hash.update(chunk);
  });
  await pipeline(body, createWriteStream(file));
  return hash.digest("hex");
}
