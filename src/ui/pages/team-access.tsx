/**
 * The "Team access" section of a workspace's (or, with `base` and `mayManage`, a project's) page:
 * which teams hold which access there.
 */
import { ACCESS_LEVELS } from "../../authz/model.ts";
import { Csrf, type Viewer, viewerMay } from "../layout.tsx";

export type TeamAccessEntry = { teamId: string; teamName: string; access: string };

const LEVEL_WORDS: Record<string, string> = {
  read: "read: see it, its runs, logs, outputs and state metadata",
  plan: "plan: also queue plans and upload configurations",
  write: "write: also confirm, apply, cancel, lock, edit variables, download state",
  admin: "admin: also settings, team access, force-unlock, delete",
};

/** The teams' access, with forms to change it for the workspace's admins. */
export function TeamAccessSection(props: {
  viewer: Viewer;
  workspaceId: string;
  teamAccess: TeamAccessEntry[];
  teams: { id: string; name: string }[];
  /** Where the forms post, when not the workspace's. */
  base?: string;
  /** Whether the viewer manages this access, when not decided on the workspace. */
  mayManage?: boolean;
}) {
  const mayManage = props.mayManage ?? viewerMay(props.viewer, "team_access.manage");
  const base = props.base ?? `/ui/workspaces/${props.workspaceId}/team-access`;
  return (
    <section aria-labelledby="team-access-heading">
      <h2 id="team-access-heading">Team access</h2>
      {props.teamAccess.length === 0 ? (
        <p class="muted">No team has access of its own; organization roles still apply.</p>
      ) : (
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">Team</th>
                <th scope="col">Access</th>
                {mayManage ? <th scope="col">Remove</th> : null}
              </tr>
            </thead>
            <tbody>
              {props.teamAccess.map((entry) => (
                <tr>
                  <td>{entry.teamName}</td>
                  <td>{entry.access}</td>
                  {mayManage ? (
                    <td>
                      <form method="post" action={`${base}/${entry.teamId}/delete`} class="inline">
                        <Csrf token={props.viewer.csrf} />
                        <button type="submit" class="danger">
                          Remove
                        </button>
                      </form>
                    </td>
                  ) : null}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {mayManage && props.teams.length > 0 ? (
        <form method="post" action={base}>
          <Csrf token={props.viewer.csrf} />
          <fieldset>
            <legend>Give a team access</legend>
            <div class="row">
              <div>
                <label for="access-team">Team</label>
                <select id="access-team" name="teamId">
                  {props.teams.map((t) => (
                    <option value={t.id}>{t.name}</option>
                  ))}
                </select>
              </div>
              <div>
                <label for="access-level">Access</label>
                <select id="access-level" name="access">
                  {ACCESS_LEVELS.map((level) => (
                    <option value={level}>{LEVEL_WORDS[level]}</option>
                  ))}
                </select>
              </div>
              <button type="submit">Set access</button>
            </div>
          </fieldset>
        </form>
      ) : null}
    </section>
  );
}
