/** A pool's agent tokens: who issued each (an owner or an OIDC exchange), use, expiry, revoke. */
import type { presentAgentToken } from "../../pools/model.ts";
import { Badge, Time, TypedRevokeForm, type Viewer } from "../layout.tsx";

type AgentToken = ReturnType<typeof presentAgentToken>;

/** Who issued a token: an owner, or an OIDC exchange for the subject it names. */
function IssuedBy(props: { token: AgentToken }) {
  const { oidc } = props.token;
  if (oidc === null) {
    return <span>an owner</span>;
  }
  return (
    <span>
      OIDC <span class="mono">{oidc.subject ?? "(no sub)"}</span>
      <div class="muted mono">{oidc.issuer}</div>
    </span>
  );
}

export function TokenTable(props: {
  viewer: Viewer;
  poolId: string;
  tokens: AgentToken[];
  canManage: boolean;
}) {
  if (props.tokens.length === 0) {
    return <p class="muted">No agent tokens yet.</p>;
  }
  return (
    <table aria-labelledby="tokens-heading">
      <thead>
        <tr>
          <th scope="col">Description</th>
          <th scope="col">Issued by</th>
          <th scope="col">Created</th>
          <th scope="col">Last used</th>
          <th scope="col">Expires</th>
          <th scope="col">Status</th>
          {props.canManage ? <th scope="col">Revoke</th> : null}
        </tr>
      </thead>
      <tbody>
        {props.tokens.map((t) => (
          <tr>
            <td>{t.description}</td>
            <td>
              <IssuedBy token={t} />
            </td>
            <td>
              <Time iso={t.createdAt} now={props.viewer.now} />
            </td>
            <td>
              <Time iso={t.lastUsedAt} now={props.viewer.now} />
            </td>
            <td>
              {t.expiresAt ? (
                <Time iso={t.expiresAt} now={props.viewer.now} />
              ) : (
                <span class="muted">never</span>
              )}
            </td>
            <td>{t.revokedAt ? <Badge status="revoked" /> : <Badge status="active" />}</td>
            {props.canManage ? (
              <td>
                {t.revokedAt ? (
                  <Time iso={t.revokedAt} now={props.viewer.now} />
                ) : (
                  <TypedRevokeForm
                    action={`/ui/pools/${props.poolId}/tokens/${t.id}/revoke`}
                    csrf={props.viewer.csrf}
                    tokenId={t.id}
                    description={t.description}
                  />
                )}
              </td>
            ) : null}
          </tr>
        ))}
      </tbody>
    </table>
  );
}
