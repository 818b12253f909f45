/** `outpost outputs`: a workspace's current outputs, printed as `terraform output` prints them. */
import { must } from "../api.ts";
import type { components } from "../api-types.ts";
import { command } from "../args.ts";
import { CLI_EXIT } from "../errors.ts";
import { json } from "../output.ts";
import { workspaceId } from "./state-lookup.ts";

type Outputs = components["schemas"]["StateOutputs"];

/** A value as Terraform prints it: strings quoted, numbers and bools bare, the rest as JSON. */
function render(value: unknown): string {
  return typeof value === "string"
    ? JSON.stringify(value)
    : (JSON.stringify(value, null, 2) ?? "null");
}

/** `name = "value"` lines in name order; sensitive values hidden as `<sensitive>` unless revealed. */
export function terraformOutputLines(outputs: Outputs): string[] {
  return Object.entries(outputs.outputs)
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(
      ([name, o]) =>
        `${name} = ${o.sensitive && !outputs.isRevealed ? "<sensitive>" : render(o.value)}\n`,
    );
}

/** `outpost outputs WORKSPACE`: the current outputs, as `terraform output` shows them. */
export const outputs = command(
  {
    summary: "print a workspace's current outputs (sensitive ones hidden unless --reveal)",
    options: {
      reveal: { type: "boolean", description: "show sensitive values (admins; audited)" },
    },
    positionals: ["WORKSPACE"],
    required: 1,
  },
  async (ctx, { values, positionals }) => {
    const api = await ctx.api();
    const wsId = await workspaceId(api, positionals[0] ?? "");
    const current = await must(
      api.client.GET("/api/v1/workspaces/{workspaceId}/outputs", {
        params: {
          path: { workspaceId: wsId },
          query: values.reveal ? { reveal: "true" } : {},
        },
      }),
    );
    if (values.json) {
      ctx.out.write(json(current.outputs));
      return CLI_EXIT.ok;
    }
    const lines = terraformOutputLines(current);
    ctx.out.write(lines.join(""));
    if (lines.length === 0) {
      ctx.err.write(
        current.stateVersionId === null ? "The workspace has no state yet\n" : "No outputs\n",
      );
    }
    return CLI_EXIT.ok;
  },
);
