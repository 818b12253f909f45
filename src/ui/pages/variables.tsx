/** Variables: a workspace's table and form, and what a run gets with each value's source. */
import type { EffectiveVariable } from "../../variables/effective.ts";
import type { VariableSource } from "../../variables/precedence.ts";
import type { Variable } from "../../variables/service.ts";
import { Csrf, type Viewer } from "../layout.tsx";

/**
 * The variables of a workspace or a variable set (`base` is its dashboard path); a sensitive
 * value is never rendered, only described as write-only. Delete buttons only for `mayEdit`.
 */
export function VariablesTable(props: {
  viewer: Viewer;
  base: string;
  variables: Variable[];
  mayEdit: boolean;
  labelledBy: string;
}) {
  if (props.variables.length === 0) {
    return <p class="muted">No variables.</p>;
  }
  return (
    <table aria-labelledby={props.labelledBy}>
      <thead>
        <tr>
          <th scope="col">Key</th>
          <th scope="col">Category</th>
          <th scope="col">Value</th>
          <th scope="col">Description</th>
          {props.mayEdit ? <th scope="col">Delete</th> : null}
        </tr>
      </thead>
      <tbody>
        {props.variables.map((v) => (
          <tr>
            <td class="mono">{v.key}</td>
            <td>{v.category}</td>
            <td class="mono">
              {v.sensitive ? <span class="muted">sensitive (write-only)</span> : v.value}
              {v.hcl ? <span class="muted"> (HCL)</span> : null}
            </td>
            <td>{v.description}</td>
            {props.mayEdit ? (
              <td>
                <form
                  method="post"
                  action={`${props.base}/vars/${v.category}/${encodeURIComponent(v.key)}/delete`}
                >
                  <Csrf token={props.viewer.csrf} />
                  <button
                    type="submit"
                    class="danger"
                    aria-label={`Delete ${v.category} variable ${v.key}`}
                  >
                    Delete
                  </button>
                </form>
              </td>
            ) : null}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/**
 * Sets (creates or replaces) a variable of the workspace or set at `base`; a sensitive value can
 * be written, never read. `idPrefix` keeps the fields' ids unique on the page.
 */
export function VariableForm(props: { viewer: Viewer; base: string; idPrefix: string }) {
  const id = (field: string) => `${props.idPrefix}-${field}`;
  return (
    <form method="post" action={`${props.base}/vars`}>
      <Csrf token={props.viewer.csrf} />
      <fieldset>
        <legend>Set a variable (replaces one with the same key and category)</legend>
        <div class="row">
          <div>
            <label for={id("key")}>Key</label>
            <input id={id("key")} name="key" required maxlength={128} />
          </div>
          <div>
            <label for={id("value")}>Value</label>
            <input id={id("value")} name="value" autocomplete="off" />
          </div>
          <div>
            <label for={id("category")}>Category</label>
            <select id={id("category")} name="category">
              <option value="terraform">terraform</option>
              <option value="env">env</option>
            </select>
          </div>
          <div>
            <label for={id("description")}>Description</label>
            <input id={id("description")} name="description" maxlength={500} />
          </div>
          <label class="check">
            <input type="checkbox" name="sensitive" value="on" /> Sensitive
          </label>
          <label class="check">
            <input type="checkbox" name="hcl" value="on" /> HCL
          </label>
          <button type="submit">Save variable</button>
        </div>
      </fieldset>
    </form>
  );
}

/** Where a variable comes from, as words: the workspace, or which set and how it reaches it. */
export function SourceText(props: { source: VariableSource }) {
  const s = props.source;
  if (s.type === "workspace") {
    return <span>workspace</span>;
  }
  const how = { global: "global", project: "through the project", workspace: "applied here" }[
    s.scope
  ];
  return (
    <span>
      {s.priority ? "priority " : ""}set <a href={`/ui/variable-sets/${s.id}`}>{s.name}</a> ({how})
    </span>
  );
}

/**
 * What a run of the workspace gets, by the same merge the job lease uses, each with its source;
 * a sensitive value is never rendered.
 */
export function EffectiveVariablesTable(props: { variables: EffectiveVariable[] }) {
  if (props.variables.length === 0) {
    return <p class="muted">A run gets no variables.</p>;
  }
  return (
    <table aria-labelledby="effective-heading">
      <thead>
        <tr>
          <th scope="col">Key</th>
          <th scope="col">Category</th>
          <th scope="col">Value</th>
          <th scope="col">Source</th>
        </tr>
      </thead>
      <tbody>
        {props.variables.map((v) => (
          <tr>
            <td class="mono">{v.key}</td>
            <td>{v.category}</td>
            <td class="mono">
              {v.sensitive ? <span class="muted">sensitive (write-only)</span> : v.value}
            </td>
            <td>
              <SourceText source={v.source} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
