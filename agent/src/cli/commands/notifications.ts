/**
 * `outpost notifications list|create|update|delete|verify|rotate-secret|deliveries`: a
 * workspace's notification configurations (docs/notifications.md). The signing secret is printed
 * only by `create` and `rotate-secret`, the two answers that carry it.
 */
import { done, must } from "../api.ts";
import type { components } from "../api-types.ts";
import { command, group } from "../args.ts";
import { CLI_EXIT, UsageError } from "../errors.ts";
import { cell, json, table } from "../output.ts";

type Config = components["schemas"]["NotificationConfiguration"];
type Create = components["schemas"]["CreateNotificationConfiguration"];
type Update = components["schemas"]["UpdateNotificationConfiguration"];
type Trigger = NonNullable<Create["triggers"]>[number];
type DestinationType = NonNullable<Create["destinationType"]>;

const SETTINGS = {
  type: { type: "string", description: "generic (default), slack or microsoft-teams" },
  triggers: {
    type: "string",
    description: "comma-separated, e.g. run:errored,run:needs_attention,assessment:drifted",
  },
} as const;

/** A comma-separated list as the API takes it; the coordinator names a wrong trigger. */
function triggersOf(value: string): Trigger[] {
  return value
    .split(",")
    .map((t) => t.trim())
    .filter((t) => t !== "") as Trigger[];
}

function configTable(configs: Config[]): string {
  return table([
    ["ID", "NAME", "TYPE", "ENABLED", "URL", "TRIGGERS"],
    ...configs.map((c) => [
      c.id,
      cell(c.name),
      c.destinationType,
      c.enabled ? "yes" : "no",
      cell(c.url),
      cell(c.triggers.join(",") || "-"),
    ]),
  ]);
}

const list = command(
  {
    summary: "list a workspace's notification configurations",
    options: {},
    positionals: ["WORKSPACE"],
    required: 1,
  },
  async (ctx, { values, positionals }) => {
    const { notifications } = await must(
      (await ctx.api()).client.GET("/api/v1/workspaces/{workspaceId}/notifications", {
        params: { path: { workspaceId: positionals[0] ?? "" } },
      }),
    );
    ctx.out.write(values.json ? json(notifications) : configTable(notifications));
    return CLI_EXIT.ok;
  },
);

const create = command(
  {
    summary: "create a notification configuration (prints its signing secret once)",
    options: {
      name: { type: "string", description: "a name for it" },
      url: { type: "string", description: "where deliveries go (https)" },
      ...SETTINGS,
      disabled: { type: "boolean", description: "create it disabled" },
    },
    positionals: ["WORKSPACE"],
    required: 1,
  },
  async (ctx, { values, positionals }) => {
    if (!values.name || !values.url) {
      throw new UsageError(
        "--name and --url are required (see outpost notifications create --help)",
      );
    }
    const body: Create = {
      name: values.name,
      url: values.url,
      enabled: !values.disabled,
      ...(values.type ? { destinationType: values.type as DestinationType } : {}),
      ...(values.triggers !== undefined ? { triggers: triggersOf(values.triggers) } : {}),
    };
    const created = await must(
      (await ctx.api()).client.POST("/api/v1/workspaces/{workspaceId}/notifications", {
        params: { path: { workspaceId: positionals[0] ?? "" } },
        body,
      }),
    );
    // The secret alone on stdout, so `SECRET=$(outpost notifications create …)` works.
    ctx.out.write(values.json ? json(created) : `${created.secret}\n`);
    ctx.err.write(
      `Created notification ${created.id}; its signing secret is shown only this once\n`,
    );
    return CLI_EXIT.ok;
  },
);

const update = command(
  {
    summary: "change a notification configuration (name, url, type, triggers, enabled)",
    options: {
      name: { type: "string", description: "a new name" },
      url: { type: "string", description: "a new destination (https)" },
      ...SETTINGS,
      enable: { type: "boolean", description: "send deliveries again" },
      disable: { type: "boolean", description: "stop sending deliveries" },
    },
    positionals: ["NOTIFICATION"],
    required: 1,
  },
  async (ctx, { values, positionals }) => {
    if (values.enable && values.disable) {
      throw new UsageError("--enable and --disable cannot be combined");
    }
    const body: Update = {
      ...(values.name !== undefined ? { name: values.name } : {}),
      ...(values.url !== undefined ? { url: values.url } : {}),
      ...(values.type !== undefined ? { destinationType: values.type as DestinationType } : {}),
      ...(values.triggers !== undefined ? { triggers: triggersOf(values.triggers) } : {}),
      ...(values.enable ? { enabled: true } : {}),
      ...(values.disable ? { enabled: false } : {}),
    };
    if (Object.keys(body).length === 0) {
      throw new UsageError("nothing to change (see outpost notifications update --help)");
    }
    const updated = await must(
      (await ctx.api()).client.PATCH("/api/v1/notifications/{notificationId}", {
        params: { path: { notificationId: positionals[0] ?? "" } },
        body,
      }),
    );
    ctx.out.write(values.json ? json(updated) : configTable([updated]));
    return CLI_EXIT.ok;
  },
);

const remove = command(
  {
    summary: "delete a notification configuration",
    options: {},
    positionals: ["NOTIFICATION"],
    required: 1,
  },
  async (ctx, { positionals }) => {
    await done(
      (await ctx.api()).client.DELETE("/api/v1/notifications/{notificationId}", {
        params: { path: { notificationId: positionals[0] ?? "" } },
      }),
    );
    ctx.err.write(`Deleted notification ${positionals[0]}\n`);
    return CLI_EXIT.ok;
  },
);

const verify = command(
  {
    summary: "send a test delivery now and print how the destination answered",
    options: {},
    positionals: ["NOTIFICATION"],
    required: 1,
  },
  async (ctx, { values, positionals }) => {
    const delivery = await must(
      (await ctx.api()).client.POST("/api/v1/notifications/{notificationId}/verify", {
        params: { path: { notificationId: positionals[0] ?? "" } },
      }),
    );
    ctx.out.write(
      values.json
        ? json(delivery)
        : `${delivery.status} (${delivery.responseStatus ?? "no answer"})${delivery.error ? `: ${delivery.error}` : ""}\n`,
    );
    // A destination that refused the test delivery exits 1, as an errored run does, so a
    // script tells it apart from a refused request (4).
    return delivery.status === "delivered" ? CLI_EXIT.ok : CLI_EXIT.runErrored;
  },
);

const rotate = command(
  {
    summary: "replace the signing secret (prints the new one once)",
    options: {},
    positionals: ["NOTIFICATION"],
    required: 1,
  },
  async (ctx, { values, positionals }) => {
    const rotated = await must(
      (await ctx.api()).client.POST("/api/v1/notifications/{notificationId}/rotate-secret", {
        params: { path: { notificationId: positionals[0] ?? "" } },
      }),
    );
    ctx.out.write(values.json ? json(rotated) : `${rotated.secret}\n`);
    ctx.err.write(`Rotated the secret of ${rotated.id}; the new one is shown only this once\n`);
    return CLI_EXIT.ok;
  },
);

const deliveries = command(
  {
    summary: "list a notification's last deliveries: status, answer, attempts, error",
    options: {},
    positionals: ["NOTIFICATION"],
    required: 1,
  },
  async (ctx, { values, positionals }) => {
    const answer = await must(
      (await ctx.api()).client.GET("/api/v1/notifications/{notificationId}/deliveries", {
        params: { path: { notificationId: positionals[0] ?? "" } },
      }),
    );
    ctx.out.write(
      values.json
        ? json(answer.deliveries)
        : table([
            ["ID", "TRIGGER", "STATUS", "ANSWER", "ATTEMPTS", "CREATED", "ERROR"],
            ...answer.deliveries.map((d) => [
              d.id,
              d.trigger,
              d.status,
              cell(d.responseStatus),
              String(d.attempts),
              cell(d.createdAt),
              cell(d.error),
            ]),
          ]),
    );
    return CLI_EXIT.ok;
  },
);

export const notifications = group("notification configurations of a workspace", {
  list,
  create,
  update,
  delete: remove,
  verify,
  "rotate-secret": rotate,
  deliveries,
});
