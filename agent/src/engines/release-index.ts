/**
 * The versions a release mirror offers, from its index: `{mirror}/{engine}/index.json` in the
 * releases.hashicorp.com layout (`{ "versions": { "1.9.5": {…} } }`). Without a mirror, the
 * official indexes: releases.hashicorp.com for terraform, get.opentofu.org for tofu (whose
 * `versions` is a list of `{ "id": "1.8.0" }`); both shapes are read.
 */
import { TransientError } from "../errors.ts";
import { describeNetworkError } from "../net/errors.ts";
import { httpFetch } from "../net/fetch.ts";
import { retry } from "../retry.ts";
import { EngineInstallError } from "./install.ts";
import type { Engine } from "./release.ts";

const INDEX_TIMEOUT_MS = 60_000;
const INDEX_ATTEMPTS = 4;
/** Indexes list every release ever made (a few hundred entries); far larger is not an index. */
const MAX_INDEX_BYTES = 32 * 1024 * 1024;

/** Where the engine's release index is. */
export function releaseIndexUrl(engine: Engine, mirror: string | null): string {
  if (mirror !== null) {
    return `${mirror.replace(/\/+$/, "")}/${engine}/index.json`;
  }
  return engine === "terraform"
    ? "https://releases.hashicorp.com/terraform/index.json"
    : "https://get.opentofu.org/tofu/api.json";
}

/** The version strings of an index document in either shape; [] for anything else. */
export function versionsOfIndex(document: unknown): string[] {
  if (typeof document !== "object" || document === null || !("versions" in document)) {
    return [];
  }
  const versions = (document as { versions: unknown }).versions;
  if (Array.isArray(versions)) {
    return versions.flatMap((entry: unknown) => {
      const id =
        typeof entry === "string"
          ? entry
          : typeof entry === "object" && entry !== null
            ? ((entry as { id?: unknown; version?: unknown }).id ??
              (entry as { version?: unknown }).version)
            : undefined;
      return typeof id === "string" ? [id.replace(/^v/, "")] : [];
    });
  }
  return typeof versions === "object" && versions !== null ? Object.keys(versions) : [];
}

async function fetchIndexOnce(url: string): Promise<string[]> {
  let res: Awaited<ReturnType<typeof httpFetch>>;
  try {
    res = await httpFetch(url, {
      signal: AbortSignal.timeout(INDEX_TIMEOUT_MS),
      redirect: "follow",
    });
  } catch (cause) {
    throw new TransientError(`cannot read ${url}: ${describeNetworkError(cause)}`, { cause });
  }
  if (res.status === 429 || res.status >= 500) {
    await res.body?.cancel();
    throw new TransientError(`${url} answered ${res.status}`, {
      retryAfter: res.headers.get("retry-after"),
    });
  }
  if (!res.ok) {
    await res.body?.cancel();
    throw new EngineInstallError(`the release index ${url} answered ${res.status}`);
  }
  const text = await res.text();
  if (text.length > MAX_INDEX_BYTES) {
    throw new EngineInstallError(
      `the release index ${url} is larger than ${MAX_INDEX_BYTES} bytes`,
    );
  }
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch {
    throw new EngineInstallError(`the release index ${url} is not JSON`);
  }
  const versions = versionsOfIndex(document);
  if (versions.length === 0) {
    throw new EngineInstallError(`the release index ${url} lists no versions`);
  }
  return versions;
}

/** The versions the mirror's index lists, retrying transient failures a few times. */
export async function fetchReleaseVersions(
  engine: Engine,
  mirror: string | null,
  options: { retryBaseMs?: number } = {},
): Promise<string[]> {
  const url = releaseIndexUrl(engine, mirror);
  return retry(() => fetchIndexOnce(url), {
    retries: INDEX_ATTEMPTS - 1,
    ...(options.retryBaseMs === undefined ? {} : { baseMs: options.retryBaseMs }),
  });
}
