import { writeFile } from "node:fs/promises";
import { must, seg } from "../api.ts";
import type { components } from "../api-types.ts";
import { command, group } from "../args.ts";
import { CLI_EXIT, UsageError } from "../errors.ts";
import { cell, json, table } from "../output.ts";
import { listAll, pickVersion, workspaceId } from "./state-lookup.ts";
import { list, show } from "./state-resources.ts";

type StateVersion = components["schemas"]["StateVersion"];
type Outputs = components["schemas"]["StateOutputs"];

const HIDDEN = "(sensitive)";

/** Who wrote a version, by name (a person's email, a token's description), and through which run. */
function writer(v: StateVersion): string {
  const who = v.createdBy?.name ?? "unknown";
  if (v.runId) {
    return `${who} (${v.runId})`;
  }
  return v.restoredFromId ? `${who}, rollback of ${v.restoredFromId}` : cell(who);
}

const versions = command(
  {
    summary: "list a workspace's state versions (serial, writer, size)",
    options: {},
    positionals: ["WORKSPACE"],
    required: 1,
  },
  async (ctx, { values, positionals }) => {
    const api = await ctx.api();
    const versions = await listAll(api, await workspaceId(api, positionals[0] ?? ""));
    if (values.json) {
      ctx.out.write(json(versions));
      return CLI_EXIT.ok;
    }
    ctx.out.write(
      table([
        ["SERIAL", "ID", "LINEAGE", "WRITTEN", "BY", "SIZE", ""],
        ...versions.map((v) => [
          String(v.serial),
          v.id,
          v.lineage.slice(0, 8),
          v.createdAt,
          writer(v),
          `${v.sizeBytes} B`,
          v.isCurrent ? "current" : v.discardedAt ? "deleted" : "",
        ]),
      ]),
    );
    return CLI_EXIT.ok;
  },
);

export function outputLines(outputs: Outputs): string[][] {
  return Object.entries(outputs.outputs)
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([name, o]) => [
      name,
      o.sensitive && !outputs.isRevealed
        ? HIDDEN
        : typeof o.value === "string"
          ? o.value
          : JSON.stringify(o.value),
    ]);
}

const version = command(
  {
    summary: "show a state version (default: the current one) and its outputs",
    options: {},
    positionals: ["WORKSPACE", "VERSION"],
    required: 1,
  },
  async (ctx, { values, positionals }) => {
    const api = await ctx.api();
    const wsId = await workspaceId(api, positionals[0] ?? "");
    const version = await pickVersion(api, wsId, positionals[1]);
    const outputs = await must(
      api.client.GET("/api/v1/workspaces/{workspaceId}/state-versions/{stateVersionId}/outputs", {
        params: { path: { workspaceId: wsId, stateVersionId: version.id } },
      }),
    );
    if (values.json) {
      ctx.out.write(json({ ...version, outputs: outputs.outputs }));
      return CLI_EXIT.ok;
    }
    const facts = [
      ["Serial:", `${version.serial}${version.isCurrent ? " (current)" : ""}`],
      ["ID:", version.id],
      ["Lineage:", version.lineage],
      ["Written:", version.createdAt],
      ["By:", writer(version)],
      ["Size:", `${version.sizeBytes} B`],
      ["Engine:", cell(version.terraformVersion)],
      ["MD5:", version.md5],
    ];
    const lines = outputLines(outputs);
    const shown = lines.length > 0 ? table(lines).replace(/^(?=.)/gm, "  ") : "  (none)\n";
    ctx.out.write(`${table(facts)}\nOutputs:\n${shown}`);
    return CLI_EXIT.ok;
  },
);

const pull = command(
  {
    summary: "print a state version's file (default: the current one), as terraform state pull",
    options: { output: { type: "string", short: "o", description: "write to this file instead" } },
    positionals: ["WORKSPACE", "VERSION"],
    required: 1,
  },
  async (ctx, { values, positionals }) => {
    const api = await ctx.api();
    const wsId = await workspaceId(api, positionals[0] ?? "");
    const version = await pickVersion(api, wsId, positionals[1]);
    const res = await api.raw(
      "GET",
      `/api/v1/workspaces/${seg(wsId)}/state-versions/${seg(version.id)}/download`,
      { timeoutMs: 10 * 60_000 },
    );
    const body = new Uint8Array(await res.arrayBuffer());
    if (values.output) {
      await writeFile(values.output, body, { mode: 0o600 });
      ctx.err.write(
        `Wrote serial ${version.serial} (${body.byteLength} bytes) to ${values.output}\n`,
      );
    } else {
      ctx.out.write(body);
    }
    return CLI_EXIT.ok;
  },
);

const rollback = command(
  {
    summary: "make an older state version current again (admins; needs --yes)",
    options: { yes: { type: "boolean", description: "confirm the rollback" } },
    positionals: ["WORKSPACE", "VERSION"],
    required: 2,
  },
  async (ctx, { values, positionals }) => {
    const api = await ctx.api();
    const wsId = await workspaceId(api, positionals[0] ?? "");
    const version = await pickVersion(api, wsId, positionals[1]);
    if (!values.yes) {
      throw new UsageError(
        `rolling back writes serial ${version.serial} (${version.id}) as the new current state; add --yes to do it`,
      );
    }
    const created = await must(
      api.client.POST("/api/v1/workspaces/{workspaceId}/state-versions/{stateVersionId}/rollback", {
        params: { path: { workspaceId: wsId, stateVersionId: version.id } },
      }),
    );
    ctx.out.write(values.json ? json(created) : "");
    ctx.err.write(
      `Rolled back to serial ${version.serial}: the current state is now serial ${created.serial} (${created.id})\n`,
    );
    return CLI_EXIT.ok;
  },
);

export const state = group(
  "inspect a workspace's state: its resources, its versions; download and roll back",
  {
    list,
    show,
    versions,
    version,
    pull,
    rollback,
  },
);
