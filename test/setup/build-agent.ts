/**
 * Vitest global setup: builds the static assets (the dashboard's files and the agent's bundles,
 * npm package and release files) once before a project's tests, exactly as `npm run build`
 * does, so the coordinator under test serves the current dashboard and ships the current agent,
 * and a single test file can run on a fresh checkout.
 */
import { buildAssets } from "../../scripts/build.ts";

export default async function setup(): Promise<void> {
  await buildAssets();
}
