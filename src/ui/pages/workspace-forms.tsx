/**
 * The workspace forms: create, configure every setting, delete, upload a configuration, queue a
 * run (saying which configuration it uses), and the backend block a local-mode workspace copies.
 */
import { ENGINES } from "@outpost/protocol";
import type { ConfigurationVersion } from "../../configuration-versions/service.ts";
import type { EngineVersionOffer } from "../../pools/engine-versions.ts";
import type { presentPool } from "../../pools/model.ts";
import type { Workspace } from "../../workspaces/service.ts";
import { Csrf, Time, type Viewer } from "../layout.tsx";
import { EngineVersionLists } from "./engine-versions.tsx";

type Pool = ReturnType<typeof presentPool>;
type Project = { id: string; name: string };

/** What the settings forms offer to choose from: pools, projects, engine versions. */
export type SettingsChoices = {
  pools: Pool[];
  projects: Project[];
  engineVersions: EngineVersionOffer[];
};

/** Every setting the dashboard edits; `ws` absent means a new workspace (the defaults). */
function SettingsFields(props: { ws?: Workspace } & SettingsChoices) {
  const { ws } = props;
  const prefix = ws ? "cfg" : "new";
  const engine = ws?.engine ?? "terraform";
  return (
    <>
      <div class="row">
        <div>
          <label for={`${prefix}-name`}>Name</label>
          <input id={`${prefix}-name`} name="name" required maxlength={90} value={ws?.name ?? ""} />
        </div>
        <div>
          <label for={`${prefix}-project`}>Project</label>
          <select id={`${prefix}-project`} name="project">
            {ws ? null : <option value="">(default project)</option>}
            {props.projects.map((p) => (
              <option value={p.id} selected={p.id === ws?.projectId}>
                {p.name}
              </option>
            ))}
          </select>
        </div>
        <div>
          <label for={`${prefix}-description`}>Description</label>
          <input
            id={`${prefix}-description`}
            name="description"
            maxlength={2000}
            value={ws?.description ?? ""}
          />
        </div>
      </div>
      <div class="row">
        <div>
          <label for={`${prefix}-mode`}>Execution mode</label>
          <select id={`${prefix}-mode`} name="executionMode">
            <option value="agent" selected={ws?.executionMode !== "local"}>
              agent (runs on the pool)
            </option>
            <option value="local" selected={ws?.executionMode === "local"}>
              local (state only)
            </option>
          </select>
        </div>
        <div>
          <label for={`${prefix}-pool`}>Agent pool</label>
          <select id={`${prefix}-pool`} name="pool">
            <option value="">(none)</option>
            {props.pools.map((p) => (
              <option value={p.id} selected={p.id === ws?.poolId}>
                {p.name}
              </option>
            ))}
          </select>
        </div>
        <div>
          <label for={`${prefix}-engine`}>Engine</label>
          <select id={`${prefix}-engine`} name="engine" data-version-input={`${prefix}-version`}>
            {ENGINES.map((e) => (
              <option value={e} selected={e === engine}>
                {e}
              </option>
            ))}
          </select>
        </div>
        <div>
          <label for={`${prefix}-version`}>Engine version</label>
          <input
            id={`${prefix}-version`}
            name="engineVersion"
            maxlength={64}
            placeholder="latest, 1.9.5 or ~> 1.9"
            list={`${prefix}-versions-${engine}`}
            data-list-prefix={`${prefix}-versions-`}
            aria-describedby={`${prefix}-version-hint`}
            value={ws?.engineVersion ?? ""}
          />
          <EngineVersionLists prefix={prefix} offers={props.engineVersions} />
          <p class="muted" id={`${prefix}-version-hint`}>
            {props.engineVersions.length === 0
              ? "No agent has reported engine versions yet: type latest, a version or a constraint."
              : `Suggested: latest, a constraint, or a version the pools' agents reported (${props.engineVersions.length} in all, from their mirror, cache or PATH); any other version or constraint is accepted too.`}
          </p>
        </div>
        <div>
          <label for={`${prefix}-stack`}>Pulumi stack</label>
          <input
            id={`${prefix}-stack`}
            name="stackName"
            maxlength={300}
            placeholder="Pulumi only, e.g. dev"
            value={ws?.stackName ?? ""}
          />
        </div>
      </div>
      <div class="row">
        <div>
          <label for={`${prefix}-workdir`}>Working directory</label>
          <input
            id={`${prefix}-workdir`}
            name="workingDirectory"
            maxlength={500}
            placeholder="(the root)"
            value={ws?.workingDirectory ?? ""}
          />
        </div>
        <div>
          <label>
            <input type="checkbox" name="autoApply" checked={ws?.autoApply ?? false} /> Auto-apply a
            successful plan
          </label>
        </div>
      </div>
      <div class="row">
        <div>
          <label for={`${prefix}-repo`}>VCS repository URL</label>
          <input
            id={`${prefix}-repo`}
            name="vcsRepoUrl"
            maxlength={2000}
            placeholder="https://git.example.com/team/infra.git"
            value={ws?.vcsRepoUrl ?? ""}
          />
        </div>
        <div>
          <label for={`${prefix}-branch`}>VCS branch</label>
          <input
            id={`${prefix}-branch`}
            name="vcsBranch"
            maxlength={255}
            placeholder="(the default branch)"
            value={ws?.vcsBranch ?? ""}
          />
        </div>
        <div>
          <label for={`${prefix}-paths`}>VCS trigger paths (comma-separated)</label>
          <input
            id={`${prefix}-paths`}
            name="vcsTriggerPaths"
            maxlength={10000}
            value={(ws?.vcsTriggerPaths ?? []).join(", ")}
          />
        </div>
      </div>
    </>
  );
}

/** Creates a workspace (organization admins). */
export function CreateWorkspaceForm(props: { viewer: Viewer } & SettingsChoices) {
  return (
    <form method="post" action="/ui/workspaces" class="stack">
      <Csrf token={props.viewer.csrf} />
      <fieldset>
        <legend>Create a workspace</legend>
        <SettingsFields
          pools={props.pools}
          projects={props.projects}
          engineVersions={props.engineVersions}
        />
        <button type="submit">Create workspace</button>
      </fieldset>
    </form>
  );
}

/** Changes every setting of the workspace (its admins). */
export function ConfigureWorkspaceForm(
  props: { viewer: Viewer; workspace: Workspace } & SettingsChoices,
) {
  return (
    <form method="post" action={`/ui/workspaces/${props.workspace.id}/configure`}>
      <Csrf token={props.viewer.csrf} />
      <fieldset>
        <legend>Settings</legend>
        <SettingsFields
          ws={props.workspace}
          pools={props.pools}
          projects={props.projects}
          engineVersions={props.engineVersions}
        />
        <button type="submit">Save settings</button>
      </fieldset>
    </form>
  );
}

/** Deletes the workspace once its name is typed again (its admins). */
export function DeleteWorkspaceForm(props: { viewer: Viewer; workspace: Workspace }) {
  const ws = props.workspace;
  return (
    <form method="post" action={`/ui/workspaces/${ws.id}/delete`}>
      <Csrf token={props.viewer.csrf} />
      <fieldset>
        <legend>Delete this workspace</legend>
        <p class="muted">
          Its variables, configurations, runs and state go with it. Refused while a run is active or
          it is locked.
        </p>
        <div class="row">
          <div>
            <label for="delete-confirm">Type {ws.name} to confirm</label>
            <input id="delete-confirm" name="confirm" required maxlength={200} />
          </div>
          <button type="submit" class="danger">
            Delete workspace
          </button>
        </div>
      </fieldset>
    </form>
  );
}

/** One configuration version in words: where it came from, when, and its digest. */
export function configurationLabel(cv: ConfigurationVersion): string {
  const origin =
    cv.source === "upload"
      ? "uploaded"
      : `${cv.branch ?? "commit"} @ ${(cv.commitSha ?? "").slice(0, 10)}`;
  return `${cv.id} (${origin}, sha256 ${(cv.sha256 ?? "").slice(0, 12)})`;
}

/** Queues a run, saying which configuration it will use (the newest unless another is chosen). */
export function QueueRunForm(props: {
  viewer: Viewer;
  workspace: Workspace;
  configurations: ConfigurationVersion[];
}) {
  const [latest] = props.configurations;
  return (
    <form method="post" action={`/ui/workspaces/${props.workspace.id}/runs`}>
      <Csrf token={props.viewer.csrf} />
      <fieldset>
        <legend>Queue a run</legend>
        {latest ? (
          <p id="run-configuration-note">
            Uses the newest configuration, {configurationLabel(latest)}, from{" "}
            <Time iso={latest.createdAt} now={props.viewer.now} />, unless you choose another.
          </p>
        ) : (
          <p class="muted" id="run-configuration-note">
            No configuration yet: upload one{props.workspace.vcsRepoUrl ? " or push a commit" : ""}{" "}
            first.
          </p>
        )}
        <div class="row">
          <div>
            <label for="run-operation">Operation</label>
            <select id="run-operation" name="operation">
              <option value="apply">plan and apply</option>
              <option value="plan">plan only (speculative)</option>
              <option value="destroy">destroy</option>
              <option value="refresh">refresh (record drift only)</option>
            </select>
          </div>
          {props.configurations.length > 1 ? (
            <div>
              <label for="run-configuration">Configuration</label>
              <select id="run-configuration" name="configurationVersionId">
                {props.configurations.map((cv) => (
                  <option value={cv.id}>{configurationLabel(cv)}</option>
                ))}
              </select>
            </div>
          ) : null}
          <div>
            <label for="run-message">Message</label>
            <input id="run-message" name="message" maxlength={2000} />
          </div>
          <button type="submit" disabled={!latest}>
            Queue run
          </button>
        </div>
      </fieldset>
    </form>
  );
}

/** The `backend "http"` block a local-mode workspace's configuration copies. */
export function BackendBlock(props: { workspace: Workspace; origin: string }) {
  const address = `${props.origin}/state/v1/${props.workspace.id}`;
  const block = [
    "terraform {",
    '  backend "http" {',
    `    address        = "${address}"`,
    `    lock_address   = "${address}"`,
    `    unlock_address = "${address}"`,
    '    username       = "terraform"',
    "    # The password is an Outpost org token: export TF_HTTP_PASSWORD=op_org_…",
    "  }",
    "}",
  ].join("\n");
  return (
    <section aria-labelledby="backend-heading">
      <h2 id="backend-heading">Backend block</h2>
      <p class="muted">
        Runs of this local-mode workspace happen on your machine; copy this into its configuration
        and run terraform init.
      </p>
      <pre class="log" id="backend-block">
        {block}
      </pre>
    </section>
  );
}
