/** D1 access for org tokens and for token lookups of every kind. */
import { and, desc, eq, isNull, lt, or, sql } from "drizzle-orm";
import { type Database, prepared } from "../db/client.ts";
import { agentTokens, orgTokens, runTokens, teamTokens, userTokens } from "../db/schema.ts";
import type { Role, TokenKind } from "./model.ts";

export type OrgTokenRow = typeof orgTokens.$inferSelect;

/** A token row found by hash, whatever its kind, with what auth needs. */
export type TokenRecord = {
  id: string;
  orgId: string;
  tokenHash: string;
  revokedAt: number | null;
  /** Run tokens only: when the agent acknowledged the lease the token was minted for. */
  startedAt?: number | null;
  /** Absent for run tokens, whose use is not recorded. */
  lastUsedAt?: number | null;
  role?: Role;
  /** Org, user and team tokens: what the token is for, as its creator put it. */
  description?: string;
  poolId?: string;
  /** User tokens: whose. */
  userId?: string;
  /** Team tokens: whose. */
  teamId?: string;
  /** When the token stops working (null: never): OIDC-exchanged agent, user and team tokens. */
  expiresAt?: number | null;
  /** Agent tokens: the chain an OIDC agent's renewals share (null for static tokens). */
  chainId?: string | null;
  oidcIssuer?: string | null;
  oidcSubject?: string | null;
  runId?: string;
  workspaceId?: string;
  jobId?: string;
};

/** Finds a token by the SHA-256 of its secret in the table of its kind. */
export async function findTokenByHash(
  db: Database,
  kind: TokenKind,
  tokenHash: string,
): Promise<TokenRecord | undefined> {
  // Prepared once: this runs on every authenticated request.
  const hash = sql.placeholder("hash");
  switch (kind) {
    case "org":
      return prepared(db, "token.org", (d) =>
        d.select().from(orgTokens).where(eq(orgTokens.tokenHash, hash)).prepare(),
      ).get({ hash: tokenHash });
    case "agent":
      return prepared(db, "token.agent", (d) =>
        d.select().from(agentTokens).where(eq(agentTokens.tokenHash, hash)).prepare(),
      ).get({ hash: tokenHash });
    case "run":
      return prepared(db, "token.run", (d) =>
        d.select().from(runTokens).where(eq(runTokens.tokenHash, hash)).prepare(),
      ).get({ hash: tokenHash });
    case "user":
      return prepared(db, "token.user", (d) =>
        d.select().from(userTokens).where(eq(userTokens.tokenHash, hash)).prepare(),
      ).get({ hash: tokenHash });
    case "team":
      return prepared(db, "token.team", (d) =>
        d.select().from(teamTokens).where(eq(teamTokens.tokenHash, hash)).prepare(),
      ).get({ hash: tokenHash });
  }
}

/** Records use, but only when the last record is older than `resolutionMs`: one write a minute. */
export async function touchToken(
  db: Database,
  kind: TokenKind,
  id: string,
  now: number,
  resolutionMs: number,
): Promise<void> {
  const tables = { org: orgTokens, agent: agentTokens, user: userTokens, team: teamTokens };
  const table = kind === "run" ? null : tables[kind];
  if (!table) {
    return;
  }
  await db
    .update(table)
    .set({ lastUsedAt: now })
    .where(
      and(eq(table.id, id), or(isNull(table.lastUsedAt), lt(table.lastUsedAt, now - resolutionMs))),
    );
}

export function insertOrgTokenQuery(db: Database, row: typeof orgTokens.$inferInsert) {
  return db.insert(orgTokens).values(row);
}

export function listOrgTokens(db: Database, orgId: string): Promise<OrgTokenRow[]> {
  return db
    .select()
    .from(orgTokens)
    .where(and(eq(orgTokens.orgId, orgId), isNull(orgTokens.revokedAt)))
    .orderBy(desc(orgTokens.createdAt), desc(orgTokens.id));
}

export function getOrgToken(db: Database, orgId: string, id: string) {
  return db.query.orgTokens.findFirst({
    where: and(eq(orgTokens.orgId, orgId), eq(orgTokens.id, id)),
  });
}

export function revokeOrgTokenQuery(db: Database, orgId: string, id: string, now: number) {
  return db
    .update(orgTokens)
    .set({ revokedAt: now })
    .where(and(eq(orgTokens.orgId, orgId), eq(orgTokens.id, id), isNull(orgTokens.revokedAt)));
}
