/**
 * A request behind Cloudflare Access: its assertion verified against the team's certificates,
 * audience, issuer and expiry (jose, the key set cached like an issuer's), then the user it names
 * by email signed in (created on first sight, its provider-given teams following the assertion's
 * groups) and returned as the principal. No second login.
 */

import { ok } from "@outpost/common";
import { jwtVerify } from "jose";
import type { UserPrincipal } from "../authz/principal.ts";
import type { Database } from "../db/client.ts";
import { type Outcome, refuse } from "../lib/reason.ts";
import { keySetAt } from "../oidc/discovery.ts";
import { ALLOWED_ALGORITHMS, CLOCK_SKEW_SECONDS, refusalOf } from "../oidc/verify.ts";
import { organizationForAccess } from "../orgs/service.ts";
import { loadUserPrincipal, signInUser } from "../users/service.ts";
import { type AccessSettings, identityOf } from "./model.ts";

/**
 * Why an assertion does not sign anybody in: `rejected` (the assertion fails a check, named in
 * `details.check`), `revoked` (the user is disabled), `unavailable` (no organization takes Access
 * users here).
 */
type AccessRefusal = "rejected" | "revoked" | "unavailable";

/** Verifies an assertion; the identity it names, or the refusal. */
export async function verifyAssertion(
  assertion: string,
  settings: AccessSettings,
): Promise<Outcome<Record<string, unknown>, "rejected">> {
  try {
    const { payload } = await jwtVerify(assertion, keySetAt(settings.certsUrl), {
      issuer: settings.issuer,
      audience: settings.audience,
      algorithms: ALLOWED_ALGORITHMS,
      clockTolerance: CLOCK_SKEW_SECONDS,
      requiredClaims: ["exp"],
    });
    return ok(payload);
  } catch (error) {
    const refusal = refusalOf(error, settings.issuer);
    return refuse("rejected", `the Access assertion: ${refusal.why}`, {
      details: { check: refusal.check },
    });
  }
}

/** The user a verified Access request is, signed in; or why not. */
export async function accessPrincipal(
  db: Database,
  settings: AccessSettings,
  assertion: string,
  now: number,
): Promise<Outcome<UserPrincipal, AccessRefusal>> {
  const verified = await verifyAssertion(assertion, settings);
  if (!verified.ok) {
    return verified;
  }
  const identity = identityOf(verified.value);
  if (!identity) {
    return refuse("rejected", "the Access assertion names no email", {
      details: { check: "no_email" },
    });
  }
  const org = await organizationForAccess(db, settings.organization);
  if (!org) {
    return refuse(
      "unavailable",
      "no organization takes Access users here (set ACCESS_ORGANIZATION)",
    );
  }
  const signedIn = await signInUser(db, {
    orgId: org.id,
    email: identity.email,
    name: identity.name,
    subject: null,
    method: "access",
    groups: identity.groups,
    now,
  });
  if (!signedIn.ok) {
    return signedIn;
  }
  const principal = await loadUserPrincipal(db, signedIn.value.user.id, "access");
  return principal.ok ? principal : refuse("revoked", `user ${identity.email} is disabled`);
}
