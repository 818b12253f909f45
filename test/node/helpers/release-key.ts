/**
 * The release signing key the tests' agents trust: the one every build signs with
 * (agent/scripts/release-key.ts: `OUTPOST_RELEASE_SIGNING_KEY`, `OUTPOST_RELEASE_SIGNING_KEY_FILE`,
 * else the checkout's local `.wrangler/release-signing-key.pem`, which the global setup's build
 * makes when missing). The served build, and the older and newer builds a test makes, are signed
 * by it; the build's stamp names its public key, so a reused build is never signed by another.
 * Tests that play an attacker make a key of their own.
 */
import type { KeyObject } from "node:crypto";
import { readReleaseSigningKey } from "../../../agent/scripts/release-key.ts";
import { releaseKeyText } from "../../../agent/src/update/release-signature.ts";

/** The private release key (what the builds sign with). */
export function testReleaseSigningKey(): KeyObject {
  return readReleaseSigningKey().key;
}

/** The release public key, as `--release-key` takes it. */
export function testReleaseKey(): string {
  return releaseKeyText(testReleaseSigningKey());
}
