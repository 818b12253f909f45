/**
 * One page of runs, newest first, as the API and the dashboard list them: each with why it
 * waits and the agents that ran its phases. Callers pass `visible` (the workspaces the caller may
 * read) so a list never shows a run of a workspace the caller cannot see.
 */

import { ok } from "@outpost/common";
import type { SQL } from "drizzle-orm";
import type { Deps } from "../deps.ts";
import { decodeCursor, takePage } from "../lib/paging.ts";
import type { Outcome } from "../lib/reason.ts";
import { listRunJobs } from "./job-records.ts";
import type { RunSource, RunStatus } from "./model.ts";
import { presentRun } from "./present.ts";
import { listRunsPage } from "./queries.ts";
import { whyWaiting } from "./why.ts";

export type RunListFilter = {
  orgId: string;
  workspaceId?: string;
  projectId?: string;
  commitSha?: string;
  status?: RunStatus;
  source?: RunSource;
  poolId?: string;
  agentId?: string;
  visible?: SQL | undefined;
};

/** A page of presented runs and the cursor of the next; `invalid` for a forged cursor. */
export async function listRuns(
  deps: Deps,
  filter: RunListFilter,
  query: { limit: number; cursor?: string | undefined },
): Promise<
  Outcome<{ runs: ReturnType<typeof presentRun>[]; nextCursor: string | null }, "invalid">
> {
  const after = query.cursor
    ? decodeCursor(query.cursor, ["number", "string"] as const)
    : undefined;
  if (after && !after.ok) {
    return after;
  }
  const rows = await listRunsPage(deps.db, filter, {
    limit: query.limit,
    ...(after ? { after: after.value } : {}),
  });
  const page = takePage(rows, query.limit, (r) => [r.createdAt, r.id]);
  const jobs = await listRunJobs(
    deps.db,
    page.items.map((r) => r.id),
  );
  const runs = await Promise.all(
    page.items.map(async (r) => presentRun(r, await whyWaiting(deps, r), jobs.get(r.id))),
  );
  return ok({ runs, nextCursor: page.nextCursor });
}
