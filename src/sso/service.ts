/**
 * An organization's single sign-on settings, for owners: the provider's issuer (checked by its
 * discovery document), the client, and which claims carry the email and the groups. The client
 * secret is sealed with ENCRYPTION_KEY and never shown; `secretContext` binds it to its org.
 */

import { ok } from "@outpost/common";
import { auditQuery } from "../audit/service.ts";
import type { AuditActor } from "../authz/actor.ts";
import type { Database } from "../db/client.ts";
import { loadKeyring, seal } from "../lib/encryption.ts";
import { invalidInput, type Outcome, refuse } from "../lib/reason.ts";
import { discover } from "../oidc/discovery.ts";
import { allowsLoopbackIssuers } from "../oidc/trust-service.ts";
import { type PutSso, presentSso, ssoIssuerProblem } from "./model.ts";
import { deleteSsoConfigQuery, getSsoConfig, putSsoConfigQuery } from "./queries.ts";

type Ctx = { orgId: string; actor: AuditActor; now: number };
type Settings = ReturnType<typeof PutSso.parse>;

/** The associated data the client secret is sealed with: it opens only for its organization. */
export const secretContext = (orgId: string) => `sso-client-secret:${orgId}`;

/** The org's SSO settings without the secret, or undefined when it has none. */
export async function showSso(db: Database, orgId: string) {
  const row = await getSsoConfig(db, orgId);
  return row ? presentSso(row) : undefined;
}

/**
 * Sets the org's SSO: the issuer must be https (loopback http only where the deployment allows
 * it) and its discovery document must name an authorization and a token endpoint.
 */
export async function putSso(
  db: Database,
  env: Env,
  ctx: Ctx,
  settings: Settings,
): Promise<Outcome<ReturnType<typeof presentSso>, "invalid" | "unavailable">> {
  const allowLoopback = allowsLoopbackIssuers(env);
  const problem = ssoIssuerProblem(settings.issuer, allowLoopback);
  if (problem) {
    return invalidInput("json.issuer", `issuer ${problem}`);
  }
  try {
    const { document } = await discover(settings.issuer, allowLoopback, ctx.now);
    if (!document.authorizationEndpoint || !document.tokenEndpoint) {
      throw new Error("its discovery document has no usable authorization and token endpoints");
    }
  } catch (error) {
    return invalidInput(
      "json.issuer",
      `issuer ${settings.issuer} cannot be used: ${error instanceof Error ? error.message : "discovery failed"}`,
    );
  }
  const keyring = await loadKeyring(env.ENCRYPTION_KEY);
  if (!keyring.ok) {
    return refuse("unavailable", "the deployment's ENCRYPTION_KEY is not usable");
  }
  const sealed = await seal(keyring.value, settings.clientSecret, secretContext(ctx.orgId));
  const row = {
    orgId: ctx.orgId,
    issuer: settings.issuer,
    clientId: settings.clientId,
    clientSecretCiphertext: sealed.sealed,
    groupsClaim: settings.groupsClaim,
    emailClaim: settings.emailClaim,
    createdAt: ctx.now,
    updatedAt: ctx.now,
  };
  await db.batch([
    putSsoConfigQuery(db, row),
    auditQuery(db, {
      orgId: ctx.orgId,
      actor: ctx.actor,
      action: "sso.update",
      targetType: "organization",
      targetId: ctx.orgId,
      data: {
        issuer: row.issuer,
        clientId: row.clientId,
        groupsClaim: row.groupsClaim,
        emailClaim: row.emailClaim,
      },
      now: ctx.now,
    }),
  ]);
  return ok(presentSso(row));
}

/** Turns the org's SSO off; sessions already started live on until they end. */
export async function deleteSso(db: Database, ctx: Ctx): Promise<Outcome<null, "not_found">> {
  if (!(await getSsoConfig(db, ctx.orgId))) {
    return refuse("not_found", "this organization has no single sign-on");
  }
  await db.batch([
    deleteSsoConfigQuery(db, ctx.orgId),
    auditQuery(db, {
      orgId: ctx.orgId,
      actor: ctx.actor,
      action: "sso.delete",
      targetType: "organization",
      targetId: ctx.orgId,
      now: ctx.now,
    }),
  ]);
  return ok(null);
}
