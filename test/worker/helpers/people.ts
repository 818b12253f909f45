/**
 * People in Worker tests: users signed in through the real service (as an SSO sign-in would),
 * teams, memberships, workspace and project team access, personal and team tokens, and browser
 * sessions.
 */
import type { AccessLevel } from "../../../src/authz/model.ts";
import { putProjectTeamAccess } from "../../../src/projects/team-access.ts";
import { sessionSettings } from "../../../src/sessions/model.ts";
import { startSession } from "../../../src/sessions/service.ts";
import { putTeamAccess } from "../../../src/teams/access.ts";
import { createTeam, putMember } from "../../../src/teams/service.ts";
import { createTeamToken } from "../../../src/teams/tokens.ts";
import type { Role } from "../../../src/tokens/model.ts";
import { signInUser } from "../../../src/users/service.ts";
import { createUserToken } from "../../../src/users/tokens.ts";
import { db, type TestOrg, tokenActor } from "./fixtures.ts";

let counter = 0;

export type TestUser = { userId: string; email: string; token: string; tokenId: string };
export type TestTeam = { teamId: string; name: string; token: string };

/** What the helpers need of an org: its id and an owner token to act as. */
type OrgRef = Pick<TestOrg, "orgId" | "ownerTokenId">;

const ctx = (org: OrgRef) => ({
  orgId: org.orgId,
  actor: tokenActor(org.ownerTokenId),
  now: Date.now(),
});

/** A user signed in once through SSO (with `groups`), holding a personal token. */
export async function seedUser(
  org: TestOrg,
  options: { email?: string; name?: string; groups?: string[] | null } = {},
): Promise<TestUser> {
  const email = options.email ?? `person-${counter++}-${Date.now().toString(36)}@example.com`;
  const signedIn = await signInUser(db, {
    orgId: org.orgId,
    email,
    name: options.name ?? "",
    subject: `sub-${email}`,
    method: "sso",
    groups: options.groups ?? null,
    now: Date.now(),
  });
  if (!signedIn.ok) {
    throw new Error(`seedUser: ${signedIn.reason}`);
  }
  const user = signedIn.value.user;
  const token = await createUserToken(db, {
    orgId: org.orgId,
    userId: user.id,
    description: "test token",
    expiresInSeconds: null,
    actor: { type: "user", id: user.id, name: email },
    now: Date.now(),
  });
  return { userId: user.id, email, token: token.token, tokenId: token.id };
}

/** A team of the org with one team token. */
export async function seedTeam(
  org: OrgRef,
  options: { role?: Role | null; groups?: string[]; name?: string } = {},
): Promise<TestTeam> {
  const name = options.name ?? `team-${counter++}-${Date.now().toString(36)}`;
  const created = await createTeam(db, ctx(org), {
    name,
    idpGroups: options.groups ?? [],
    organizationRole: options.role ?? null,
  });
  if (!created.ok) {
    throw new Error(`seedTeam: ${created.reason}`);
  }
  const token = await createTeamToken(db, ctx(org), {
    teamId: created.value.id,
    description: "ci",
    expiresInSeconds: null,
  });
  if (!token.ok) {
    throw new Error("seedTeam: token");
  }
  return { teamId: created.value.id, name, token: token.value.token };
}

/** Makes the user a member of the team by hand. */
export async function addMember(org: TestOrg, team: TestTeam, user: TestUser): Promise<void> {
  const added = await putMember(db, ctx(org), { teamId: team.teamId, userId: user.userId });
  if (!added.ok) {
    throw new Error(`addMember: ${added.reason}`);
  }
}

/** Gives the team `level` access to the workspace. */
export async function grant(
  org: TestOrg,
  workspace: { id: string; name?: string },
  team: TestTeam,
  level: AccessLevel,
): Promise<void> {
  const put = await putTeamAccess(db, ctx(org), {
    workspace: { id: workspace.id, name: workspace.name ?? workspace.id },
    teamId: team.teamId,
    access: level,
  });
  if (!put.ok) {
    throw new Error(`grant: ${put.reason}`);
  }
}

/** A user in a new team holding `level` on the workspace (and no organization role). */
export async function personWithAccess(
  org: TestOrg,
  workspace: { id: string },
  level: AccessLevel | null,
): Promise<{ user: TestUser; team: TestTeam }> {
  const [user, team] = await Promise.all([seedUser(org), seedTeam(org)]);
  await addMember(org, team, user);
  if (level !== null) {
    await grant(org, workspace, team, level);
  }
  return { user, team };
}

/** Gives the team `level` access to the project (and so to each of its workspaces). */
export async function grantProject(
  org: TestOrg,
  project: { id: string; name?: string },
  team: TestTeam,
  level: AccessLevel,
): Promise<void> {
  const put = await putProjectTeamAccess(db, ctx(org), {
    project: { id: project.id, name: project.name ?? project.id },
    teamId: team.teamId,
    access: level,
  });
  if (!put.ok) {
    throw new Error(`grantProject: ${put.reason.message}`);
  }
}

/** A user in a new team holding `level` on the project (and no organization role). */
export async function personWithProjectAccess(
  org: TestOrg,
  project: { id: string },
  level: AccessLevel | null,
): Promise<{ user: TestUser; team: TestTeam }> {
  const [user, team] = await Promise.all([seedUser(org), seedTeam(org)]);
  await addMember(org, team, user);
  if (level !== null) {
    await grantProject(org, project, team, level);
  }
  return { user, team };
}

/** A browser session of the user, as its cookie header value. */
export async function sessionCookieOf(
  org: TestOrg,
  user: TestUser,
  method: "sso" | "access" = "sso",
): Promise<string> {
  const started = await startSession(
    db,
    { kind: "user", orgId: org.orgId, userId: user.userId, method },
    sessionSettings({}),
    Date.now(),
  );
  return `outpost_session=${started.secret}`;
}
