/** Org tokens: list, create (secret shown once), revoke. Owners only, as in the API. */

import { ROLES } from "../../tokens/model.ts";
import type { presentOrgToken } from "../../tokens/service.ts";
import {
  Badge,
  Csrf,
  Layout,
  Notice,
  Secret,
  Time,
  TypedRevokeForm,
  type Viewer,
} from "../layout.tsx";

type OrgToken = ReturnType<typeof presentOrgToken>;

export function TokensPage(props: {
  viewer: Viewer;
  tokens: OrgToken[];
  created?: { description: string; token: string } | undefined;
  notice?: string | undefined;
  error?: string | undefined;
}) {
  return (
    <Layout title="Org tokens" section="tokens" viewer={props.viewer}>
      {props.error ? <Notice kind="error">{props.error}</Notice> : null}
      {props.notice ? <Notice kind="ok">{props.notice}</Notice> : null}
      {props.created ? (
        <Notice kind="ok">
          <p>
            Token <strong>{props.created.description}</strong> created. Copy it now: it is shown
            only once.
          </p>
          <Secret id="new-token" label="Token" value={props.created.token} />
        </Notice>
      ) : null}
      <table>
        <thead>
          <tr>
            <th scope="col">Description</th>
            <th scope="col">Role</th>
            <th scope="col">Created</th>
            <th scope="col">Last used</th>
            <th scope="col">Status</th>
            <th scope="col">Revoke</th>
          </tr>
        </thead>
        <tbody>
          {props.tokens.map((t) => (
            <tr>
              <td>{t.description}</td>
              <td>{t.role}</td>
              <td>
                <Time iso={t.createdAt} now={props.viewer.now} />
              </td>
              <td>
                <Time iso={t.lastUsedAt} now={props.viewer.now} />
              </td>
              <td>{t.revokedAt ? <Badge status="revoked" /> : <Badge status="active" />}</td>
              <td>
                {t.revokedAt ? (
                  <Time iso={t.revokedAt} now={props.viewer.now} />
                ) : (
                  <TypedRevokeForm
                    action={`/ui/tokens/${t.id}/revoke`}
                    csrf={props.viewer.csrf}
                    tokenId={t.id}
                    description={t.description}
                  />
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <form method="post" action="/ui/tokens">
        <Csrf token={props.viewer.csrf} />
        <fieldset>
          <legend>New org token</legend>
          <div class="row">
            <div>
              <label for="org-token-description">Description</label>
              <input id="org-token-description" name="description" required maxlength={200} />
            </div>
            <div>
              <label for="org-token-role">Role</label>
              <select id="org-token-role" name="role">
                {ROLES.map((r) => (
                  <option value={r} selected={r === "member"}>
                    {r}
                  </option>
                ))}
              </select>
            </div>
            <button type="submit">Create token</button>
          </div>
        </fieldset>
      </form>
    </Layout>
  );
}
