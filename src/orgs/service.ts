/** Organizations: the first one via bootstrap, further ones only where the deployment allows. */

import { newId, ok } from "@outpost/common";
import { eq } from "drizzle-orm";
import type { AuditActor } from "../authz/actor.ts";
import type { Database } from "../db/client.ts";
import { organizations, orgTokens } from "../db/schema.ts";
import type { Deps } from "../deps.ts";
import { type Outcome, refuse } from "../lib/reason.ts";
import { DEFAULT_PROJECT_DESCRIPTION, DEFAULT_PROJECT_NAME } from "../projects/model.ts";
import { generateToken, hashToken } from "../tokens/model.ts";

export type CreatedOrganization = {
  organization: { id: string; name: string; createdAt: string };
  token: { id: string; role: "owner"; description: string; token: string };
};

/**
 * Creates an organization with an owner token and its default project, atomically. With `onlyIfNone`, the insert is
 * conditional on no organization existing, inside the same batch, so two racing bootstraps
 * cannot both succeed. Refused `conflict`: the deployment is already bootstrapped
 * (`onlyIfNone`), or the name is taken.
 */
export async function createOrganization(
  deps: Deps,
  input: { name: string; actor: AuditActor; onlyIfNone: boolean },
): Promise<Outcome<CreatedOrganization, "conflict">> {
  const { db } = deps;
  // Bootstrapping into a deployment that has any organization is what is refused.
  const taken = () =>
    refuse(
      "conflict",
      input.onlyIfNone
        ? "this deployment is already bootstrapped"
        : `an organization named ${input.name} exists`,
    );
  const existing = await db.query.organizations.findFirst({
    where: eq(organizations.name, input.name),
  });
  if (existing) {
    return taken();
  }
  const now = deps.now();
  const orgId = newId("org");
  const tokenId = newId("orgToken");
  const secret = generateToken("org");
  const tokenHash = await hashToken(secret);
  const description = "owner token created with the organization";
  const d1 = db.$client;
  const guard = input.onlyIfNone
    ? "NOT EXISTS (SELECT 1 FROM organizations)"
    : "NOT EXISTS (SELECT 1 FROM organizations WHERE name = ?3)";
  const orgExists = "EXISTS (SELECT 1 FROM organizations WHERE id = ?1)";
  // Raw statements: drizzle's batch takes no INSERT … SELECT … WHERE, and the guard must sit in
  // the same transaction as the inserts it protects.
  await d1.batch([
    d1
      .prepare(`INSERT INTO organizations (id, name, created_at) SELECT ?1, ?3, ?2 WHERE ${guard}`)
      .bind(orgId, now, input.name),
    d1
      .prepare(
        `INSERT INTO org_tokens (id, org_id, role, description, token_hash, created_by, created_at)
         SELECT ?2, ?1, 'owner', ?3, ?4, ?5, ?6 WHERE ${orgExists}`,
      )
      .bind(orgId, tokenId, description, tokenHash, input.actor.id, now),
    d1
      .prepare(
        `INSERT INTO audit_events (id, org_id, actor, actor_type, actor_name, actor_via, action, target_type, target_id, data, created_at)
         SELECT ?2, ?1, ?3, ?6, ?7, ?8, 'organization.create', 'organization', ?1, ?4, ?5 WHERE ${orgExists}`,
      )
      .bind(
        orgId,
        newId("event"),
        input.actor.id,
        JSON.stringify({ name: input.name }),
        now,
        input.actor.type,
        input.actor.name,
        input.actor.via ?? null,
      ),
    d1
      .prepare(
        `INSERT INTO projects (id, org_id, name, description, is_default, created_at, updated_at)
         SELECT ?2, ?1, ?3, ?4, true, ?5, ?5 WHERE ${orgExists}`,
      )
      .bind(orgId, newId("project"), DEFAULT_PROJECT_NAME, DEFAULT_PROJECT_DESCRIPTION, now),
  ]);
  const token = await db.query.orgTokens.findFirst({ where: eq(orgTokens.id, tokenId) });
  if (!token) {
    // The guard refused the insert: someone else got there first; nothing was written.
    return taken();
  }
  return ok({
    organization: { id: orgId, name: input.name, createdAt: new Date(now).toISOString() },
    token: { id: tokenId, role: "owner", description, token: secret },
  });
}

export function getOrganization(db: Database, id: string) {
  return db.query.organizations.findFirst({ where: eq(organizations.id, id) });
}

export function getOrganizationByName(db: Database, name: string) {
  return db.query.organizations.findFirst({ where: eq(organizations.name, name) });
}

/**
 * The organization people arriving through Cloudflare Access belong to: the one named, or else
 * the deployment's only organization (none when there are several and none is named).
 */
export async function organizationForAccess(db: Database, name: string | null) {
  if (name !== null) {
    return getOrganizationByName(db, name);
  }
  const rows = await db.select().from(organizations).limit(2);
  return rows.length === 1 ? rows[0] : undefined;
}
