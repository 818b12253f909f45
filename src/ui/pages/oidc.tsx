/**
 * Dashboard pieces for OpenID Connect: a pool's trusted issuers (owners only, like the API) and a
 * workspace's workload identity setting (admins).
 */
import { claimLines, type presentTrust } from "../../oidc/trust-model.ts";
import type { Workspace } from "../../workspaces/service.ts";
import { Csrf, Time, type Viewer } from "../layout.tsx";

type Trust = ReturnType<typeof presentTrust>;

function TrustTable(props: { viewer: Viewer; poolId: string; trusts: Trust[] }) {
  if (props.trusts.length === 0) {
    return <p class="muted">No OIDC trusts: agents of this pool log in with agent tokens only.</p>;
  }
  return (
    <table aria-labelledby="trusts-heading">
      <thead>
        <tr>
          <th scope="col">Issuer</th>
          <th scope="col">Audience</th>
          <th scope="col">Claim conditions</th>
          <th scope="col">Description</th>
          <th scope="col">Created</th>
          <th scope="col">Remove</th>
        </tr>
      </thead>
      <tbody>
        {props.trusts.map((t) => (
          <tr data-trust={t.id}>
            <td class="mono">{t.issuer}</td>
            <td class="mono">{t.audience}</td>
            <td class="mono">
              {claimLines(t.claims).map((line) => (
                <div>{line}</div>
              ))}
            </td>
            <td>{t.description}</td>
            <td>
              <Time iso={t.createdAt} now={props.viewer.now} />
            </td>
            <td>
              <form method="post" action={`/ui/pools/${props.poolId}/oidc-trusts/${t.id}/delete`}>
                <Csrf token={props.viewer.csrf} />
                <button type="submit" class="secondary">
                  Remove and revoke its tokens
                </button>
              </form>
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/**
 * The pool's OIDC trusts and the form to add one. Removing a trust revokes the agent tokens it
 * issued, so the button says so.
 */
export function OidcTrustsSection(props: { viewer: Viewer; poolId: string; trusts: Trust[] }) {
  return (
    <section>
      <h2 id="trusts-heading">OIDC trusts</h2>
      <p class="muted">
        An agent that presents a token from a trusted issuer, for the audience, meeting every claim
        condition, gets a short-lived agent token of this pool (POST /agent/v1/oidc/exchange).
      </p>
      <TrustTable viewer={props.viewer} poolId={props.poolId} trusts={props.trusts} />
      <form method="post" action={`/ui/pools/${props.poolId}/oidc-trusts`}>
        <Csrf token={props.viewer.csrf} />
        <fieldset>
          <legend>Trust an OIDC issuer</legend>
          <div class="row">
            <div>
              <label for="trust-issuer">Issuer (the tokens' iss, https)</label>
              <input
                id="trust-issuer"
                name="issuer"
                required
                maxlength={500}
                placeholder="https://token.actions.githubusercontent.com"
              />
            </div>
            <div>
              <label for="trust-audience">Audience (in the tokens' aud)</label>
              <input id="trust-audience" name="audience" required maxlength={500} />
            </div>
            <div>
              <label for="trust-claims">
                Claim conditions: claim=pattern, one a line (* matches anything)
              </label>
              <textarea
                id="trust-claims"
                name="claims"
                required
                rows={3}
                cols={48}
                placeholder="sub=system:serviceaccount:ci:*"
              />
            </div>
            <div>
              <label for="trust-description">Note (what the trust is for)</label>
              <input id="trust-description" name="description" maxlength={200} />
            </div>
            <button type="submit">Add trust</button>
          </div>
        </fieldset>
      </form>
    </section>
  );
}

/** What the workspace's jobs receive, for the facts list. */
export function workloadIdentityText(ws: Workspace): string {
  if (!ws.workloadIdentity) {
    return "off";
  }
  return `on, audience ${ws.workloadIdentityAudience ?? "the issuer URL"}`;
}

/** The workload identity setting of a workspace (admins). */
export function WorkloadIdentityForm(props: { viewer: Viewer; workspace: Workspace }) {
  const ws = props.workspace;
  return (
    <form method="post" action={`/ui/workspaces/${ws.id}/workload-identity`}>
      <Csrf token={props.viewer.csrf} />
      <fieldset>
        <legend>Workload identity</legend>
        <p class="muted">
          Every job but a fork's receives a JWT signed by this coordinator, which AWS, GCP and Azure
          can trust directly for short-lived credentials.
        </p>
        <div class="row">
          <div>
            <label for="wi-enabled">
              <input id="wi-enabled" type="checkbox" name="enabled" checked={ws.workloadIdentity} />{" "}
              Hand jobs a workload identity token
            </label>
          </div>
          <div>
            <label for="wi-audience">Audience (empty: the issuer URL)</label>
            <input
              id="wi-audience"
              name="audience"
              maxlength={500}
              value={ws.workloadIdentityAudience ?? ""}
              placeholder="sts.amazonaws.com"
            />
          </div>
          <button type="submit">Save</button>
        </div>
      </fieldset>
    </form>
  );
}
