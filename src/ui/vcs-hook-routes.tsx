/**
 * `/ui/vcs-hooks`: the org's VCS hooks and, per hook, its recent deliveries with what each did
 * and the VCS feedback of the runs it queued (posted, or why not). Admins only, like
 * `/api/v1/vcs-hooks`; read-only: hooks and their credentials are set through the API.
 */
import { type Context, Hono } from "hono";
import { valueOrThrow } from "../errors.ts";
import { listDeliveries } from "../vcs/deliveries.ts";
import { getHook, listHooks } from "../vcs/hooks.ts";
import { hasCoordinatorCredential } from "../vcs-feedback/credentials.ts";
import { idOf, viewerOf } from "./forms.ts";
import { Layout, Time } from "./layout.tsx";
import { requireUiPermission, type UiEnv } from "./session.ts";

type Delivery = Awaited<ReturnType<typeof listDeliveries>>[number];

const count = (outcome: Record<string, unknown> | null, key: string) => {
  const list = outcome?.[key];
  return Array.isArray(list) ? list.length : 0;
};

function DeliveryRow(props: { delivery: Delivery; now: number }) {
  const { delivery: d } = props;
  return (
    <tr>
      <td>
        <Time iso={d.receivedAt} now={props.now} />
      </td>
      <td>{d.event}</td>
      <td>
        {String(d.outcome?.status ?? "pending")}: {count(d.outcome, "runs")} queued,{" "}
        {count(d.outcome, "canceled")} canceled, {count(d.outcome, "skipped")} skipped
      </td>
      <td>
        <ul>
          {d.feedback.map((f) => (
            <li>
              <a href={`/ui/runs/${f.runId}`}>{f.runId}</a> {f.kind}:{" "}
              {f.posted ? `posted (${f.state})` : <strong>{f.error ?? "not posted"}</strong>}
            </li>
          ))}
        </ul>
      </td>
    </tr>
  );
}

async function hookPage(c: Context<UiEnv>) {
  const viewer = viewerOf(c);
  const hook = valueOrThrow(
    await getHook(c.var.db, c.var.session.orgId, idOf(c, "hookId", "hook")),
  );
  const deliveries = await listDeliveries(c.var.db, hook.id, 50);
  return c.html(
    <Layout title={`VCS hook ${hook.description || hook.id}`} section="vcs-hooks" viewer={viewer}>
      <p>
        {hook.provider} · {hook.repoUrl ?? "every repository of the organization"} · feedback{" "}
        {hook.feedback}
        {hook.appKeyCiphertext !== null ? ` as GitHub App ${hook.appId ?? ""}` : ""}
        {hook.tokenCiphertext !== null ? " with a token" : ""}
        {hook.feedback === "coordinator" && !hasCoordinatorCredential(hook)
          ? ", but no credential is stored: nothing can be posted"
          : ""}
      </p>
      <h2>Recent deliveries</h2>
      {deliveries.length === 0 ? (
        <p>No delivery yet.</p>
      ) : (
        <table>
          <thead>
            <tr>
              <th scope="col">Received</th>
              <th scope="col">Event</th>
              <th scope="col">Outcome</th>
              <th scope="col">VCS feedback of its runs</th>
            </tr>
          </thead>
          <tbody>
            {deliveries.map((d) => (
              <DeliveryRow delivery={d} now={viewer.now} />
            ))}
          </tbody>
        </table>
      )}
    </Layout>,
  );
}

export const vcsHookPages = new Hono<UiEnv>()
  .use("*", requireUiPermission("vcs_hooks.manage"))
  .get("/", async (c) => {
    const viewer = viewerOf(c);
    const hooks = await listHooks(c.var.db, c.var.session.orgId);
    return c.html(
      <Layout title="VCS hooks" section="vcs-hooks" viewer={viewer}>
        {hooks.length === 0 ? (
          <p>No VCS hook yet: create one with the API (docs/vcs.md).</p>
        ) : (
          <ul>
            {hooks.map((h) => (
              <li>
                <a href={`/ui/vcs-hooks/${h.id}`}>{h.description || h.id}</a> · {h.provider} ·{" "}
                {h.repoUrl ?? "every repository"} · feedback {h.feedback}
              </li>
            ))}
          </ul>
        )}
      </Layout>,
    );
  })
  .get("/:hookId", hookPage);
