/** Org tokens: creation (secret returned once), listing, revocation, with audit events. */

import { newId, ok } from "@outpost/common";
import { and, count, eq, isNull } from "drizzle-orm";
import { auditQuery } from "../audit/service.ts";
import type { AuditActor } from "../authz/actor.ts";
import type { Database } from "../db/client.ts";
import { orgTokens } from "../db/schema.ts";
import type { Deps } from "../deps.ts";
import { type Outcome, refuse } from "../lib/reason.ts";
import { generateToken, hashToken, type Role } from "./model.ts";
import {
  getOrgToken,
  insertOrgTokenQuery,
  listOrgTokens,
  type OrgTokenRow,
  revokeOrgTokenQuery,
} from "./queries.ts";

/** The public shape of an org token; never includes the secret or its hash. */
export function presentOrgToken(row: OrgTokenRow) {
  return {
    id: row.id,
    role: row.role,
    description: row.description,
    createdAt: new Date(row.createdAt).toISOString(),
    lastUsedAt: row.lastUsedAt === null ? null : new Date(row.lastUsedAt).toISOString(),
    revokedAt: row.revokedAt === null ? null : new Date(row.revokedAt).toISOString(),
  };
}

/** Creates an org token; the returned secret is the only copy that will ever exist. */
export async function createOrgToken(
  deps: Deps,
  input: { orgId: string; role: Role; description: string; actor: AuditActor },
) {
  const { db } = deps;
  const secret = generateToken("org");
  const now = deps.now();
  const row = {
    id: newId("orgToken"),
    orgId: input.orgId,
    role: input.role,
    description: input.description,
    tokenHash: await hashToken(secret),
    createdBy: input.actor.id,
    createdAt: now,
    lastUsedAt: null,
    revokedAt: null,
  };
  await db.batch([
    insertOrgTokenQuery(db, row),
    auditQuery(db, {
      orgId: input.orgId,
      actor: input.actor,
      action: "org_token.create",
      targetType: "org_token",
      targetId: row.id,
      data: { role: input.role, description: input.description },
      now,
    }),
  ]);
  return { ...presentOrgToken(row), token: secret };
}

export async function listTokens(db: Database, orgId: string) {
  return (await listOrgTokens(db, orgId)).map(presentOrgToken);
}

/**
 * Revokes a token; the very next request with it gets 401. Refuses (`conflict`) to revoke the
 * org's last active owner token, which would leave nobody able to manage the org.
 */
export async function revokeOrgToken(
  deps: Deps,
  input: { orgId: string; id: string; actor: AuditActor },
): Promise<Outcome<ReturnType<typeof presentOrgToken>, "not_found" | "conflict">> {
  const { db } = deps;
  const token = await getOrgToken(db, input.orgId, input.id);
  if (!token) {
    return refuse("not_found", `token ${input.id} not found`);
  }
  if (token.revokedAt !== null) {
    return ok(presentOrgToken(token));
  }
  if (token.role === "owner") {
    const [owners] = await db
      .select({ n: count() })
      .from(orgTokens)
      .where(
        and(
          eq(orgTokens.orgId, input.orgId),
          eq(orgTokens.role, "owner"),
          isNull(orgTokens.revokedAt),
        ),
      );
    if ((owners?.n ?? 0) <= 1) {
      return refuse(
        "conflict",
        "this is the organization's last owner token; create another owner token first",
      );
    }
  }
  const now = deps.now();
  await db.batch([
    revokeOrgTokenQuery(db, input.orgId, input.id, now),
    auditQuery(db, {
      orgId: input.orgId,
      actor: input.actor,
      action: "org_token.revoke",
      targetType: "org_token",
      targetId: input.id,
      now,
    }),
  ]);
  return ok(presentOrgToken({ ...token, revokedAt: now }));
}
