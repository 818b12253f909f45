/** Agent pools: the list, and one pool with its agents (live) and its agent tokens. */
import type { Result } from "@outpost/common";
import type { PoolSummary } from "../../../durable/pool-types.ts";
import { installCommands } from "../../agents/install-commands.ts";
import { PUBLIC_URL_UNSET, type PublicOriginProblem } from "../../lib/public-url.ts";
import { count } from "../../lib/words.ts";
import type { presentTrust } from "../../oidc/trust-model.ts";
import type {
  AutoscalingSignal,
  presentAgent,
  presentAgentToken,
  presentPool,
} from "../../pools/model.ts";
import {
  Badge,
  Csrf,
  Layout,
  Notice,
  Secret,
  Time,
  type Viewer,
  viewerHasRole,
} from "../layout.tsx";
import { TokenTable } from "./agent-tokens.tsx";
import { OidcTrustsSection } from "./oidc.tsx";
import { PoolScopeSection } from "./pool-scope.tsx";

type Pool = ReturnType<typeof presentPool>;
type Agent = ReturnType<typeof presentAgent>;
type AgentToken = ReturnType<typeof presentAgentToken>;

type PoolWithSummary = Pool & { summary?: PoolSummary };

/** Agents by status (only the statuses present) and the pool's queue, as words with counts. */
export function PoolCounts(props: { summary: PoolSummary }) {
  const { agents } = props.summary;
  const statuses = (["busy", "idle", "unknown", "errored", "exited"] as const).filter(
    (s) => agents[s] > 0,
  );
  return (
    <div class="pool-counts">
      {statuses.length === 0 ? (
        <span class="muted">no agents</span>
      ) : (
        statuses.map((s) => (
          <span>
            <Badge status={s} /> {agents[s]}
          </span>
        ))
      )}
    </div>
  );
}

function jobsText(summary: PoolSummary): string {
  const queued = `${summary.queuedJobs} queued`;
  return summary.runningJobs > 0 ? `${queued}, ${summary.runningJobs} running` : queued;
}

export function PoolsPage(props: { viewer: Viewer; pools: PoolWithSummary[]; error?: string }) {
  const canManage = viewerHasRole(props.viewer, "owner");
  return (
    <Layout title="Agent pools" section="pools" viewer={props.viewer}>
      {props.error ? <Notice kind="error">{props.error}</Notice> : null}
      {props.pools.length === 0 ? (
        <p class="muted">No agent pools yet.</p>
      ) : (
        <table>
          <caption class="muted">Pools of this organization</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Agents</th>
              <th scope="col">Jobs</th>
              <th scope="col">Description</th>
              <th scope="col">Created</th>
            </tr>
          </thead>
          <tbody>
            {props.pools.map((p) => (
              <tr>
                <td>
                  <a href={`/ui/pools/${p.id}`}>{p.name}</a>
                </td>
                <td>{p.summary ? <PoolCounts summary={p.summary} /> : null}</td>
                <td>{p.summary ? jobsText(p.summary) : null}</td>
                <td>{p.description}</td>
                <td>
                  <Time iso={p.createdAt} now={props.viewer.now} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {canManage ? (
        <form method="post" action="/ui/pools">
          <Csrf token={props.viewer.csrf} />
          <fieldset>
            <legend>New agent pool</legend>
            <div class="row">
              <div>
                <label for="pool-name">Name</label>
                <input id="pool-name" name="name" required maxlength={63} />
              </div>
              <div>
                <label for="pool-description">Description</label>
                <input id="pool-description" name="description" maxlength={500} />
              </div>
              <button type="submit">Create pool</button>
            </div>
          </fieldset>
        </form>
      ) : null}
    </Layout>
  );
}

/** The agents table body; also the fragment the live endpoint answers. */
export function AgentRows(props: { agents: Agent[]; now: number }) {
  if (props.agents.length === 0) {
    return (
      <tr>
        <td colspan={8} class="muted">
          No agents have registered with this pool yet.
        </td>
      </tr>
    );
  }
  return (
    <>
      {props.agents.map((a) => (
        <tr data-agent={a.id}>
          <td>
            {a.name ?? <span class="muted">(unnamed)</span>}
            <div class="muted mono">{a.id}</div>
          </td>
          <td>
            <Badge status={a.status} />
            {a.statusReason ? <div class="muted">{a.statusReason}</div> : null}
          </td>
          <td>
            <Time iso={a.lastContactAt} now={props.now} />
          </td>
          <td class="mono">{a.version}</td>
          <td class="mono">
            {a.os}/{a.arch}
          </td>
          <td data-isolation={a.isolation ?? "unknown"}>
            <Isolation mode={a.isolation} />
          </td>
          <td>
            {a.runningJobs.length === 0 ? (
              <span class="muted">none</span>
            ) : (
              a.runningJobs.map((j) => (
                <div>
                  <a class="mono" href={`/ui/runs/${j.jobId.split(":")[0] ?? ""}`}>
                    {j.jobId}
                  </a>{" "}
                  ({j.state})
                </div>
              ))
            )}
          </td>
          <td>{a.capacity}</td>
        </tr>
      ))}
    </>
  );
}

/** How an agent confines its jobs: unsandboxed agents stand out, they expose the agent token. */
function Isolation(props: { mode: Agent["isolation"] }) {
  if (props.mode === "bwrap") {
    return <span title="each job process runs in a bubblewrap sandbox">sandboxed (bwrap)</span>;
  }
  if (props.mode === "none") {
    return <strong title="jobs can read the agent token and each other's files">none</strong>;
  }
  return <span class="muted">not reported</span>;
}

export type CreatedToken = { description: string; token: string };

/**
 * How to run an agent with the new token: install script, systemd or a container, on the
 * deployment's public address (never the request's Host); without one, what to set instead.
 */
function InstallPanel(props: { address: Result<string, PublicOriginProblem>; token: string }) {
  if (!props.address.ok) {
    return <p>{PUBLIC_URL_UNSET}.</p>;
  }
  const commands = installCommands(props.address.value, props.token);
  return (
    <>
      <p>
        Start an agent on a host with Node.js 22.15 or newer; the install script comes from this
        coordinator and checks the SHA-256 of everything it downloads.
      </p>
      <Secret id="install-script" label="Install and run" value={commands.script} />
      <Secret id="install-systemd" label="As a systemd service (root)" value={commands.systemd} />
      <Secret id="install-container" label="In a container" value={commands.container} />
    </>
  );
}

export function PoolPage(props: {
  viewer: Viewer;
  pool: Pool;
  agents: Agent[];
  workspaces: { id: string; name: string; allowed: boolean }[];
  /** The projects and workspaces the viewer sees, to name the pool's scope. */
  scopeNames: {
    projects: { id: string; name: string }[];
    workspaces: { id: string; name: string }[];
  };
  /** The pool's autoscaling signal now; null if it could not be read. */
  autoscaling: AutoscalingSignal | null;
  /** Agent tokens: null unless the viewer is an owner, like `GET /api/v1/pools/{id}/tokens`. */
  tokens: AgentToken[] | null;
  /** OIDC trusts: null unless the viewer is an owner, like `GET /api/v1/pools/{id}/oidc-trusts`. */
  trusts: ReturnType<typeof presentTrust>[] | null;
  /** Where the install commands download from: the deployment's `PUBLIC_URL`. */
  address: Result<string, PublicOriginProblem>;
  created?: CreatedToken | undefined;
  notice?: string | undefined;
  error?: string | undefined;
}) {
  const { pool } = props;
  const canManage = viewerHasRole(props.viewer, "owner");
  return (
    <Layout title={`Pool ${pool.name}`} section="pools" viewer={props.viewer}>
      {props.error ? <Notice kind="error">{props.error}</Notice> : null}
      {props.notice ? <Notice kind="ok">{props.notice}</Notice> : null}
      {props.created ? (
        <Notice kind="ok">
          <p>
            Agent token <strong>{props.created.description}</strong> created. Copy it now: it is
            shown only once.
          </p>
          <Secret id="new-token" label="Token" value={props.created.token} />
          <InstallPanel address={props.address} token={props.created.token} />
        </Notice>
      ) : null}
      <p>{pool.description}</p>
      <dl class="facts">
        <dt>Id</dt>
        <dd class="mono">{pool.id}</dd>
        <dt>Unknown after</dt>
        <dd>{pool.unknownAfterSeconds} s without contact</dd>
        <dt>Errored after</dt>
        <dd>{pool.erroredAfterSeconds} s unknown</dd>
        <dt>OIDC-issued tokens</dt>
        <dd>live at most {pool.maxTokenExpirationSeconds} s</dd>
        <dt>Autoscaling</dt>
        <dd data-autoscaling>
          {pool.minAgents} to {pool.maxAgents} agents, {count(pool.jobsPerAgent, "job")} per agent
          {props.autoscaling ? (
            <div class="muted">
              wants {count(props.autoscaling.desiredAgents, "agent")} now (
              {props.autoscaling.queuedJobs} queued, {props.autoscaling.runningJobs} running)
            </div>
          ) : null}
        </dd>
        <dt>Workspaces</dt>
        <dd>
          {props.workspaces.length === 0 ? (
            <span class="muted">none</span>
          ) : (
            props.workspaces.map((w, i) => (
              <>
                {i > 0 ? ", " : ""}
                <a href={`/ui/workspaces/${w.id}`}>{w.name}</a>
                {w.allowed ? null : <strong> (not allowed by the scope)</strong>}
              </>
            ))
          )}
        </dd>
      </dl>
      <PoolScopeSection
        viewer={props.viewer}
        pool={pool}
        projects={props.scopeNames.projects}
        workspaces={props.scopeNames.workspaces}
        canManage={canManage}
      />
      <section data-live={`/ui/pools/${pool.id}/live.json`} data-interval="1500">
        <h2 id="agents-heading">Agents</h2>
        <table aria-labelledby="agents-heading">
          <thead>
            <tr>
              <th scope="col">Agent</th>
              <th scope="col">Status</th>
              <th scope="col">Last contact</th>
              <th scope="col">Version</th>
              <th scope="col">Platform</th>
              <th scope="col">Isolation</th>
              <th scope="col">Running job</th>
              <th scope="col">Capacity</th>
            </tr>
          </thead>
          <tbody id="agents" aria-live="polite">
            <AgentRows agents={props.agents} now={props.viewer.now} />
          </tbody>
        </table>
      </section>
      {props.tokens !== null && canManage ? (
        <>
          <h2 id="tokens-heading">Agent tokens</h2>
          <TokenTable
            viewer={props.viewer}
            poolId={pool.id}
            tokens={props.tokens}
            canManage={canManage}
          />
        </>
      ) : null}
      {canManage ? (
        <form method="post" action={`/ui/pools/${pool.id}/tokens`}>
          <Csrf token={props.viewer.csrf} />
          <fieldset>
            <legend>New agent token</legend>
            <div class="row">
              <div>
                <label for="token-description">Description</label>
                <input id="token-description" name="description" required maxlength={200} />
              </div>
              <button type="submit">Create token</button>
            </div>
          </fieldset>
        </form>
      ) : null}
      {props.trusts !== null && canManage ? (
        <OidcTrustsSection viewer={props.viewer} poolId={pool.id} trusts={props.trusts} />
      ) : null}
    </Layout>
  );
}
