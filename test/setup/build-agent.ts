/**
 * Vitest global setup: makes sure the agent build (bundles, npm package, release assets) is
 * current before a project's tests, so the coordinator under test ships the current agent and a
 * single test file runs on a fresh checkout. `npm test` builds once before the projects start;
 * here that build is found fresh and reused (agent/scripts/build-inputs.ts), never repeated.
 */
import { ensureAgentBuilt } from "../../agent/scripts/build.ts";

export default async function setup(): Promise<void> {
  await ensureAgentBuilt();
}
