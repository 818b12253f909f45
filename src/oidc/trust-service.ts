/**
 * OIDC trusts of a pool: create, list, delete, each with its audit event in the same D1 batch.
 * Deleting a trust revokes every agent token issued under it, so its agents exit: removing the
 * trust is how an owner shuts out a fleet that logs in with OIDC.
 */

import { newId, ok } from "@outpost/common";
import { and, eq, isNull } from "drizzle-orm";
import { auditQuery } from "../audit/service.ts";
import type { AuditActor } from "../authz/actor.ts";
import type { Database } from "../db/client.ts";
import { agentTokens } from "../db/schema.ts";
import type { Deps } from "../deps.ts";
import { invalidInput, type Outcome, refuse } from "../lib/reason.ts";
import { getPool } from "../pools/queries.ts";
import { poolStub } from "../pools/service.ts";
import { issuerUrl } from "./issuer.ts";
import {
  countTrusts,
  deleteTrustQuery,
  getTrust,
  insertTrustQuery,
  listTrustRows,
} from "./queries.ts";
import { isOwnIssuer, issuerProblem, MAX_TRUSTS_PER_POOL, presentTrust } from "./trust-model.ts";

export type TrustInput = {
  issuer: string;
  audience: string;
  claims: Record<string, string>;
  description?: string | undefined;
};

/** Whether plain-http loopback issuers are allowed (development and tests only). */
export function allowsLoopbackIssuers(env: Pick<Env, "OIDC_ALLOW_LOOPBACK_ISSUERS">): boolean {
  return env.OIDC_ALLOW_LOOPBACK_ISSUERS === "true";
}

/**
 * Adds a trust to a pool of the org: `not_found` for another org's pool, `invalid` for an issuer
 * that is not an https URL or is this deployment's own, `conflict` past {@link MAX_TRUSTS_PER_POOL}.
 */
export async function createTrust(
  deps: Deps,
  input: { orgId: string; poolId: string; actor: AuditActor } & TrustInput,
): Promise<Outcome<ReturnType<typeof presentTrust>, "not_found" | "invalid" | "conflict">> {
  const { db, env } = deps;
  if (!(await getPool(db, input.orgId, input.poolId))) {
    return refuse("not_found", `pool ${input.poolId} not found`);
  }
  const problem = issuerProblem(input.issuer, allowsLoopbackIssuers(env));
  if (problem !== null) {
    return invalidInput("json.issuer", `issuer ${problem}`);
  }
  if (isOwnIssuer(input.issuer, issuerUrl(env))) {
    return invalidInput(
      "json.issuer",
      "issuer is this deployment's own issuer: its tokens are jobs' workload identities, which workspace code can read, so they are never exchanged for agent tokens",
    );
  }
  if ((await countTrusts(db, input.poolId)) >= MAX_TRUSTS_PER_POOL) {
    return refuse("conflict", `a pool holds at most ${MAX_TRUSTS_PER_POOL} OIDC trusts`);
  }
  const now = deps.now();
  const row = {
    id: newId("oidcTrust"),
    orgId: input.orgId,
    poolId: input.poolId,
    issuer: input.issuer,
    audience: input.audience,
    claims: input.claims,
    description: input.description ?? "",
    createdBy: input.actor.id,
    createdAt: now,
  };
  await db.batch([
    insertTrustQuery(db, row),
    auditQuery(db, {
      orgId: input.orgId,
      actor: input.actor,
      action: "oidc_trust.create",
      targetType: "oidc_trust",
      targetId: row.id,
      data: {
        poolId: input.poolId,
        issuer: row.issuer,
        audience: row.audience,
        claims: row.claims,
      },
      now,
    }),
  ]);
  return ok(presentTrust(row));
}

/** The trusts of a pool of the org. */
export async function listTrusts(
  db: Database,
  orgId: string,
  poolId: string,
): Promise<Outcome<ReturnType<typeof presentTrust>[], "not_found">> {
  if (!(await getPool(db, orgId, poolId))) {
    return refuse("not_found", `pool ${poolId} not found`);
  }
  return ok((await listTrustRows(db, orgId, poolId)).map(presentTrust));
}

/**
 * Removes a trust and revokes the tokens issued under it (their agents are told to exit).
 * Returns the ids of the revoked tokens.
 */
export async function deleteTrust(
  deps: Deps,
  input: { orgId: string; poolId: string; id: string; actor: AuditActor },
): Promise<Outcome<{ revokedTokenIds: string[] }, "not_found">> {
  const { db, env } = deps;
  const trust = await getTrust(db, input.orgId, input.poolId, input.id);
  if (!trust) {
    return refuse("not_found", `OIDC trust ${input.id} not found`);
  }
  const issued = await db
    .select({ id: agentTokens.id, chainId: agentTokens.chainId })
    .from(agentTokens)
    .where(and(eq(agentTokens.oidcTrustId, trust.id), isNull(agentTokens.revokedAt)));
  const now = deps.now();
  await db.batch([
    deleteTrustQuery(db, trust.id),
    db
      .update(agentTokens)
      .set({ revokedAt: now })
      .where(and(eq(agentTokens.oidcTrustId, trust.id), isNull(agentTokens.revokedAt))),
    auditQuery(db, {
      orgId: input.orgId,
      actor: input.actor,
      action: "oidc_trust.delete",
      targetType: "oidc_trust",
      targetId: trust.id,
      data: { poolId: input.poolId, issuer: trust.issuer, revokedTokens: issued.length },
      now,
    }),
  ]);
  const pool = poolStub(env, input.poolId);
  for (const chainId of new Set(issued.map((t) => t.chainId ?? t.id))) {
    await pool.revokeToken(chainId);
  }
  return ok({ revokedTokenIds: issued.map((t) => t.id) });
}
