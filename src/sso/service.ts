/**
 * An organization's single sign-on: its settings (owners; the client secret sealed with
 * ENCRYPTION_KEY), and the sign-in itself: `start` records the PKCE verifier and nonce under the
 * SHA-256 of a fresh `state` and sends the browser to the provider; `finish` takes that record
 * once (a replayed callback finds nothing), redeems the code, verifies the ID token, and signs
 * the user in. Every refusal names its check and is audited when the organization is known.
 */
import { auditQuery } from "../audit/service.ts";
import type { AuditActor } from "../authz/actor.ts";
import type { Database } from "../db/client.ts";
import { newId } from "../db/ids.ts";
import { sha256Hex } from "../lib/crypto.ts";
import { loadKeyring, open, seal } from "../lib/encryption.ts";
import { fail, ok, type Result } from "../lib/result.ts";
import { discover } from "../oidc/discovery.ts";
import { allowsLoopbackIssuers } from "../oidc/trust-service.ts";
import { getOrganizationByName } from "../orgs/service.ts";
import { isEmail } from "../users/model.ts";
import type { UserRow } from "../users/queries.ts";
import { signInUser } from "../users/service.ts";
import {
  authorizationUrl,
  codeChallenge,
  groupsOf,
  type PutSso,
  presentSso,
  randomToken,
  SSO_REQUEST_TTL_MS,
  ssoIssuerProblem,
} from "./model.ts";
import {
  deleteExpiredSsoRequestsQuery,
  deleteSsoConfigQuery,
  findSsoRequest,
  getSsoConfig,
  insertSsoRequestQuery,
  putSsoConfigQuery,
  takeSsoRequest,
} from "./queries.ts";
import { redeemCode, type SignInRefusal, verifyIdToken } from "./relying-party.ts";

type Ctx = { orgId: string; actor: AuditActor; now: number };
type Settings = ReturnType<typeof PutSso.parse>;

const secretContext = (orgId: string) => `sso-client-secret:${orgId}`;

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
): Promise<
  Result<ReturnType<typeof presentSso>, { reason: "invalid" | "unavailable"; message: string }>
> {
  const allowLoopback = allowsLoopbackIssuers(env);
  const problem = ssoIssuerProblem(settings.issuer, allowLoopback);
  if (problem) {
    return fail({ reason: "invalid", message: `issuer ${problem}` });
  }
  try {
    const { document } = await discover(settings.issuer, allowLoopback);
    if (!document.authorizationEndpoint || !document.tokenEndpoint) {
      throw new Error("its discovery document has no usable authorization and token endpoints");
    }
  } catch (error) {
    return fail({
      reason: "invalid",
      message: `issuer ${settings.issuer} cannot be used: ${error instanceof Error ? error.message : "discovery failed"}`,
    });
  }
  const keyring = await loadKeyring(env.ENCRYPTION_KEY);
  if (!keyring.ok) {
    return fail({
      reason: "unavailable",
      message: "the deployment's ENCRYPTION_KEY is not usable",
    });
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
export async function deleteSso(db: Database, ctx: Ctx): Promise<Result<null, "not_found">> {
  if (!(await getSsoConfig(db, ctx.orgId))) {
    return fail("not_found");
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

/**
 * Starts a sign-in for organization `orgName`: the provider URL to send the browser to and the
 * `state` to bind to it (in a cookie). An unknown organization and one without SSO are refused
 * alike, so the route does not reveal which names exist.
 */
export async function startSignIn(
  db: Database,
  env: Env,
  input: { orgName: string; next: string; redirectUri: string; now: number },
): Promise<Result<{ url: string; state: string }, SignInRefusal>> {
  const org = await getOrganizationByName(db, input.orgName);
  const config = org ? await getSsoConfig(db, org.id) : undefined;
  if (!org || !config) {
    return fail({
      reason: "no_sso",
      message: `organization ${input.orgName} has no single sign-on`,
    });
  }
  let endpoint: string | null;
  try {
    endpoint = (await discover(config.issuer, allowsLoopbackIssuers(env))).document
      .authorizationEndpoint;
  } catch {
    endpoint = null;
  }
  if (!endpoint) {
    return fail({
      reason: "issuer_unreachable",
      message: `the provider ${config.issuer} cannot be reached`,
    });
  }
  const state = randomToken();
  const nonce = randomToken();
  const verifier = randomToken(48);
  await db.batch([
    insertSsoRequestQuery(db, {
      id: newId("ssoRequest"),
      orgId: org.id,
      stateHash: await sha256Hex(state),
      nonce,
      codeVerifier: verifier,
      next: input.next,
      createdAt: input.now,
      expiresAt: input.now + SSO_REQUEST_TTL_MS,
    }),
    deleteExpiredSsoRequestsQuery(db, input.now),
  ]);
  const url = authorizationUrl(endpoint, {
    clientId: config.clientId,
    redirectUri: input.redirectUri,
    state,
    nonce,
    challenge: await codeChallenge(verifier),
  });
  return ok({ url, state });
}

export type Callback = {
  state: string | null;
  code: string | null;
  /** The provider's `error` parameter, when it refused. */
  error: string | null;
  /** The state the browser's cookie holds (the browser that started the sign-in). */
  cookieState: string | null;
  redirectUri: string;
  now: number;
};

export type SignedIn = { user: UserRow; next: string };
export type Refused = SignInRefusal & { orgId: string | null };

/** Finishes a sign-in at the callback: the signed-in user, or the refusal (audited). */
export async function finishSignIn(
  db: Database,
  env: Env,
  callback: Callback,
): Promise<Result<SignedIn, Refused>> {
  const outcome = await checkCallback(db, env, callback);
  if (!outcome.ok && outcome.reason.orgId !== null) {
    await auditQuery(db, {
      orgId: outcome.reason.orgId,
      actor: { type: "system", id: "sso", name: "single sign-on", via: "sso" },
      action: "user.sign_in_refused",
      targetType: "organization",
      targetId: outcome.reason.orgId,
      data: { reason: outcome.reason.reason, message: outcome.reason.message },
      now: callback.now,
    });
  }
  return outcome;
}

async function checkCallback(
  db: Database,
  env: Env,
  callback: Callback,
): Promise<Result<SignedIn, Refused>> {
  const refuse = (orgId: string | null, reason: string, message: string) =>
    fail<Refused>({ orgId, reason, message });
  if (!callback.state) {
    return refuse(null, "no_state", "the sign-in answer has no state");
  }
  const stateHash = await sha256Hex(callback.state);
  if (callback.cookieState !== callback.state) {
    const known = await findSsoRequest(db, stateHash);
    return refuse(
      known?.orgId ?? null,
      "state_mismatch",
      "this sign-in was not started in this browser (state)",
    );
  }
  const request = await takeSsoRequest(db, stateHash, callback.now);
  if (!request) {
    const known = await findSsoRequest(db, stateHash);
    return refuse(
      known?.orgId ?? null,
      "state_unknown",
      "this sign-in is unknown, expired or already used (state)",
    );
  }
  if (callback.error || !callback.code) {
    const why = (callback.error ?? "no code").slice(0, 100);
    return refuse(request.orgId, "provider_refused", `the provider did not sign you in (${why})`);
  }
  const config = await getSsoConfig(db, request.orgId);
  const keyring = await loadKeyring(env.ENCRYPTION_KEY);
  const secret =
    config && keyring.ok
      ? await open(keyring.value, config.clientSecretCiphertext, secretContext(request.orgId))
      : null;
  if (!config || !secret?.ok) {
    return refuse(request.orgId, "no_sso", "single sign-on is not configured any more");
  }
  let discovered: Awaited<ReturnType<typeof discover>>;
  try {
    discovered = await discover(config.issuer, allowsLoopbackIssuers(env));
  } catch {
    return refuse(
      request.orgId,
      "issuer_unreachable",
      `the provider ${config.issuer} cannot be reached`,
    );
  }
  const client = { clientId: config.clientId, clientSecret: secret.value };
  const grant = {
    code: callback.code,
    redirectUri: callback.redirectUri,
    codeVerifier: request.codeVerifier,
  };
  const idToken = await redeemCode(discovered.document, client, grant);
  if (!idToken.ok) {
    return refuse(request.orgId, idToken.reason.reason, idToken.reason.message);
  }
  const claims = await verifyIdToken(idToken.value, {
    issuer: config.issuer,
    clientId: config.clientId,
    nonce: request.nonce,
    keys: discovered.keys,
  });
  if (!claims.ok) {
    return refuse(request.orgId, claims.reason.reason, claims.reason.message);
  }
  const email = claims.value[config.emailClaim];
  if (typeof email !== "string" || !isEmail(email) || claims.value.email_verified === false) {
    return refuse(
      request.orgId,
      "no_email",
      `the ID token has no verified email in claim ${config.emailClaim}`,
    );
  }
  const name = typeof claims.value.name === "string" ? claims.value.name.slice(0, 200) : "";
  const signedIn = await signInUser(db, {
    orgId: request.orgId,
    email,
    name,
    subject: typeof claims.value.sub === "string" ? claims.value.sub : null,
    method: "sso",
    groups: groupsOf(claims.value[config.groupsClaim]),
    now: callback.now,
  });
  if (!signedIn.ok) {
    return refuse(request.orgId, "user_disabled", `user ${email} is disabled`);
  }
  return ok({ user: signedIn.value.user, next: request.next });
}
