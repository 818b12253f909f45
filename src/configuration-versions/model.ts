/** Configuration versions, pure: where a tarball lives in R2, and the upload limits in force. */
import { workspaceBlobPrefix } from "../workspaces/model.ts";

export const DEFAULT_MAX_BYTES = 100 * 1024 * 1024;
export const DEFAULT_MAX_UNPACKED_BYTES = 1024 * 1024 * 1024;
export const MAX_ENTRIES = 100_000;

/** Media types an upload may declare. */
export const UPLOAD_MEDIA_TYPES = [
  "application/gzip",
  "application/x-gzip",
  "application/octet-stream",
] as const;

export type UploadLimits = { maxBytes: number; maxUnpackedBytes: number; maxEntries: number };

/** The one R2 key of a configuration version's tarball, under its workspace's prefix. */
export function configurationVersionKey(
  orgId: string,
  workspaceId: string,
  configurationVersionId: string,
): string {
  return `${workspaceBlobPrefix(orgId, workspaceId)}configuration-versions/${configurationVersionId}.tar.gz`;
}

function positiveInt(value: string | undefined, fallback: number): number {
  const n = value === undefined ? Number.NaN : Number(value);
  return Number.isSafeInteger(n) && n > 0 ? n : fallback;
}

/** The limits from the Worker vars, falling back to the defaults when unset or not a number. */
export function uploadLimits(env: {
  CONFIGURATION_MAX_BYTES?: string;
  CONFIGURATION_MAX_UNPACKED_BYTES?: string;
}): UploadLimits {
  return {
    maxBytes: positiveInt(env.CONFIGURATION_MAX_BYTES, DEFAULT_MAX_BYTES),
    maxUnpackedBytes: positiveInt(env.CONFIGURATION_MAX_UNPACKED_BYTES, DEFAULT_MAX_UNPACKED_BYTES),
    maxEntries: MAX_ENTRIES,
  };
}

/** True when the Content-Type header names one of {@link UPLOAD_MEDIA_TYPES}. */
export function isUploadMediaType(header: string | undefined): boolean {
  const type = header?.split(";")[0]?.trim().toLowerCase();
  return UPLOAD_MEDIA_TYPES.some((t) => t === type);
}
