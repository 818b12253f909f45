/**
 * Vitest global setup: makes sure the static assets (the dashboard's files and the agent's
 * bundles, npm package and signed release files) are current before a project's tests, so the
 * coordinator under test serves the current dashboard and ships the current agent, and a single
 * test file runs on a fresh checkout. `npm test` builds once before the projects start; here that
 * build is found current and reused (agent/scripts/build-inputs.ts), never repeated.
 *
 * The release is signed by the key every build finds (agent/scripts/release-key.ts): the
 * checkout's stable local key unless the environment names another, so the build `npm start`,
 * `npm test` and the test projects make is one build. Its public key is one of the stamp's
 * inputs: a build signed by another key is rebuilt here, never served with a key whose private
 * half is gone. `test/node/helpers/release-key.ts` reads the same key back.
 */
import { ensureAssetsBuilt } from "../../scripts/build.ts";

export default async function setup(): Promise<void> {
  await ensureAssetsBuilt();
}
