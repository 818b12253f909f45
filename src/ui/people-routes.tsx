/**
 * `/ui/people`: the owner's pages for single sign-on, teams (members, mapped groups, tokens) and
 * users. The same services and the same `may` as `/api/v1/organization/sso`, `/api/v1/teams` and
 * `/api/v1/users`.
 */
import { z } from "@hono/zod-openapi";
import { type Context, Hono } from "hono";
import { actorOf } from "../authz/principal.ts";
import { reasonError, valueOrThrow } from "../errors.ts";
import { PutSso } from "../sso/model.ts";
import { deleteSso, putSso, showSso } from "../sso/service.ts";
import { teamNotFound } from "../teams/model.ts";
import {
  createTeam,
  deleteMember,
  deleteTeam,
  listTeams,
  putMember,
  showTeam,
  updateTeam,
} from "../teams/service.ts";
import { createTeamToken, listTeamTokens, revokeTeamToken } from "../teams/tokens.ts";
import { ROLES } from "../tokens/model.ts";
import { listUsers, setUserDisabled } from "../users/service.ts";
import { idOf, noticeText, readForm, redirectWithNotice, viewerOf } from "./forms.ts";
import { PeoplePage, TeamPage } from "./pages/people.tsx";
import { requireUiPermission, type UiEnv } from "./session.ts";

const NOTICES = {
  "sso-saved": "Single sign-on saved.",
  "sso-deleted": "Single sign-on is off.",
  "team-saved": "Team saved.",
  "team-deleted": "Team deleted.",
  "user-saved": "User saved.",
  "member-added": "Member added.",
  "member-removed": "Member removed.",
  "token-revoked": "Token revoked.",
};

const Groups = z
  .string()
  .max(10_000)
  .default("")
  .transform((text) =>
    text
      .split(",")
      .map((g) => g.trim())
      .filter((g) => g !== ""),
  );
const Role = z
  .union([z.literal(""), z.enum(ROLES)])
  .transform((role) => (role === "" ? null : role));

const ctxOf = (c: Context<UiEnv>) => ({
  orgId: c.var.session.orgId,
  actor: actorOf(c.var.session.principal),
  now: c.var.deps.now(),
});

async function renderTeam(c: Context<UiEnv>, teamId: string, created?: { token: string }) {
  const { orgId } = c.var.session;
  const [team, users, tokens] = await Promise.all([
    showTeam(c.var.db, orgId, teamId),
    listUsers(c.var.db, orgId),
    listTeamTokens(c.var.db, orgId, teamId, c.var.deps.now()),
  ]);
  if (!team || !tokens.ok) {
    throw reasonError(teamNotFound(teamId).reason);
  }
  const page = (
    <TeamPage
      viewer={viewerOf(c)}
      team={team}
      users={users}
      tokens={tokens.value}
      created={created}
      notice={noticeText(c, NOTICES)}
    />
  );
  return c.html(page, created ? 201 : 200);
}

async function setDisabled(c: Context<UiEnv>, disabled: boolean) {
  await readForm(c, z.strictObject({}));
  const userId = idOf(c, "userId", "usr");
  valueOrThrow(await setUserDisabled(c.var.db, { ...ctxOf(c), userId, disabled }));
  return redirectWithNotice(c, "/ui/people", "user-saved");
}

export const peoplePages = new Hono<UiEnv>()
  .use("*", requireUiPermission("teams.manage"))
  .get("/", async (c) => {
    const { orgId } = c.var.session;
    const [sso, teams, users] = await Promise.all([
      showSso(c.var.db, orgId),
      listTeams(c.var.db, orgId),
      listUsers(c.var.db, orgId),
    ]);
    return c.html(
      <PeoplePage
        viewer={viewerOf(c)}
        sso={sso}
        teams={teams}
        users={users}
        notice={noticeText(c, NOTICES)}
      />,
    );
  })
  .post("/sso", async (c) => {
    const form = await readForm(c, PutSso);
    valueOrThrow(await putSso(c.var.db, c.env, ctxOf(c), form));
    return redirectWithNotice(c, "/ui/people", "sso-saved");
  })
  .post("/sso/delete", async (c) => {
    await readForm(c, z.strictObject({}));
    await deleteSso(c.var.db, ctxOf(c));
    return redirectWithNotice(c, "/ui/people", "sso-deleted");
  })
  .post("/users/:userId/disable", (c) => setDisabled(c, true))
  .post("/users/:userId/enable", (c) => setDisabled(c, false))
  .post("/teams", async (c) => {
    const form = await readForm(
      c,
      z.strictObject({
        name: z.string().trim().min(1).max(100),
        idpGroups: Groups,
        organizationRole: Role,
      }),
    );
    const team = valueOrThrow(await createTeam(c.var.db, ctxOf(c), form));
    return redirectWithNotice(c, `/ui/people/teams/${team.id}`, "team-saved");
  })
  .get("/teams/:teamId", (c) => renderTeam(c, idOf(c, "teamId", "team")))
  .post("/teams/:teamId", async (c) => {
    const form = await readForm(c, z.strictObject({ idpGroups: Groups, organizationRole: Role }));
    const teamId = idOf(c, "teamId", "team");
    valueOrThrow(await updateTeam(c.var.db, ctxOf(c), teamId, form));
    return redirectWithNotice(c, `/ui/people/teams/${teamId}`, "team-saved");
  })
  .post("/teams/:teamId/delete", async (c) => {
    await readForm(c, z.strictObject({}));
    const teamId = idOf(c, "teamId", "team");
    await deleteTeam(c.var.db, ctxOf(c), teamId);
    return redirectWithNotice(c, "/ui/people", "team-deleted");
  })
  .post("/teams/:teamId/members", async (c) => {
    const form = await readForm(
      c,
      z.strictObject({ userId: z.string().regex(/^usr_[a-z2-7]{26}$/) }),
    );
    const teamId = idOf(c, "teamId", "team");
    valueOrThrow(await putMember(c.var.db, ctxOf(c), { teamId, userId: form.userId }));
    return redirectWithNotice(c, `/ui/people/teams/${teamId}`, "member-added");
  })
  .post("/teams/:teamId/members/:userId/delete", async (c) => {
    await readForm(c, z.strictObject({}));
    const teamId = idOf(c, "teamId", "team");
    const userId = idOf(c, "userId", "usr");
    await deleteMember(c.var.db, ctxOf(c), { teamId, userId });
    return redirectWithNotice(c, `/ui/people/teams/${teamId}`, "member-removed");
  })
  .post("/teams/:teamId/tokens", async (c) => {
    const form = await readForm(
      c,
      z.strictObject({ description: z.string().trim().min(1).max(200) }),
    );
    const teamId = idOf(c, "teamId", "team");
    const created = await createTeamToken(c.var.db, ctxOf(c), {
      teamId,
      description: form.description,
      expiresInSeconds: null,
    });
    return renderTeam(c, teamId, { token: valueOrThrow(created).token });
  })
  .post("/teams/:teamId/tokens/:tokenId/revoke", async (c) => {
    await readForm(c, z.strictObject({}));
    const teamId = idOf(c, "teamId", "team");
    const tokenId = idOf(c, "tokenId", "ttok");
    await revokeTeamToken(c.var.db, ctxOf(c), { teamId, tokenId });
    return redirectWithNotice(c, `/ui/people/teams/${teamId}`, "token-revoked");
  });
