/**
 * The release signing key of this test run: `test/setup/build-agent.ts` makes it and names its
 * file in `OUTPOST_RELEASE_SIGNING_KEY_FILE`, which test workers inherit; every agent built in
 * the run (the served build, older and newer builds a test makes) is signed by it and trusts it.
 */
import { createPrivateKey, type KeyObject } from "node:crypto";
import { readFileSync } from "node:fs";
import { RELEASE_KEY_FILE_ENV } from "../../../agent/scripts/release-key.ts";
import { releaseKeyText } from "../../../agent/src/update/release-signature.ts";

/** The run's private release key (what the builds sign with). */
export function testReleaseSigningKey(): KeyObject {
  const file = process.env[RELEASE_KEY_FILE_ENV];
  if (!file) {
    throw new Error(`${RELEASE_KEY_FILE_ENV} is not set: the vitest global setup makes it`);
  }
  return createPrivateKey(readFileSync(file, "utf8"));
}

/** The run's release public key, as `--release-key` takes it. */
export function testReleaseKey(): string {
  return releaseKeyText(testReleaseSigningKey());
}
