/**
 * The agent build a coordinator ships: how the build describes it to the Worker (the manifest,
 * a static asset) and how `GET /agent/v1/release` describes it to agents and install scripts.
 * Imports `zod` only.
 */
import { z } from "zod";

const Sha256 = z.string().regex(/^[0-9a-f]{64}$/, "must be a lowercase hex SHA-256");

/**
 * Agent versions as the build stamps them: semver without build metadata
 * (`0.1.0`, `0.2.0-rc.1`), safe in file names and URL paths.
 */
export const AgentVersion = z
  .string()
  .regex(
    /^\d+\.\d+\.\d+(?:-[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?$/,
    "must be a semantic version like 1.2.3",
  );

/** Where the static assets keep agent builds; every file of one build sits under `<version>/`. */
export const RELEASES_PATH = "/agent/v1/releases";
/** The manifest of the build this coordinator ships, next to the builds. */
export const RELEASE_MANIFEST_PATH = `${RELEASES_PATH}/manifest.json`;
/** The manifest's signature ({@link ReleaseSignature}), made by whoever built the release. */
export const RELEASE_SIGNATURE_PATH = `${RELEASES_PATH}/manifest.sig`;
/**
 * What a release signature signs: this line, then the manifest file's exact bytes. The line
 * keeps a signature made for a manifest from being valid for anything else the key might sign.
 */
export const RELEASE_SIGNATURE_CONTEXT = "outpost-agent release manifest v1\n";

/**
 * A release signing public key as operators write it (`--release-key`, `OUTPOST_RELEASE_KEY`):
 * `ed25519:` and the 32-byte Ed25519 public key in standard base64.
 */
export const ReleaseKey = z
  .string()
  .regex(
    /^ed25519:[A-Za-z0-9+/]{42}[AEIMQUYcgkosw048]=$/,
    "must be ed25519: and a base64 Ed25519 public key (44 characters)",
  );
export type ReleaseKey = z.infer<typeof ReleaseKey>;

/** An Ed25519 signature of a manifest, by the key it names; `signature` is base64 (64 bytes). */
export const ReleaseSignature = z.strictObject({
  algorithm: z.literal("ed25519"),
  key: ReleaseKey,
  signature: z.string().regex(/^[A-Za-z0-9+/]{85}[AQgw]==$/, "must be a base64 Ed25519 signature"),
});
export type ReleaseSignature = z.infer<typeof ReleaseSignature>;

/** One released file: its path under the coordinator's origin and its digest. */
export const ReleaseFile = z.strictObject({
  path: z.string().startsWith(`${RELEASES_PATH}/`),
  sha256: Sha256,
  sizeBytes: z.int().min(0),
});
export type ReleaseFile = z.infer<typeof ReleaseFile>;

/** Written by the agent build (`npm run build:agent`), read by the Worker from its assets. */
export const ReleaseManifest = z.strictObject({
  version: AgentVersion,
  /** The single-file agent (`node outpost-agent.mjs`), what agents update themselves to. */
  agent: ReleaseFile,
  /** The npm package (`npm install --omit=dev <file>`), with both bins; the container uses it. */
  npmPackage: ReleaseFile,
  dockerfile: ReleaseFile,
  systemdUnit: ReleaseFile,
  /**
   * Key rotation: the keys that will sign later releases. An agent verifying this manifest with
   * the key that signed it runs a build that trusts these too (they are compiled into it).
   */
  nextKeys: z.array(ReleaseKey).max(4).optional(),
});
export type ReleaseManifest = z.infer<typeof ReleaseManifest>;

/** A released file as `GET /agent/v1/release` names it: an absolute URL and its digest. */
export const ReleaseDownload = z.object({
  url: z.url(),
  sha256: Sha256,
  sizeBytes: z.int().min(0),
});
export type ReleaseDownload = z.infer<typeof ReleaseDownload>;

/**
 * `GET /agent/v1/release`: the agent build shipped with this coordinator. `url` serves exactly
 * the bytes whose SHA-256 is `sha256`, a single file that runs with `node <file>`. `manifest` is
 * the build's manifest file exactly as signed and `signature` its signature (null: the build
 * was not signed); an agent trusts only what the signed manifest says, never the other fields.
 */
export const AgentRelease = z.object({
  version: AgentVersion,
  sha256: Sha256,
  url: z.url(),
  sizeBytes: z.int().min(0),
  npmPackage: ReleaseDownload,
  dockerfile: ReleaseDownload,
  systemdUnit: ReleaseDownload,
  manifest: z.string(),
  signature: ReleaseSignature.nullable(),
});
export type AgentRelease = z.infer<typeof AgentRelease>;

/**
 * Sent with every `/agent/v1/*` answer: the version of the agent build the coordinator ships,
 * so a long-running agent learns of a coordinator upgrade between jobs without registering again.
 */
export const AGENT_VERSION_HEADER = "Outpost-Agent-Version";
