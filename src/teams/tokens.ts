/**
 * Team tokens (`op_team_…`), for CI: a token acts as its team, with the team's organization role
 * and workspace access of the moment. Deleting the team deletes its tokens.
 */

import { newId, ok } from "@outpost/common";
import { auditQuery } from "../audit/service.ts";
import type { AuditActor } from "../authz/actor.ts";
import type { Database } from "../db/client.ts";
import { type Outcome, refuse } from "../lib/reason.ts";
import { generateToken, hashToken } from "../tokens/model.ts";
import { presentTeamToken, teamNotFound } from "./model.ts";
import {
  getTeam,
  getTeamToken,
  insertTeamTokenQuery,
  listTeamTokenRows,
  revokeTeamTokenQuery,
} from "./queries.ts";

type Ctx = { orgId: string; actor: AuditActor; now: number };

/** Creates a token of the team; the returned secret is the only copy that will ever exist. */
export async function createTeamToken(
  db: Database,
  ctx: Ctx,
  input: { teamId: string; description: string; expiresInSeconds: number | null },
): Promise<Outcome<ReturnType<typeof presentTeamToken> & { token: string }, "not_found">> {
  const team = await getTeam(db, ctx.orgId, input.teamId);
  if (!team) {
    return teamNotFound(input.teamId);
  }
  const secret = generateToken("team");
  const row = {
    id: newId("teamToken"),
    orgId: ctx.orgId,
    teamId: team.id,
    description: input.description,
    tokenHash: await hashToken(secret),
    createdBy: ctx.actor.id,
    createdAt: ctx.now,
    lastUsedAt: null,
    revokedAt: null,
    expiresAt: input.expiresInSeconds === null ? null : ctx.now + input.expiresInSeconds * 1000,
  };
  await db.batch([
    insertTeamTokenQuery(db, row),
    auditQuery(db, {
      orgId: ctx.orgId,
      actor: ctx.actor,
      action: "team_token.create",
      targetType: "team_token",
      targetId: row.id,
      data: { teamId: team.id, description: input.description, expiresAt: row.expiresAt },
      now: ctx.now,
    }),
  ]);
  return ok({ ...presentTeamToken(row), token: secret });
}

/** The team's working tokens, or not found for another org's team. */
export async function listTeamTokens(
  db: Database,
  orgId: string,
  teamId: string,
  now: number,
): Promise<Outcome<ReturnType<typeof presentTeamToken>[], "not_found">> {
  if (!(await getTeam(db, orgId, teamId))) {
    return teamNotFound(teamId);
  }
  return ok((await listTeamTokenRows(db, teamId, now)).map(presentTeamToken));
}

/** Revokes a team token; its next request gets 401. */
export async function revokeTeamToken(
  db: Database,
  ctx: Ctx,
  input: { teamId: string; tokenId: string },
): Promise<Outcome<ReturnType<typeof presentTeamToken>, "not_found">> {
  const team = await getTeam(db, ctx.orgId, input.teamId);
  const token = team ? await getTeamToken(db, team.id, input.tokenId) : undefined;
  if (!token) {
    return refuse("not_found", `token ${input.tokenId} not found`);
  }
  if (token.revokedAt === null) {
    await db.batch([
      revokeTeamTokenQuery(db, token.teamId, token.id, ctx.now),
      auditQuery(db, {
        orgId: ctx.orgId,
        actor: ctx.actor,
        action: "team_token.revoke",
        targetType: "team_token",
        targetId: token.id,
        data: { teamId: token.teamId },
        now: ctx.now,
      }),
    ]);
  }
  return ok(presentTeamToken(token));
}
