/**
 * `outpost state list` and `outpost state show`: the resources in a workspace's state, as
 * `terraform state list` and `terraform state show ADDRESS` print them.
 */
import { stateInstances } from "@outpost/protocol";
import { must, seg } from "../api.ts";
import { command } from "../args.ts";
import { CLI_EXIT, UsageError } from "../errors.ts";
import { json } from "../output.ts";
import { pickVersion, workspaceId } from "./state-lookup.ts";

export const list = command(
  {
    summary: "list the resource addresses in a workspace's state (default: the current version)",
    options: {
      version: { type: "string", description: "a state version's id or serial instead" },
    },
    positionals: ["WORKSPACE"],
    required: 1,
  },
  async (ctx, { values, positionals }) => {
    const api = await ctx.api();
    const wsId = await workspaceId(api, positionals[0] ?? "");
    const version = await pickVersion(api, wsId, values.version);
    const answer = await must(
      api.client.GET("/api/v1/workspaces/{workspaceId}/state-versions/{stateVersionId}/resources", {
        params: { path: { workspaceId: wsId, stateVersionId: version.id } },
      }),
    );
    ctx.out.write(
      values.json ? json(answer.resources) : answer.resources.map((r) => `${r.address}\n`).join(""),
    );
    return CLI_EXIT.ok;
  },
);

/** `"a"`, `80`, `true`, or indented JSON for lists and objects, like Terraform's rendering. */
function render(value: unknown, indent: string): string {
  if (typeof value === "string") {
    return JSON.stringify(value);
  }
  const text = JSON.stringify(value, null, 4) ?? "null";
  return text.replace(/\n/g, `\n${indent}`);
}

/** Attribute names Terraform marked sensitive (`sensitive_attributes`, top-level paths). */
function sensitiveNames(object: Record<string, unknown>): Set<string> {
  const names = new Set<string>();
  const paths = Array.isArray(object.sensitive_attributes) ? object.sensitive_attributes : [];
  for (const path of paths) {
    const first = Array.isArray(path) ? (path[0] as { value?: unknown } | undefined) : undefined;
    if (typeof first?.value === "string") {
      names.add(first.value);
    }
  }
  return names;
}

export const show = command(
  {
    summary: "show one resource of a workspace's current state by its address",
    options: {},
    positionals: ["WORKSPACE", "ADDRESS"],
    required: 2,
  },
  async (ctx, { values, positionals }) => {
    const api = await ctx.api();
    const [ref = "", address = ""] = positionals;
    const wsId = await workspaceId(api, ref);
    const version = await pickVersion(api, wsId, undefined);
    const res = await api.raw(
      "GET",
      `/api/v1/workspaces/${seg(wsId)}/state-versions/${seg(version.id)}/download`,
      { timeoutMs: 10 * 60_000 },
    );
    const found = stateInstances(JSON.parse(await res.text())).find(
      (i) => i.resource.address === address,
    );
    if (!found) {
      throw new UsageError(
        `no resource ${address} in the state of ${ref} (see outpost state list ${ref})`,
      );
    }
    if (values.json) {
      ctx.out.write(json(found));
      return CLI_EXIT.ok;
    }
    const { resource, object } = found;
    const attributes = (object.attributes ?? object.outputs ?? {}) as Record<string, unknown>;
    const hidden = sensitiveNames(object);
    const width = Math.max(0, ...Object.keys(attributes).map((k) => k.length));
    const lines = Object.entries(attributes).map(
      ([k, v]) =>
        `    ${k.padEnd(width)} = ${hidden.has(k) ? "(sensitive value)" : render(v, "    ")}`,
    );
    const kind = resource.mode === "data" ? "data" : "resource";
    ctx.out.write(
      `# ${resource.address}:\n${kind} ${JSON.stringify(resource.type)} ${JSON.stringify(resource.name)} {\n${lines.join("\n")}${lines.length ? "\n" : ""}}\n`,
    );
    return CLI_EXIT.ok;
  },
);
