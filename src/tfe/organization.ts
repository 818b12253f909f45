/** The organization a `/api/v2/organizations/{name}/…` path names, as the caller may see it. */
import type { Context } from "hono";
import type { PersonPrincipal } from "../authz/principal.ts";
import type { AppEnv } from "../env.ts";
import { ApiError } from "../errors.ts";
import { personOf } from "../middleware/auth.ts";
import { getOrganization } from "../orgs/service.ts";

export type NamedOrganization = { id: string; name: string; createdAt: number };

/**
 * The caller and its organization, when `name` is that organization's name; any other name,
 * another organization's included, is 404 like a missing one (Terraform Cloud names
 * organizations, not ids, in its paths).
 */
export async function organizationOf(
  c: Context<AppEnv>,
  name: string,
): Promise<{ principal: PersonPrincipal; organization: NamedOrganization }> {
  const principal = personOf(c);
  const organization = await getOrganization(c.var.db, principal.orgId);
  if (!organization || organization.name !== name) {
    throw new ApiError("NOT_FOUND", `organization ${name} not found`);
  }
  return { principal, organization };
}

/** The caller's organization's name, for documents of resources addressed by id. */
export async function callerOrganizationName(c: Context<AppEnv>): Promise<string> {
  const organization = await getOrganization(c.var.db, personOf(c).orgId);
  if (!organization) {
    throw new Error("a person's organization is missing");
  }
  return organization.name;
}
