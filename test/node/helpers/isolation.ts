import { probeBubblewrap } from "../../../agent/src/exec/sandbox.ts";
import type { JobIsolation } from "../../../agent/src/job/containment.ts";

/** Job isolation for runner tests: no sandbox, the default grace. */
export const NO_ISOLATION: JobIsolation = {
  mode: "none",
  bwrap: "",
  secretFiles: [],
  agentHome: null,
  orphanGraceMs: 30_000,
};

/**
 * bubblewrap isolation as the agent would resolve it on this host. bubblewrap is a test
 * prerequisite (README), so its absence fails the test that asks for it, with the reason.
 */
export async function bubblewrapIsolation(
  extra: Partial<JobIsolation> = {},
): Promise<JobIsolation> {
  const probe = await probeBubblewrap();
  if (!probe.ok) {
    throw new Error(`bubblewrap is required for this test: ${probe.reason}`);
  }
  return { ...NO_ISOLATION, mode: "bwrap", bwrap: probe.bwrap, ...extra };
}
