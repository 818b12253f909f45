/**
 * The engines this agent runs: one driver per engine family. A new engine is a driver file in
 * this folder (see {@link EngineDriver}), its tests, and one more entry here; the coordinator
 * must list its name among the protocol's `ENGINES` for workspaces to choose it.
 */
import type { EngineDriver } from "./driver.ts";
import { pulumiDriver } from "./pulumi.ts";
import { terraformDriver } from "./terraform.ts";

export const DRIVERS: readonly EngineDriver[] = [terraformDriver, pulumiDriver];

/** The driver in `drivers` that runs `engine`, or null when none does. */
export function driverFor(
  engine: string,
  drivers: readonly EngineDriver[] = DRIVERS,
): EngineDriver | null {
  return drivers.find((d) => d.engines.includes(engine)) ?? null;
}
