/** D1 access for SSO settings and sign-ins under way. */
import { and, count, eq, gt, isNull, lt } from "drizzle-orm";
import type { Database } from "../db/client.ts";
import { organizations, ssoConfigs, ssoRequests } from "../db/schema.ts";

export type SsoConfigRow = typeof ssoConfigs.$inferSelect;

export function getSsoConfig(db: Database, orgId: string) {
  return db.query.ssoConfigs.findFirst({ where: eq(ssoConfigs.orgId, orgId) });
}

export function putSsoConfigQuery(db: Database, row: typeof ssoConfigs.$inferInsert) {
  const { orgId: _orgId, createdAt: _createdAt, ...changes } = row;
  return db
    .insert(ssoConfigs)
    .values(row)
    .onConflictDoUpdate({ target: ssoConfigs.orgId, set: changes });
}

export function deleteSsoConfigQuery(db: Database, orgId: string) {
  return db.delete(ssoConfigs).where(eq(ssoConfigs.orgId, orgId)).returning();
}

/** The names of organizations with SSO (at most `limit`), and how many organizations exist. */
export async function ssoOrganizations(db: Database, limit: number) {
  const [withSso, [all]] = await db.batch([
    db
      .select({ name: organizations.name })
      .from(ssoConfigs)
      .innerJoin(organizations, eq(organizations.id, ssoConfigs.orgId))
      .limit(limit),
    db.select({ n: count() }).from(organizations),
  ]);
  return { names: withSso.map((r) => r.name), organizations: all?.n ?? 0 };
}

export function insertSsoRequestQuery(db: Database, row: typeof ssoRequests.$inferInsert) {
  return db.insert(ssoRequests).values(row);
}

/** Deletes sign-ins that can no longer complete. */
export function deleteExpiredSsoRequestsQuery(db: Database, now: number) {
  return db.delete(ssoRequests).where(lt(ssoRequests.expiresAt, now));
}

/**
 * Takes the sign-in of a `state` hash, once: marks it used and returns it when it was unused and
 * unexpired; a second call (a replayed callback) gets nothing.
 */
export async function takeSsoRequest(db: Database, stateHash: string, now: number) {
  const [row] = await db
    .update(ssoRequests)
    .set({ usedAt: now })
    .where(
      and(
        eq(ssoRequests.stateHash, stateHash),
        isNull(ssoRequests.usedAt),
        gt(ssoRequests.expiresAt, now),
      ),
    )
    .returning();
  return row;
}

/** A sign-in by `state` hash, used or not (to name the org of a refused callback). */
export function findSsoRequest(db: Database, stateHash: string) {
  return db.query.ssoRequests.findFirst({ where: eq(ssoRequests.stateHash, stateHash) });
}
