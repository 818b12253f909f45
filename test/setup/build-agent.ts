/**
 * Vitest global setup: makes sure the static assets (the dashboard's files and the agent's
 * bundles, npm package and release files) are current before a project's tests, so the
 * coordinator under test serves the current dashboard and ships the current agent, and a single
 * test file runs on a fresh checkout. `npm test` builds once before the projects start; here that
 * build is found current and reused (agent/scripts/build-inputs.ts), never repeated.
 */
import { ensureAssetsBuilt } from "../../scripts/build.ts";

export default async function setup(): Promise<void> {
  await ensureAssetsBuilt();
}
