/**
 * Seeds for workspace-level tests: pools and runs are inserted as rows (their APIs are other
 * features), workspaces go through the real API.
 */

import { newId } from "@outpost/common";
import type { RunStatus } from "@outpost/protocol";
import { eq } from "drizzle-orm";
import { expect } from "vitest";
import { agentPools, orgTokens, runs, workspaces } from "../../../src/db/schema.ts";
import { hashToken } from "../../../src/tokens/model.ts";
import { loadVariablesForJob } from "../../../src/variables/effective.ts";
import { requestJson } from "./api.ts";
import { db, type TestOrg } from "./fixtures.ts";

export type WorkspaceBody = {
  id: string;
  name: string;
  executionMode: string;
  poolId: string | null;
  lock: { lockedBy: string; holderKind: string; reason: string; lockedAt: string } | null;
  [field: string]: unknown;
};

let counter = 0;

/** An agent pool row in the org. */
export async function seedPool(orgId: string, name = `pool-${counter++}`): Promise<string> {
  const id = newId("pool");
  await db.insert(agentPools).values({ id, orgId, name, updatedAt: Date.now() });
  return id;
}

/** A run row of the workspace in the given status. */
export async function seedRun(
  orgId: string,
  workspaceId: string,
  status: RunStatus,
): Promise<string> {
  const id = newId("run");
  await db
    .insert(runs)
    .values({ id, orgId, workspaceId, operation: "plan", status, updatedAt: Date.now() });
  return id;
}

/** A workspace created through the API by the org's owner. */
export async function createWorkspace(
  org: TestOrg,
  body: Record<string, unknown> = {},
): Promise<WorkspaceBody> {
  const res = await requestJson<WorkspaceBody>("/api/v1/workspaces", {
    method: "POST",
    token: org.ownerToken,
    body: { name: `ws-${Date.now().toString(36)}-${counter++}`, engineVersion: "1.9.5", ...body },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
}

/** The id (tok_…) of an org token secret. */
export async function tokenIdOf(secret: string): Promise<string> {
  const row = await db.query.orgTokens.findFirst({
    where: eq(orgTokens.tokenHash, await hashToken(secret)),
  });
  if (!row) {
    throw new Error("tokenIdOf: unknown token");
  }
  return row.id;
}

/** The variables a job of the workspace receives (its own merged with the sets that reach it). */
export async function jobVariablesOf(
  environment: { ENCRYPTION_KEY?: string },
  workspaceId: string,
  includeSensitive: boolean,
) {
  const [row] = await db
    .select({ orgId: workspaces.orgId })
    .from(workspaces)
    .where(eq(workspaces.id, workspaceId));
  const workspace = { id: workspaceId, orgId: row?.orgId ?? "" };
  return (await loadVariablesForJob(environment, db, workspace, { includeSensitive })).variables;
}
