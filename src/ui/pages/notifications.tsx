/**
 * A workspace's notification configurations: list, create (the signing secret shown once),
 * enable and disable, send a test delivery, the last deliveries of each, delete. Admin access,
 * as in the API.
 */

import type { NotificationTrigger } from "../../events/model.ts";
import { NOTIFICATION_TRIGGERS } from "../../events/model.ts";
import type { presentDelivery, presentNotification } from "../../notifications/service.ts";
import { Badge, Csrf, Layout, Notice, Secret, Time, type Viewer } from "../layout.tsx";

type Config = ReturnType<typeof presentNotification>;
type Delivery = ReturnType<typeof presentDelivery>;

/** The form field of a trigger's checkbox. */
export const triggerField = (trigger: NotificationTrigger) => `trigger:${trigger}`;

function PostButton(props: { action: string; csrf: string; label: string }) {
  return (
    <form method="post" action={props.action} class="inline">
      <Csrf token={props.csrf} />
      <button type="submit">{props.label}</button>
    </form>
  );
}

function Deliveries(props: { deliveries: Delivery[]; now: number }) {
  if (props.deliveries.length === 0) {
    return <p class="muted">No deliveries yet.</p>;
  }
  return (
    <table aria-label="Deliveries">
      <thead>
        <tr>
          <th scope="col">Delivery</th>
          <th scope="col">Trigger</th>
          <th scope="col">Status</th>
          <th scope="col">Answer</th>
          <th scope="col">Attempts</th>
          <th scope="col">Created</th>
          <th scope="col">Error</th>
        </tr>
      </thead>
      <tbody>
        {props.deliveries.map((d) => (
          <tr>
            <td class="mono">{d.id}</td>
            <td>{d.trigger}</td>
            <td>
              <Badge status={d.status} />
            </td>
            <td>{d.responseStatus ?? "-"}</td>
            <td>{d.attempts}</td>
            <td>
              <Time iso={d.createdAt} now={props.now} />
            </td>
            <td>{d.error ?? ""}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function NotificationsPage(props: {
  viewer: Viewer;
  workspace: { id: string; name: string };
  configs: { config: Config; deliveries: Delivery[] }[];
  created?: { name: string; secret: string } | undefined;
  verified?: Delivery | undefined;
  notice?: string | undefined;
}) {
  const base = `/ui/workspaces/${props.workspace.id}/notifications`;
  const csrf = props.viewer.csrf;
  return (
    <Layout
      title={`Notifications of ${props.workspace.name}`}
      section="workspaces"
      viewer={props.viewer}
    >
      <p>
        <a href={`/ui/workspaces/${props.workspace.id}`}>Back to {props.workspace.name}</a>
      </p>
      {props.notice ? <Notice kind="ok">{props.notice}</Notice> : null}
      {props.created ? (
        <Notice kind="ok">
          <p>
            Notification <strong>{props.created.name}</strong> created. Copy its signing secret now:
            it is shown only once.
          </p>
          <Secret id="new-secret" label="Signing secret" value={props.created.secret} />
        </Notice>
      ) : null}
      {props.verified ? (
        <Notice kind={props.verified.status === "delivered" ? "ok" : "error"}>
          Test delivery {props.verified.status}
          {props.verified.responseStatus === null ? "" : ` (${props.verified.responseStatus})`}
          {props.verified.error ? `: ${props.verified.error}` : "."}
        </Notice>
      ) : null}
      {props.configs.length === 0 ? <p class="muted">No notification configurations.</p> : null}
      {props.configs.map(({ config, deliveries }) => (
        <section aria-label={`Notification ${config.name}`}>
          <h2>
            {config.name} <Badge status={config.enabled ? "enabled" : "disabled"} />
          </h2>
          <p>
            {config.destinationType} · <span class="mono">{config.url}</span> ·{" "}
            {config.triggers.length > 0 ? config.triggers.join(", ") : "no triggers"}
          </p>
          <div class="row">
            <PostButton
              action={`${base}/${config.id}/${config.enabled ? "disable" : "enable"}`}
              csrf={csrf}
              label={config.enabled ? "Disable" : "Enable"}
            />
            <PostButton action={`${base}/${config.id}/verify`} csrf={csrf} label="Send test" />
            <PostButton action={`${base}/${config.id}/delete`} csrf={csrf} label="Delete" />
          </div>
          <Deliveries deliveries={deliveries} now={props.viewer.now} />
        </section>
      ))}
      <form method="post" action={base}>
        <Csrf token={csrf} />
        <fieldset>
          <legend>New notification</legend>
          <div class="row">
            <div>
              <label for="notification-name">Name</label>
              <input id="notification-name" name="name" required maxlength={100} />
            </div>
            <div>
              <label for="notification-url">URL</label>
              <input id="notification-url" name="url" type="url" required maxlength={2000} />
            </div>
            <div>
              <label for="notification-type">Destination</label>
              <select id="notification-type" name="destinationType">
                <option value="generic">generic (Standard Webhooks)</option>
                <option value="slack">slack</option>
                <option value="microsoft-teams">microsoft-teams</option>
              </select>
            </div>
          </div>
          <div class="row">
            {NOTIFICATION_TRIGGERS.map((t) => (
              <label>
                <input type="checkbox" name={triggerField(t)} /> {t}
              </label>
            ))}
          </div>
          <button type="submit">Create notification</button>
        </fieldset>
      </form>
    </Layout>
  );
}
