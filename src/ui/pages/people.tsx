/** The owner's People pages: single sign-on, teams and users; and one team's page. */
import type { presentSso } from "../../sso/model.ts";
import type { presentTeam, presentTeamToken } from "../../teams/model.ts";
import { ROLES } from "../../tokens/model.ts";
import type { presentUser } from "../../users/model.ts";
import { Csrf, Layout, Notice, Secret, Time, type Viewer } from "../layout.tsx";

type Team = ReturnType<typeof presentTeam>;
type User = ReturnType<typeof presentUser>;

function RoleSelect(props: { id: string; value: string | null }) {
  return (
    <select id={props.id} name="organizationRole">
      <option value="" selected={props.value === null}>
        (none: workspace access only)
      </option>
      {ROLES.map((role) => (
        <option value={role} selected={props.value === role}>
          {role}
        </option>
      ))}
    </select>
  );
}

function SsoForm(props: { viewer: Viewer; sso: ReturnType<typeof presentSso> | undefined }) {
  const { sso } = props;
  return (
    <section aria-labelledby="sso-heading">
      <h2 id="sso-heading">Single sign-on</h2>
      <p>
        {sso ? `People sign in through ${sso.issuer}.` : "Single sign-on is off."} Register{" "}
        <span class="mono">/auth/sso/callback</span> on this address as the client's redirect URI.
      </p>
      <form method="post" action="/ui/people/sso">
        <Csrf token={props.viewer.csrf} />
        <fieldset>
          <legend>OpenID Connect provider</legend>
          <label for="sso-issuer">Issuer</label>
          <input id="sso-issuer" name="issuer" required value={sso?.issuer ?? ""} />
          <label for="sso-client">Client id</label>
          <input id="sso-client" name="clientId" required value={sso?.clientId ?? ""} />
          <label for="sso-secret">Client secret</label>
          <input id="sso-secret" name="clientSecret" type="password" required autocomplete="off" />
          <div class="row">
            <div>
              <label for="sso-groups">Groups claim</label>
              <input id="sso-groups" name="groupsClaim" value={sso?.groupsClaim ?? "groups"} />
            </div>
            <div>
              <label for="sso-email">Email claim</label>
              <input id="sso-email" name="emailClaim" value={sso?.emailClaim ?? "email"} />
            </div>
          </div>
          <p>
            <button type="submit">Save sign-on</button>
          </p>
        </fieldset>
      </form>
      {sso ? (
        <form method="post" action="/ui/people/sso/delete">
          <Csrf token={props.viewer.csrf} />
          <button type="submit" class="danger">
            Turn single sign-on off
          </button>
        </form>
      ) : null}
    </section>
  );
}

function TeamsSection(props: { viewer: Viewer; teams: Team[] }) {
  return (
    <section aria-labelledby="teams-heading">
      <h2 id="teams-heading">Teams</h2>
      <div class="table-wrap">
        <table>
          <thead>
            <tr>
              <th scope="col">Team</th>
              <th scope="col">Provider groups</th>
              <th scope="col">Organization role</th>
              <th scope="col">Members</th>
            </tr>
          </thead>
          <tbody>
            {props.teams.map((team) => (
              <tr>
                <td>
                  <a href={`/ui/people/teams/${team.id}`}>{team.name}</a>
                </td>
                <td>{team.idpGroups.join(", ") || <span class="muted">none</span>}</td>
                <td>{team.organizationRole ?? <span class="muted">none</span>}</td>
                <td>{team.memberCount}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <form method="post" action="/ui/people/teams">
        <Csrf token={props.viewer.csrf} />
        <fieldset>
          <legend>Create a team</legend>
          <div class="row">
            <div>
              <label for="team-name">Name</label>
              <input id="team-name" name="name" required maxlength={100} />
            </div>
            <div>
              <label for="team-groups">Provider groups (comma-separated)</label>
              <input id="team-groups" name="idpGroups" />
            </div>
            <div>
              <label for="team-role">Organization role</label>
              <RoleSelect id="team-role" value={null} />
            </div>
            <button type="submit">Create team</button>
          </div>
        </fieldset>
      </form>
    </section>
  );
}

function UsersSection(props: { viewer: Viewer; users: User[] }) {
  return (
    <section aria-labelledby="users-heading">
      <h2 id="users-heading">People</h2>
      {props.users.length === 0 ? <p class="muted">Nobody has signed in yet.</p> : null}
      <div class="table-wrap">
        <table>
          <thead>
            <tr>
              <th scope="col">Email</th>
              <th scope="col">Name</th>
              <th scope="col">Teams</th>
              <th scope="col">Last sign-in</th>
              <th scope="col">Access</th>
            </tr>
          </thead>
          <tbody>
            {props.users.map((user) => (
              <tr>
                <td>{user.email}</td>
                <td>{user.name}</td>
                <td>{user.teams.map((t) => t.name).join(", ")}</td>
                <td>
                  <Time iso={user.lastSignInAt} now={props.viewer.now} />{" "}
                  {user.lastSignInMethod ?? ""}
                </td>
                <td>
                  <form
                    method="post"
                    action={`/ui/people/users/${user.id}/${user.isDisabled ? "enable" : "disable"}`}
                    class="inline"
                  >
                    <Csrf token={props.viewer.csrf} />
                    <button type="submit" class={user.isDisabled ? "secondary" : "danger"}>
                      {user.isDisabled ? "Enable" : "Disable"}
                    </button>
                  </form>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}

export function PeoplePage(props: {
  viewer: Viewer;
  sso: ReturnType<typeof presentSso> | undefined;
  teams: Team[];
  users: User[];
  notice?: string | undefined;
}) {
  return (
    <Layout title="People" section="people" viewer={props.viewer}>
      {props.notice ? <Notice kind="ok">{props.notice}</Notice> : null}
      <SsoForm viewer={props.viewer} sso={props.sso} />
      <TeamsSection viewer={props.viewer} teams={props.teams} />
      <UsersSection viewer={props.viewer} users={props.users} />
    </Layout>
  );
}

type TeamDetail = Team & {
  members: { id: string; email: string; name: string; source: "idp" | "manual" }[];
  workspaces: { workspaceId: string; name: string; access: string }[];
};

export function TeamPage(props: {
  viewer: Viewer;
  team: TeamDetail;
  users: User[];
  tokens: ReturnType<typeof presentTeamToken>[];
  created?: { token: string } | undefined;
  notice?: string | undefined;
}) {
  const { team, viewer } = props;
  const base = `/ui/people/teams/${team.id}`;
  const others = props.users.filter((u) => !team.members.some((m) => m.id === u.id));
  return (
    <Layout title={`Team ${team.name}`} section="people" viewer={viewer}>
      {props.notice ? <Notice kind="ok">{props.notice}</Notice> : null}
      {props.created ? (
        <Secret id="new-token" label="The team token (shown once):" value={props.created.token} />
      ) : null}
      <form method="post" action={base}>
        <Csrf token={viewer.csrf} />
        <fieldset>
          <legend>Settings</legend>
          <label for="team-groups">Provider groups (comma-separated)</label>
          <input id="team-groups" name="idpGroups" value={team.idpGroups.join(", ")} />
          <label for="team-role">Organization role</label>
          <RoleSelect id="team-role" value={team.organizationRole} />
          <p>
            <button type="submit">Save team</button>
          </p>
        </fieldset>
      </form>
      <h2 id="members-heading">Members</h2>
      <ul>
        {team.members.map((m) => (
          <li>
            {m.name ? `${m.name} <${m.email}>` : m.email}{" "}
            <span class="muted">
              ({m.source === "idp" ? "from the provider's groups" : "added by hand"})
            </span>{" "}
            <form method="post" action={`${base}/members/${m.id}/delete`} class="inline">
              <Csrf token={viewer.csrf} />
              <button type="submit" class="danger">
                Remove
              </button>
            </form>
          </li>
        ))}
      </ul>
      {others.length > 0 ? (
        <form method="post" action={`${base}/members`}>
          <Csrf token={viewer.csrf} />
          <label for="member-user">Add a person</label>
          <div class="row">
            <select id="member-user" name="userId">
              {others.map((u) => (
                <option value={u.id}>{u.email}</option>
              ))}
            </select>
            <button type="submit">Add</button>
          </div>
        </form>
      ) : null}
      <h2 id="workspaces-heading">Workspace access</h2>
      <ul>
        {team.workspaces.map((w) => (
          <li>
            <a href={`/ui/workspaces/${w.workspaceId}`}>{w.name}</a>: {w.access}
          </li>
        ))}
      </ul>
      <h2 id="tokens-heading">Team tokens</h2>
      <ul>
        {props.tokens.map((t) => (
          <li>
            {t.description}{" "}
            <span class="muted">
              (last used <Time iso={t.lastUsedAt} now={props.viewer.now} />)
            </span>{" "}
            <form method="post" action={`${base}/tokens/${t.id}/revoke`} class="inline">
              <Csrf token={viewer.csrf} />
              <button type="submit" class="danger">
                Revoke
              </button>
            </form>
          </li>
        ))}
      </ul>
      <form method="post" action={`${base}/tokens`}>
        <Csrf token={viewer.csrf} />
        <label for="token-description">Description</label>
        <div class="row">
          <input id="token-description" name="description" required maxlength={200} />
          <button type="submit">Create token</button>
        </div>
      </form>
      <form method="post" action={`${base}/delete`}>
        <Csrf token={viewer.csrf} />
        <p>
          <button type="submit" class="danger">
            Delete team
          </button>
        </p>
      </form>
    </Layout>
  );
}
