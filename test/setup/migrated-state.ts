/**
 * Vitest global setup for the projects that start coordinators (e2e, browser): applies the D1
 * migrations once, with wrangler as `npm start` does, into a state directory every coordinator
 * of the run copies (`inject("migratedState")`, see test/e2e/helpers/world.ts). Applying them per
 * coordinator started a wrangler process each time, the larger part of a world's start.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { TestProject } from "vitest/node";
import { applyMigrations } from "../../scripts/local-coordinator.ts";

declare module "vitest" {
  export interface ProvidedContext {
    migratedState: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const dir = await mkdtemp(path.join(tmpdir(), "outpost-migrated-"));
  await applyMigrations(dir);
  project.provide("migratedState", dir);
  return () => rm(dir, { recursive: true, force: true });
}
