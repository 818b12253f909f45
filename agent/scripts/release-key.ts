/**
 * The release signing key: an Ed25519 private key held by whoever builds agent releases, never by
 * the coordinator (the Worker only serves what the build signed). `npm run build:agent` signs
 * each release's manifest with it and compiles its public key into the agent, which then
 * refuses any later release not signed by it (or by a next key its manifest names).
 *
 * Where the build finds it, first match wins:
 * 1. `OUTPOST_RELEASE_SIGNING_KEY`: the PEM (PKCS #8) text, e.g. from a CI secret;
 * 2. `OUTPOST_RELEASE_SIGNING_KEY_FILE`: a PEM file;
 * 3. `.wrangler/release-signing-key.pem` in the checkout (git-ignored), made on first use: the
 *    key of local development (`npm start`), not one to ship releases with.
 *
 * `OUTPOST_RELEASE_NEXT_KEYS` (comma-separated `ed25519:…` public keys) names the keys that will
 * sign later releases (docs/security.md, "Rotating the release key").
 *
 * `npm run release-key` prints the public key the build would sign with (what installers pass
 * as `--release-key`); `npm run release-key -- --generate FILE` makes a new key in FILE (0600).
 */
import { createPrivateKey, generateKeyPairSync, type KeyObject } from "node:crypto";
import { readFileSync } from "node:fs";
import { link, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { ReleaseKey } from "@outpost/protocol";
import { releaseKeyText } from "../src/update/release-signature.ts";

const ROOT = path.resolve(import.meta.dirname, "../..");

export const RELEASE_KEY_ENV = "OUTPOST_RELEASE_SIGNING_KEY";
export const RELEASE_KEY_FILE_ENV = "OUTPOST_RELEASE_SIGNING_KEY_FILE";
export const NEXT_KEYS_ENV = "OUTPOST_RELEASE_NEXT_KEYS";
/** Local development's key, next to the rest of the local state (git-ignored). */
export const LOCAL_RELEASE_KEY_FILE = path.join(ROOT, ".wrangler", "release-signing-key.pem");

/** A signing key and where it came from (for the build's summary line). */
export type SigningKey = { key: KeyObject; source: string };

/** A new Ed25519 private key as PKCS #8 PEM. */
export function newReleaseKeyPem(): string {
  const { privateKey } = generateKeyPairSync("ed25519");
  return privateKey.export({ format: "pem", type: "pkcs8" }).toString();
}

/**
 * Writes a new key to `file` (0600) unless one is there; returns whether it made one. Builds
 * starting together agree on one key, and none reads a half-written one: the key is written
 * aside and hard-linked into place, which fails when the file exists.
 */
export async function ensureReleaseKeyFile(file: string): Promise<boolean> {
  await mkdir(path.dirname(file), { recursive: true });
  const aside = await mkdtemp(path.join(path.dirname(file), ".release-key-"));
  try {
    const written = path.join(aside, "key.pem");
    await writeFile(written, newReleaseKeyPem(), { mode: 0o600 });
    await link(written, file);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") {
      return false;
    }
    throw error;
  } finally {
    await rm(aside, { recursive: true, force: true });
  }
}

function parsePrivateKey(pem: string, source: string): KeyObject {
  let key: KeyObject;
  try {
    key = createPrivateKey(pem);
  } catch (error) {
    throw new Error(`${source} is not a PEM private key (${(error as Error).message})`);
  }
  if (key.asymmetricKeyType !== "ed25519") {
    throw new Error(`${source} is a ${key.asymmetricKeyType} key; release keys are Ed25519`);
  }
  return key;
}

/** The key the build signs with, from the environment or the local file (made when missing). */
export async function releaseSigningKey(env: NodeJS.ProcessEnv = process.env): Promise<SigningKey> {
  if (
    !env[RELEASE_KEY_ENV] &&
    !env[RELEASE_KEY_FILE_ENV] &&
    (await ensureReleaseKeyFile(LOCAL_RELEASE_KEY_FILE))
  ) {
    process.stderr.write(
      `outpost: made a local release signing key in ${path.relative(ROOT, LOCAL_RELEASE_KEY_FILE)} (for development; see docs/deploy.md for releases you ship)\n`,
    );
  }
  return readReleaseSigningKey(env);
}

/**
 * The key the build signs with, as `releaseSigningKey` finds it, without making the local one:
 * what the tests sign their own manifests with (the global setup's build made it).
 */
export function readReleaseSigningKey(env: NodeJS.ProcessEnv = process.env): SigningKey {
  const text = env[RELEASE_KEY_ENV];
  if (text) {
    return { key: parsePrivateKey(text, RELEASE_KEY_ENV), source: RELEASE_KEY_ENV };
  }
  const file = env[RELEASE_KEY_FILE_ENV] || LOCAL_RELEASE_KEY_FILE;
  let pem: string;
  try {
    pem = readFileSync(file, "utf8");
  } catch (error) {
    throw new Error(
      `cannot read the release signing key ${file} (${(error as NodeJS.ErrnoException).code})`,
    );
  }
  return { key: parsePrivateKey(pem, file), source: path.relative(ROOT, file) || file };
}

/** The next keys `OUTPOST_RELEASE_NEXT_KEYS` names; throws naming a malformed one. */
export function nextReleaseKeys(env: NodeJS.ProcessEnv = process.env): string[] {
  const keys = (env[NEXT_KEYS_ENV] ?? "").split(/[\s,]+/).filter((k) => k !== "");
  for (const key of keys) {
    const parsed = ReleaseKey.safeParse(key);
    if (!parsed.success) {
      throw new Error(`${NEXT_KEYS_ENV}: ${key} ${parsed.error.issues[0]?.message ?? ""}`);
    }
  }
  return [...new Set(keys)];
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({ options: { generate: { type: "string" } } });
  if (values.generate) {
    const file = path.resolve(values.generate);
    if (!(await ensureReleaseKeyFile(file))) {
      throw new Error(`${file} exists; not replacing a key`);
    }
    const key = parsePrivateKey(await readFile(file, "utf8"), file);
    process.stdout.write(`${releaseKeyText(key)}\n`);
    process.stderr.write(
      `outpost: wrote a new release signing key to ${file}; keep it secret and backed up, and build with ${RELEASE_KEY_FILE_ENV}=${file}\n`,
    );
  } else {
    const { key, source } = await releaseSigningKey();
    process.stdout.write(`${releaseKeyText(key)}\n`);
    process.stderr.write(`outpost: the release key of ${source}\n`);
  }
}
