/**
 * Configuration versions, pure: where a tarball lives in R2, the upload limits in force, and
 * whether an archive holds a configuration the workspace's engine can run.
 */
import { type Engine, workspaceBlobPrefix } from "../workspaces/model.ts";

export const DEFAULT_MAX_BYTES = 100 * 1024 * 1024;
export const DEFAULT_MAX_UNPACKED_BYTES = 1024 * 1024 * 1024;
export const MAX_ENTRIES = 100_000;
/**
 * Unpacked bytes per compressed byte (past the first 16 MiB unpacked). Source code compresses
 * about 5:1 and tar padding more; gzip's ceiling, which only bombs reach, is about 1000:1.
 */
export const DEFAULT_MAX_RATIO = 100;

/** Media types an upload may declare. */
export const UPLOAD_MEDIA_TYPES = [
  "application/gzip",
  "application/x-gzip",
  "application/octet-stream",
] as const;

export type UploadLimits = {
  maxBytes: number;
  maxUnpackedBytes: number;
  maxEntries: number;
  maxRatio: number;
};

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
  CONFIGURATION_MAX_RATIO?: string;
}): UploadLimits {
  return {
    maxBytes: positiveInt(env.CONFIGURATION_MAX_BYTES, DEFAULT_MAX_BYTES),
    maxUnpackedBytes: positiveInt(env.CONFIGURATION_MAX_UNPACKED_BYTES, DEFAULT_MAX_UNPACKED_BYTES),
    maxEntries: MAX_ENTRIES,
    maxRatio: positiveInt(env.CONFIGURATION_MAX_RATIO, DEFAULT_MAX_RATIO),
  };
}

/** True when the Content-Type header names one of {@link UPLOAD_MEDIA_TYPES}. */
export function isUploadMediaType(header: string | undefined): boolean {
  const type = header?.split(";")[0]?.trim().toLowerCase();
  return UPLOAD_MEDIA_TYPES.some((t) => t === type);
}

/** What a workspace needs to find in its working directory of an uploaded archive. */
export type ConfigurationExpectation = { engine: Engine; workingDirectory: string };

const TERRAFORM_FILE = /\.tf(?:\.json)?$/;
const PULUMI_FILE = /^Pulumi\.ya?ml$/;

/**
 * Watches an archive's files for what the engine reads in the working directory (directly in
 * it, as the engines do): a `.tf` or `.tf.json` file for Terraform and OpenTofu, `Pulumi.yaml`
 * for Pulumi. An upload without it would plan to destroy everything the state holds.
 */
export class ConfigurationFinder {
  private found = false;

  constructor(private readonly expected: ConfigurationExpectation) {}

  /** Notes one file of the archive (`a/b/main.tf`, relative, normalized). */
  readonly notice = (path: string): void => {
    const slash = path.lastIndexOf("/");
    const dir = slash === -1 ? "" : path.slice(0, slash);
    const name = path.slice(slash + 1);
    if (dir === this.expected.workingDirectory && this.matches(name)) {
      this.found = true;
    }
  };

  private matches(name: string): boolean {
    return this.expected.engine === "pulumi" ? PULUMI_FILE.test(name) : TERRAFORM_FILE.test(name);
  }

  /** Why the archive is no configuration for the workspace, naming what is missing; else null. */
  missing(): string | null {
    if (this.found) {
      return null;
    }
    const { engine, workingDirectory } = this.expected;
    const where =
      workingDirectory === ""
        ? "the archive's top directory"
        : `the working directory ${workingDirectory} of the archive`;
    const what = engine === "pulumi" ? "no Pulumi.yaml" : "no .tf or .tf.json file";
    return `${where} holds ${what}, so ${engine} would find nothing to run there (and plan to destroy what the state holds); upload the directory that holds the configuration${workingDirectory === "" ? "" : ", or change the workspace's workingDirectory"}`;
  }
}
