/** A pool's scope on its page: which workspaces may run on it, and the form that changes it. */
import { Csrf, type Viewer } from "../layout.tsx";

type Named = { id: string; name: string };

export type PoolScopeView = {
  id: string;
  organizationScoped: boolean;
  allowedWorkspaceIds: string[];
  allowedProjectIds: string[];
};

/** The names of `ids` among `known`; an id not found (not visible) is shown as the id. */
function namesOf(ids: string[], known: Named[]): string[] {
  return ids.map((id) => known.find((k) => k.id === id)?.name ?? id);
}

/** Says who may use the pool; an owner also gets the form (names, one per line). */
export function PoolScopeSection(props: {
  viewer: Viewer;
  pool: PoolScopeView;
  projects: Named[];
  workspaces: Named[];
  canManage: boolean;
}) {
  const { pool } = props;
  const projectNames = namesOf(pool.allowedProjectIds, props.projects);
  const workspaceNames = namesOf(pool.allowedWorkspaceIds, props.workspaces);
  return (
    <section>
      <h2 id="scope-heading">Who may use this pool</h2>
      {pool.organizationScoped ? (
        <p id="pool-scope">Every workspace of the organization.</p>
      ) : (
        <p id="pool-scope">
          Only the workspaces of the projects <strong>{projectNames.join(", ") || "(none)"}</strong>{" "}
          and the workspaces <strong>{workspaceNames.join(", ") || "(none)"}</strong>. Any other
          workspace's runs error instead of reaching the pool.
        </p>
      )}
      {props.canManage ? (
        <form method="post" action={`/ui/pools/${pool.id}/scope`}>
          <Csrf token={props.viewer.csrf} />
          <fieldset>
            <legend>Change the scope (narrowing it errors the waiting runs it leaves out)</legend>
            <label class="check">
              <input
                type="checkbox"
                name="organizationScoped"
                value="on"
                checked={pool.organizationScoped}
              />{" "}
              Every workspace of the organization
            </label>
            <div class="row">
              <div>
                <label for="scope-projects">Else these projects (names, one per line)</label>
                <textarea id="scope-projects" name="projects" rows={3}>
                  {projectNames.join("\n")}
                </textarea>
              </div>
              <div>
                <label for="scope-workspaces">And these workspaces (names, one per line)</label>
                <textarea id="scope-workspaces" name="workspaces" rows={3}>
                  {workspaceNames.join("\n")}
                </textarea>
              </div>
            </div>
            <button type="submit">Save scope</button>
          </fieldset>
        </form>
      ) : null}
    </section>
  );
}
