/**
 * Personal API tokens (`op_user_…`): a person's own credential for the CLI and scripts. A token
 * carries no permissions of its own: each request acts with its user's permissions as they are
 * then, and a disabled user's tokens are revoked with it.
 */

import { newId, ok } from "@outpost/common";
import { auditQuery } from "../audit/service.ts";
import type { AuditActor } from "../authz/actor.ts";
import type { Database } from "../db/client.ts";
import { type Outcome, refuse } from "../lib/reason.ts";
import { generateToken, hashToken } from "../tokens/model.ts";
import { presentUserToken } from "./model.ts";
import {
  getUserToken,
  insertUserTokenQuery,
  listUserTokenRows,
  revokeUserTokenQuery,
} from "./queries.ts";

/** The longest a personal token may be asked to live; without an expiry it lives until revoked. */
export const MAX_USER_TOKEN_SECONDS = 366 * 86_400;

/** Creates a personal token; the returned secret is the only copy that will ever exist. */
export async function createUserToken(
  db: Database,
  input: {
    orgId: string;
    userId: string;
    description: string;
    expiresInSeconds: number | null;
    actor: AuditActor;
    now: number;
  },
) {
  const secret = generateToken("user");
  const row = {
    id: newId("userToken"),
    orgId: input.orgId,
    userId: input.userId,
    description: input.description,
    tokenHash: await hashToken(secret),
    createdAt: input.now,
    lastUsedAt: null,
    revokedAt: null,
    expiresAt: input.expiresInSeconds === null ? null : input.now + input.expiresInSeconds * 1000,
  };
  await db.batch([
    insertUserTokenQuery(db, row),
    auditQuery(db, {
      orgId: input.orgId,
      actor: input.actor,
      action: "user_token.create",
      targetType: "user_token",
      targetId: row.id,
      data: { userId: input.userId, description: input.description, expiresAt: row.expiresAt },
      now: input.now,
    }),
  ]);
  return { ...presentUserToken(row), token: secret };
}

/** The user's working tokens, newest first. */
export async function listUserTokens(db: Database, userId: string, now: number) {
  return (await listUserTokenRows(db, userId, now)).map(presentUserToken);
}

/** Revokes one of the user's own tokens; another user's token id is not found. */
export async function revokeUserToken(
  db: Database,
  input: { orgId: string; userId: string; tokenId: string; actor: AuditActor; now: number },
): Promise<Outcome<ReturnType<typeof presentUserToken>, "not_found">> {
  const token = await getUserToken(db, input.userId, input.tokenId);
  if (!token) {
    return refuse("not_found", `token ${input.tokenId} not found`);
  }
  if (token.revokedAt === null) {
    await db.batch([
      revokeUserTokenQuery(db, input.userId, input.tokenId, input.now),
      auditQuery(db, {
        orgId: input.orgId,
        actor: input.actor,
        action: "user_token.revoke",
        targetType: "user_token",
        targetId: token.id,
        data: { userId: input.userId },
        now: input.now,
      }),
    ]);
  }
  return ok(presentUserToken(token));
}
