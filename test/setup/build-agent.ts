/**
 * Vitest global setup: builds the agent (bundles, npm package, release assets) once before a
 * project's tests, exactly as `npm run build:agent` does, so the coordinator under test ships
 * the current agent and a single test file can run on a fresh checkout.
 */
import { buildAgent } from "../../agent/scripts/build.ts";

export default async function setup(): Promise<void> {
  await buildAgent();
}
