/**
 * The sign-in itself: `startSignIn` records the PKCE verifier and nonce under the SHA-256 of a
 * fresh `state` and sends the browser to the provider; `finishSignIn` takes that record once (a
 * replayed callback finds nothing), redeems the code, verifies the ID token, and signs the user
 * in. Every refusal names its check and is audited when the organization is known.
 */

import { fail, newId, ok, type Result } from "@outpost/common";
import type { JWTPayload } from "jose";
import { auditQuery } from "../audit/service.ts";
import type { Database } from "../db/client.ts";
import { sha256Hex } from "../lib/crypto.ts";
import { loadKeyring, open } from "../lib/encryption.ts";
import { type Discovered, discover } from "../oidc/discovery.ts";
import { allowsLoopbackIssuers } from "../oidc/trust-service.ts";
import { getOrganizationByName } from "../orgs/service.ts";
import { isEmail } from "../users/model.ts";
import type { UserRow } from "../users/queries.ts";
import { signInUser } from "../users/service.ts";
import {
  authorizationUrl,
  codeChallenge,
  groupsOf,
  randomToken,
  SSO_REQUEST_TTL_MS,
} from "./model.ts";
import {
  deleteExpiredSsoRequestsQuery,
  findSsoRequest,
  getSsoConfig,
  insertSsoRequestQuery,
  type SsoConfigRow,
  takeSsoRequest,
} from "./queries.ts";
import {
  redeemCode,
  refuseSignIn,
  type SignInKind,
  type SignInRefusal,
  verifyIdToken,
} from "./relying-party.ts";
import { secretContext } from "./service.ts";

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
    return refuseSignIn(
      "not_found",
      "no_sso",
      `organization ${input.orgName} has no single sign-on`,
    );
  }
  let endpoint: string | null;
  try {
    endpoint = (await discover(config.issuer, allowsLoopbackIssuers(env), input.now)).document
      .authorizationEndpoint;
  } catch {
    endpoint = null;
  }
  if (!endpoint) {
    return refuseSignIn(
      "unavailable",
      "issuer_unreachable",
      `the provider ${config.issuer} cannot be reached`,
    );
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
      data: { reason: outcome.reason.check, message: outcome.reason.message },
      now: callback.now,
    });
  }
  return outcome;
}

type Refuse = (kind: SignInKind, check: string, message: string) => { ok: false; reason: Refused };

/** The sign-in a callback belongs to, taken once, if it came back to the browser that started it. */
async function takeRequest(db: Database, callback: Callback) {
  const refuse = (orgId: string | null, check: string, message: string) =>
    fail<Refused>({ ...refuseSignIn("invalid", check, message).reason, orgId });
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
  return ok(request);
}

/** The org's settings with the opened client secret and the provider's discovery, or why not. */
async function providerOf(
  db: Database,
  env: Env,
  target: { orgId: string; now: number },
  refuse: Refuse,
) {
  const { orgId } = target;
  const config = await getSsoConfig(db, orgId);
  const keyring = await loadKeyring(env.ENCRYPTION_KEY);
  const secret =
    config && keyring.ok
      ? await open(keyring.value, config.clientSecretCiphertext, secretContext(orgId))
      : null;
  if (!config || !secret?.ok) {
    return refuse("not_found", "no_sso", "single sign-on is not configured any more");
  }
  try {
    const discovered = await discover(config.issuer, allowsLoopbackIssuers(env), target.now);
    return ok({ config, clientSecret: secret.value, discovered });
  } catch {
    return refuse(
      "unavailable",
      "issuer_unreachable",
      `the provider ${config.issuer} cannot be reached`,
    );
  }
}

/** The verified ID token's claims for this sign-in, or the check that failed. */
async function idTokenClaims(
  provider: { config: SsoConfigRow; clientSecret: string; discovered: Discovered },
  grant: { code: string; redirectUri: string; codeVerifier: string; nonce: string; now: number },
): Promise<Result<JWTPayload, Refused>> {
  const { config, discovered } = provider;
  const client = { clientId: config.clientId, clientSecret: provider.clientSecret };
  const idToken = await redeemCode(discovered.document, client, grant);
  if (!idToken.ok) {
    return fail<Refused>({ ...idToken.reason, orgId: provider.config.orgId });
  }
  const claims = await verifyIdToken(idToken.value, {
    issuer: config.issuer,
    clientId: config.clientId,
    nonce: grant.nonce,
    keys: discovered.keys,
    now: grant.now,
  });
  return claims.ok ? claims : fail<Refused>({ ...claims.reason, orgId: provider.config.orgId });
}

async function checkCallback(
  db: Database,
  env: Env,
  callback: Callback,
): Promise<Result<SignedIn, Refused>> {
  const request = await takeRequest(db, callback);
  if (!request.ok) {
    return request;
  }
  const { orgId, codeVerifier, nonce, next } = request.value;
  const refuse: Refuse = (kind, check, message) =>
    fail<Refused>({ ...refuseSignIn(kind, check, message).reason, orgId });
  if (callback.error || !callback.code) {
    return refuse(
      "rejected",
      "provider_refused",
      `the provider did not sign you in (${(callback.error ?? "no code").slice(0, 100)})`,
    );
  }
  const provider = await providerOf(db, env, { orgId, now: callback.now }, refuse);
  if (!provider.ok) {
    return provider;
  }
  const grant = {
    code: callback.code,
    redirectUri: callback.redirectUri,
    codeVerifier,
    nonce,
    now: callback.now,
  };
  const claims = await idTokenClaims(provider.value, grant);
  if (!claims.ok) {
    return claims;
  }
  const { emailClaim, groupsClaim } = provider.value.config;
  const email = claims.value[emailClaim];
  if (typeof email !== "string" || !isEmail(email) || claims.value.email_verified === false) {
    return refuse(
      "rejected",
      "no_email",
      `the ID token has no verified email in claim ${emailClaim}`,
    );
  }
  const signedIn = await signInUser(db, {
    orgId,
    email,
    name: typeof claims.value.name === "string" ? claims.value.name.slice(0, 200) : "",
    subject: typeof claims.value.sub === "string" ? claims.value.sub : null,
    method: "sso",
    groups: groupsOf(claims.value[groupsClaim]),
    now: callback.now,
  });
  return signedIn.ok
    ? ok({ user: signedIn.value.user, next })
    : refuse("revoked", "user_disabled", `user ${email} is disabled`);
}
