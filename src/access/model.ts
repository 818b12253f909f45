/**
 * Cloudflare Access, pure: the deployment's settings and what a verified assertion says. With
 * `ACCESS_TEAM_DOMAIN` and `ACCESS_AUD` set, the `Cf-Access-Jwt-Assertion` header Access adds to
 * every request it let through is a signed JWT (RS256) from `https://<team domain>`, for the
 * application's AUD tag, whose keys are at `https://<team domain>/cdn-cgi/access/certs`.
 */
import { issuerProblem } from "../oidc/trust-model.ts";

export const ACCESS_HEADER = "cf-access-jwt-assertion";

export type AccessSettings = {
  issuer: string;
  audience: string;
  certsUrl: string;
  /** The organization Access users belong to (by name); null: the deployment's only one. */
  organization: string | null;
};

type AccessEnv = Partial<
  Pick<
    Env,
    | "ACCESS_TEAM_DOMAIN"
    | "ACCESS_AUD"
    | "ACCESS_CERTS_URL"
    | "ACCESS_ORGANIZATION"
    | "OIDC_ALLOW_LOOPBACK_ISSUERS"
  >
>;

/**
 * The deployment's Access settings, or null when Access is not configured (either variable
 * empty). `ACCESS_CERTS_URL` replaces the certificate URL only for a loopback http URL on a
 * deployment that allows loopback issuers (tests), the same rule as for pool trusts.
 */
export function accessSettings(env: AccessEnv): AccessSettings | null {
  const domain = (env.ACCESS_TEAM_DOMAIN ?? "")
    .trim()
    .replace(/^https:\/\//, "")
    .replace(/\/+$/, "");
  const audience = (env.ACCESS_AUD ?? "").trim();
  if (domain === "" || audience === "" || !/^[A-Za-z0-9.-]+$/.test(domain)) {
    return null;
  }
  const issuer = `https://${domain}`;
  const override = (env.ACCESS_CERTS_URL ?? "").trim();
  const isLoopbackOverride =
    override.startsWith("http://") &&
    issuerProblem(override, env.OIDC_ALLOW_LOOPBACK_ISSUERS === "true") === null;
  return {
    issuer,
    audience,
    certsUrl: isLoopbackOverride ? override : `${issuer}/cdn-cgi/access/certs`,
    organization: (env.ACCESS_ORGANIZATION ?? "").trim() || null,
  };
}

/** Who an assertion names: the email (the user's identity), a name if any, its groups. */
export type AccessIdentity = { email: string; name: string; groups: string[] | null };

function stringsOf(value: unknown): string[] | null {
  if (!Array.isArray(value)) {
    return null;
  }
  // Access lists groups as names, or as objects with a name (identity endpoint form).
  return value
    .map((item) =>
      typeof item === "string"
        ? item
        : typeof item === "object" && item !== null && "name" in item
          ? String((item as { name: unknown }).name)
          : null,
    )
    .filter((item): item is string => item !== null && item !== "");
}

/**
 * The identity in verified claims: `email`, `name` if present, and groups from `groups` or
 * `custom.groups` (identity-provider claims Access passes through); null groups when neither is
 * there, so memberships from groups are then left as they are.
 */
export function identityOf(claims: Record<string, unknown>): AccessIdentity | null {
  if (typeof claims.email !== "string" || claims.email === "") {
    return null;
  }
  const custom = claims.custom as Record<string, unknown> | undefined;
  return {
    email: claims.email,
    name: typeof claims.name === "string" ? claims.name : "",
    groups: stringsOf(claims.groups) ?? stringsOf(custom?.groups),
  };
}
