/** Seeds organizations and tokens through the real services (no HTTP, no mocks). */
import { env } from "cloudflare:workers";
import type { AuditActor } from "../../../src/authz/actor.ts";
import { createDb } from "../../../src/db/client.ts";
import { buildDeps, type Deps, systemClock } from "../../../src/deps.ts";
import { createOrganization } from "../../../src/orgs/service.ts";
import type { Role } from "../../../src/tokens/model.ts";
import { createOrgToken, revokeOrgToken } from "../../../src/tokens/service.ts";

export const db = createDb(env.DB);
/** Deps on the real clock, for calling services directly. */
export const deps: Deps = buildDeps(env, systemClock);

/** An org token as the actor of a change made in a test. */
export function tokenActor(id: string): AuditActor {
  return { type: "org-token", id, name: `token ${id}` };
}

let counter = 0;

export type TestOrg = {
  orgId: string;
  ownerToken: string;
  ownerTokenId: string;
  /** Active tokens by role. */
  tokens: Record<Role, string>;
  /** A token of the owner role that has been revoked. */
  revokedToken: string;
};

/** A new organization with one active token per role and one revoked token. */
export async function seedOrg(
  name = `org-${Date.now().toString(36)}-${counter++}`,
): Promise<TestOrg> {
  const created = await createOrganization(deps, {
    name,
    actor: tokenActor("test"),
    onlyIfNone: false,
  });
  if (!created.ok) {
    throw new Error(`seedOrg: ${created.reason.message}`);
  }
  const orgId = created.value.organization.id;
  const owner = created.value.token;
  const make = async (role: Role) =>
    (
      await createOrgToken(deps, {
        orgId,
        role,
        description: `${role} token`,
        actor: tokenActor(owner.id),
      })
    ).token;
  const revoked = await createOrgToken(deps, {
    orgId,
    role: "owner",
    description: "revoked owner",
    actor: tokenActor(owner.id),
  });
  const result = await revokeOrgToken(deps, { orgId, id: revoked.id, actor: tokenActor(owner.id) });
  if (!result.ok) {
    throw new Error(`seedOrg: revoke failed: ${result.reason.message}`);
  }
  return {
    orgId,
    ownerToken: owner.token,
    ownerTokenId: owner.id,
    tokens: {
      owner: owner.token,
      admin: await make("admin"),
      member: await make("member"),
      reader: await make("reader"),
    },
    revokedToken: revoked.token,
  };
}
