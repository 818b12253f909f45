/**
 * Vitest global setup: builds the static assets (the dashboard's files and the agent's bundles,
 * npm package and signed release files) once before a project's tests, exactly as `npm run
 * build` does, so the coordinator under test serves the current dashboard and ships the current
 * agent, and a single test file can run on a fresh checkout.
 *
 * The release is signed with a key made for this test run (never the checkout's local key, and
 * never one committed): its file is named by `OUTPOST_RELEASE_SIGNING_KEY_FILE`, which every
 * build in the run (test workers inherit the variable, and so do the processes they start)
 * signs with; `test/node/helpers/release-key.ts` reads it back.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { ensureReleaseKeyFile, RELEASE_KEY_FILE_ENV } from "../../agent/scripts/release-key.ts";
import { buildAssets } from "../../scripts/build.ts";

export default async function setup(): Promise<(() => void) | undefined> {
  let made: string | null = null;
  if (!process.env[RELEASE_KEY_FILE_ENV]) {
    made = mkdtempSync(path.join(tmpdir(), "outpost-release-key-"));
    const file = path.join(made, "key.pem");
    await ensureReleaseKeyFile(file);
    process.env[RELEASE_KEY_FILE_ENV] = file;
  }
  await buildAssets();
  // The project that made the key removes it once the whole run is over.
  return made === null ? undefined : () => rmSync(made, { recursive: true, force: true });
}
