/**
 * What each job of a run records about where it ran: the agent (id, name, version, isolation
 * mode), its pool, the exact engine version, and when it started and ended. Written when the
 * agent starts the job, so it stays readable after the agent is long gone.
 */
import { and, eq, inArray, isNull, sql } from "drizzle-orm";
import type { StartingAgent } from "../../durable/pool-types.ts";
import type { Database } from "../db/client.ts";
import { runJobs, runs } from "../db/schema.ts";

export type RunJobRow = typeof runJobs.$inferSelect;

/**
 * Records the start of a job; a repeated start (a retried acknowledge) changes nothing, and a
 * job whose run is gone (its workspace was deleted meanwhile) records nothing rather than
 * failing the agent's start.
 */
export function insertRunJobQuery(
  db: Database,
  job: { jobId: string; runId: string; orgId: string; phase: "plan" | "apply"; poolId: string },
  agent: StartingAgent,
  now: number,
) {
  // Columns in the table's order (id, org_id, run_id, phase, pool_id, agent_id, agent_name,
  // agent_version, isolation, engine_version, started_at, ended_at): drizzle names them all
  // in the INSERT and takes the SELECT positionally.
  return db
    .insert(runJobs)
    .select(
      sql`SELECT ${job.jobId}, ${job.orgId}, ${job.runId}, ${job.phase}, ${job.poolId}, ${agent.id}, ${agent.name}, ${agent.version}, ${agent.isolation}, NULL, ${now}, NULL WHERE EXISTS (SELECT 1 FROM ${runs} WHERE ${runs.id} = ${job.runId})`,
    )
    .onConflictDoNothing();
}

/** Marks the job ended (first ending wins). */
export function endRunJobQuery(db: Database, jobId: string, now: number) {
  return db
    .update(runJobs)
    .set({ endedAt: now })
    .where(and(eq(runJobs.id, jobId), isNull(runJobs.endedAt)));
}

/** The exact engine version the agent reported for the job (first report wins). */
export function recordEngineVersionQuery(db: Database, jobId: string, engineVersion: string) {
  return db
    .update(runJobs)
    .set({ engineVersion })
    .where(and(eq(runJobs.id, jobId), isNull(runJobs.engineVersion)));
}

/** The recorded jobs of the given runs, by run id, plan before apply. */
export async function listRunJobs(
  db: Database,
  runIds: readonly string[],
): Promise<Map<string, RunJobRow[]>> {
  const byRun = new Map<string, RunJobRow[]>();
  if (runIds.length === 0) {
    return byRun;
  }
  const rows = await db
    .select()
    .from(runJobs)
    .where(inArray(runJobs.runId, [...runIds]))
    .orderBy(runJobs.startedAt);
  for (const row of rows) {
    byRun.set(row.runId, [...(byRun.get(row.runId) ?? []), row]);
  }
  return byRun;
}

/** The engine version the run's plan job ran, which its apply must use; null if unknown. */
export async function plannedEngineVersion(db: Database, runId: string): Promise<string | null> {
  const [row] = await db
    .select({ engineVersion: runJobs.engineVersion })
    .from(runJobs)
    .where(eq(runJobs.id, `${runId}:plan`));
  return row?.engineVersion ?? null;
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** The public shape of a recorded job. */
export function presentRunJob(row: RunJobRow) {
  return {
    id: row.id,
    phase: row.phase,
    poolId: row.poolId,
    agent: {
      id: row.agentId,
      name: row.agentName,
      version: row.agentVersion,
      isolation: row.isolation ?? "unknown",
    },
    engineVersion: row.engineVersion,
    startedAt: new Date(row.startedAt).toISOString(),
    endedAt: iso(row.endedAt),
  };
}
