/**
 * Projects: the list with each project's workspaces, and one project with its workspaces, team
 * access (which counts on every workspace in it) and the variable sets that reach it.
 */
import type { Project } from "../../projects/model.ts";
import type { VariableSetRow } from "../../varsets/model.ts";
import { Csrf, Layout, Notice, type Viewer } from "../layout.tsx";
import { type TeamAccessEntry, TeamAccessSection } from "./team-access.tsx";

type Named = { id: string; name: string };

function WorkspaceLinks(props: { workspaces: Named[] }) {
  if (props.workspaces.length === 0) {
    return <span class="muted">none</span>;
  }
  return (
    <>
      {props.workspaces.map((w, i) => (
        <>
          {i > 0 ? ", " : ""}
          <a href={`/ui/workspaces/${w.id}`}>{w.name}</a>
        </>
      ))}
    </>
  );
}

export function ProjectsPage(props: {
  viewer: Viewer;
  projects: { project: Project; workspaces: Named[] }[];
  mayCreate: boolean;
  error?: string | undefined;
}) {
  return (
    <Layout title="Projects" section="projects" viewer={props.viewer}>
      {props.error ? <Notice kind="error">{props.error}</Notice> : null}
      <table>
        <thead>
          <tr>
            <th scope="col">Project</th>
            <th scope="col">Workspaces</th>
            <th scope="col">Description</th>
          </tr>
        </thead>
        <tbody>
          {props.projects.map(({ project, workspaces }) => (
            <tr>
              <td>
                <a href={`/ui/projects/${project.id}`}>{project.name}</a>
                {project.isDefault ? <span class="muted"> (default)</span> : null}
              </td>
              <td>
                <WorkspaceLinks workspaces={workspaces} />
                {project.workspaceCount > workspaces.length ? (
                  <span class="muted"> and {project.workspaceCount - workspaces.length} more</span>
                ) : null}
              </td>
              <td>{project.description}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {props.mayCreate ? (
        <form method="post" action="/ui/projects">
          <Csrf token={props.viewer.csrf} />
          <fieldset>
            <legend>New project</legend>
            <div class="row">
              <div>
                <label for="project-name">Name</label>
                <input id="project-name" name="name" required maxlength={90} />
              </div>
              <div>
                <label for="project-description">Description</label>
                <input id="project-description" name="description" maxlength={1000} />
              </div>
              <button type="submit">Create project</button>
            </div>
          </fieldset>
        </form>
      ) : null}
    </Layout>
  );
}

export function ProjectPage(props: {
  viewer: Viewer;
  project: Project;
  workspaces: Named[];
  teamAccess: TeamAccessEntry[];
  teams: Named[];
  mayManageAccess: boolean;
  variableSets: VariableSetRow[];
  notice?: string | undefined;
}) {
  const { project } = props;
  return (
    <Layout title={`Project ${project.name}`} section="projects" viewer={props.viewer}>
      {props.notice ? <Notice kind="ok">{props.notice}</Notice> : null}
      <p>{project.description}</p>
      <dl class="facts">
        <dt>Id</dt>
        <dd class="mono">{project.id}</dd>
        <dt>Workspaces</dt>
        <dd>
          <WorkspaceLinks workspaces={props.workspaces} />
        </dd>
      </dl>
      <h2 id="sets-heading">Variable sets that reach its workspaces</h2>
      {props.variableSets.length === 0 ? (
        <p class="muted">None.</p>
      ) : (
        <ul aria-labelledby="sets-heading">
          {props.variableSets.map((s) => (
            <li>
              <a href={`/ui/variable-sets/${s.id}`}>{s.name}</a>
              {s.global ? " (global)" : " (applied to this project)"}
              {s.priority ? ", priority" : ""}
            </li>
          ))}
        </ul>
      )}
      <TeamAccessSection
        viewer={props.viewer}
        workspaceId=""
        base={`/ui/projects/${project.id}/team-access`}
        mayManage={props.mayManageAccess}
        teamAccess={props.teamAccess}
        teams={props.teams}
      />
    </Layout>
  );
}
