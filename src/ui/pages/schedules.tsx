/** A workspace's cron schedules: list with the last occurrence, create, delete. Admin access. */

import { RUN_OPERATIONS } from "@outpost/protocol";
import type { ScheduleView } from "../../schedules/service.ts";
import { Badge, Csrf, Layout, Notice, Time, type Viewer } from "../layout.tsx";

const iso = (ms: number | null) =>
  ms === null || ms >= Number.MAX_SAFE_INTEGER ? null : new Date(ms).toISOString();

export function SchedulesPage(props: {
  viewer: Viewer;
  workspace: { id: string; name: string };
  schedules: ScheduleView[];
  notice?: string | undefined;
}) {
  const base = `/ui/workspaces/${props.workspace.id}/schedules`;
  const { csrf, now } = props.viewer;
  return (
    <Layout
      title={`Schedules of ${props.workspace.name}`}
      section="workspaces"
      viewer={props.viewer}
    >
      <p>
        <a href={`/ui/workspaces/${props.workspace.id}`}>Back to {props.workspace.name}</a>
      </p>
      {props.notice ? <Notice kind="ok">{props.notice}</Notice> : null}
      {props.schedules.length === 0 ? (
        <p class="muted">No schedules.</p>
      ) : (
        <table aria-label="Schedules">
          <thead>
            <tr>
              <th scope="col">Cron</th>
              <th scope="col">Time zone</th>
              <th scope="col">Operation</th>
              <th scope="col">Next</th>
              <th scope="col">Last occurrence</th>
              <th scope="col">Delete</th>
            </tr>
          </thead>
          <tbody>
            {props.schedules.map((s) => (
              <tr>
                <td class="mono">{s.cron}</td>
                <td>{s.timezone}</td>
                <td>{s.operation}</td>
                <td>
                  <Time iso={iso(s.nextRunAt)} now={now} />
                </td>
                <td>
                  {s.lastOccurrence ? (
                    <>
                      <Badge status={s.lastOccurrence.status} />{" "}
                      <Time iso={iso(s.lastOccurrence.occurrenceAt)} now={now} />
                      {s.lastOccurrence.runId ? (
                        <>
                          {" "}
                          <a href={`/ui/runs/${s.lastOccurrence.runId}`}>
                            {s.lastOccurrence.runId}
                          </a>
                        </>
                      ) : null}
                      {s.lastOccurrence.reason ? ` ${s.lastOccurrence.reason}` : null}
                    </>
                  ) : (
                    "-"
                  )}
                </td>
                <td>
                  <form method="post" action={`${base}/${s.id}/delete`} class="inline">
                    <Csrf token={csrf} />
                    <button type="submit">Delete</button>
                  </form>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <form method="post" action={base}>
        <Csrf token={csrf} />
        <fieldset>
          <legend>New schedule</legend>
          <div class="row">
            <div>
              <label for="schedule-cron">Cron (five fields)</label>
              <input
                id="schedule-cron"
                name="cron"
                required
                maxlength={200}
                placeholder="0 6 * * 1-5"
              />
            </div>
            <div>
              <label for="schedule-timezone">Time zone</label>
              <input id="schedule-timezone" name="timezone" value="UTC" maxlength={64} />
            </div>
            <div>
              <label for="schedule-operation">Operation</label>
              <select id="schedule-operation" name="operation">
                {RUN_OPERATIONS.map((o) => (
                  <option value={o}>{o}</option>
                ))}
              </select>
            </div>
            <button type="submit">Create schedule</button>
          </div>
        </fieldset>
      </form>
    </Layout>
  );
}
